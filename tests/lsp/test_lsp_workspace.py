"""The editor's project (dralint.lsp.workspace): the same findings as ``dralint <workspace>``."""
from __future__ import annotations

import io
import itertools
import json
import os
import shutil
from pathlib import Path

import pytest

from dralint import cli
from dralint.catalog import load_catalog
from dralint.lsp.workspace import FEASIBILITY_SECONDS, Workspace

from conftest import REPO
from lsp_support import claim


def cli_findings(root: Path, *args: str) -> list[dict]:
    out = io.StringIO()
    cwd = os.getcwd()
    try:
        os.chdir(root)
        cli.main(["--format", "json", *args, str(root)], stdout=out, stderr=io.StringIO())
    finally:
        os.chdir(cwd)
    return json.loads(out.getvalue())["findings"]


def without_fix(finding: dict) -> dict:
    return {k: v for k, v in finding.items() if k != "fix"}


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """The repository's examples, a cluster state beside them, and a configuration naming it."""
    root = tmp_path / "repo"
    shutil.copytree(REPO / "examples", root / "manifests", ignore=shutil.ignore_patterns("*.md"))
    (root / ".git").mkdir()
    (root / "state").mkdir()
    shutil.move(root / "manifests" / "driver" / "resourceslice.yaml", root / "state" / "slices.yaml")
    (root / "manifests" / "claim.yaml").write_text(claim(count=9, name="needs-nine"))
    (root / ".dralint.yaml").write_text("cluster: [state/]\nseverity:\n  DRA600: error\n")
    return root


def test_each_document_gets_what_the_command_line_reports_for_it(project: Path) -> None:
    expected = cli_findings(project / "manifests")
    assert {f["rule"] for f in expected} >= {"DRA701", "DRA501", "DRA201"}  # feasibility with the state
    workspace = Workspace([project], load_catalog())
    files = sorted({f["file"] for f in expected})
    for file in files:  # one at a time, as an editor asks; the others are context
        linted = workspace.lint([file], {})
        # The editor's findings carry their fixes (for code actions); the command line's do not.
        assert [without_fix(f.to_dict()) for f in linted[os.path.normpath(file)].findings] == [
            f for f in expected if f["file"] == file], file


TEMPLATE = """\
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata:
  name: gpu-template
  namespace: default
spec:
  spec:
    devices:
      requests:
      - name: {request}
        exactly:
          deviceClassName: gpu.example.com
"""
POD = """\
apiVersion: v1
kind: Pod
metadata:
  name: {name}
  namespace: default
spec:
  resourceClaims:
  - name: gpu
    resourceClaimTemplateName: gpu-template
  containers:
  - name: main
    image: registry.example.com/trainer:1.0
    resources:
      claims:
      - name: gpu
        request: gpu
"""


def test_references_resolve_as_on_the_command_line_whatever_is_judged_together(tmp_path: Path) -> None:
    # Two templates of one name, in the first pod's file (a) and in another folder (b); the pod in
    # c has none beside it, and the command line resolves it to the first of the run (a's). Judged
    # together or alone, each document gets the command line's findings: b's template, which has
    # no request `gpu`, never answers a pod (DRA604), and is the one defined twice (DRA605) even
    # when a's is not judged with it.
    (tmp_path / ".git").mkdir()
    shutil.copy(REPO / "examples" / "driver" / "deviceclass.yaml", tmp_path / "class.yaml")
    files = {"a/pods.yaml": TEMPLATE.format(request="gpu") + "---\n" + POD.format(name="trainer"),
             "b/template.yaml": TEMPLATE.format(request="nic"),
             "c/pod.yaml": POD.format(name="server")}
    for name, text in files.items():
        (tmp_path / name).parent.mkdir()
        (tmp_path / name).write_text(text)
    expected = cli_findings(tmp_path)
    assert {f["rule"] for f in expected} == {"DRA605"}  # b's template is defined twice
    paths = [str(tmp_path / name) for name in files]
    texts = {path: Path(path).read_text() for path in paths}  # every document open in the editor
    workspace = Workspace([tmp_path], load_catalog())
    for judged in itertools.chain.from_iterable(itertools.combinations(paths, n) for n in (1, 2, 3)):
        linted = workspace.lint(judged, texts)
        for path in judged:
            assert [without_fix(f.to_dict()) for f in linted[path].findings] == [
                f for f in expected if f["file"] == path], (judged, path)


def test_a_large_documents_layer_stands_for_its_file(tmp_path: Path) -> None:
    # The server judges a large document on a thread of its own and gives the others its objects
    # as a layer: they get what the command line reports once the editor's text is saved (here
    # the pods' template has their request `gpu` in that text only, and c's pod is defined there
    # first).
    (tmp_path / ".git").mkdir()
    shutil.copy(REPO / "examples" / "driver" / "deviceclass.yaml", tmp_path / "class.yaml")
    files = {"a/pod.yaml": POD.format(name="trainer"), "b/template.yaml": TEMPLATE.format(request="nic"),
             "c/pod.yaml": POD.format(name="server")}
    for name, text in files.items():
        (tmp_path / name).parent.mkdir()
        (tmp_path / name).write_text(text)
    a, b, c = (str(tmp_path / name) for name in files)
    large = TEMPLATE.format(request="gpu") + "---\n" + POD.format(name="server")
    texts = {a: files["a/pod.yaml"], c: files["c/pod.yaml"]}
    workspace = Workspace([tmp_path], load_catalog())
    assert [f.rule for f in workspace.lint([a], texts)[a].findings] == ["DRA604"]  # b's template as on disk
    itself, layer = workspace.lint_large(b, large, texts)
    runs = [workspace.lint([a], texts, layers=[layer]), workspace.lint([c], texts, layers=[layer]),
            workspace.lint([a, c], texts, layers=[layer]), {b: itself}]
    (tmp_path / "b" / "template.yaml").write_text(large)
    expected = cli_findings(tmp_path)
    assert [(f["rule"], f["file"]) for f in expected] == [("DRA605", c)]
    for linted in runs:
        for path, judged in linted.items():
            assert [without_fix(f.to_dict()) for f in judged.findings] == [
                f for f in expected if f["file"] == path], path


def test_the_editor_text_replaces_the_file(project: Path) -> None:
    workspace = Workspace([project], load_catalog())
    path = str(project / "manifests" / "claim.yaml")
    assert [f.rule for f in workspace.lint([path], {})[path].findings] == ["DRA701"]
    assert workspace.lint([path], {path: claim(count=1, name="needs-nine")})[path].findings == []
    # A document being edited is context for the others too: the class it now declares exists.
    other = str(project / "manifests" / "gpu-inference" / "training-claim.yaml")
    before = [f.rule for f in workspace.lint([other], {})[other].findings]
    os.remove(project / "manifests" / "driver" / "deviceclass.yaml")
    workspace.files_changed()
    # With the cluster state configured, a class that exists nowhere is the allocation error, as on the command line.
    assert [f.rule for f in workspace.lint([other], {})[other].findings] == [
        f["rule"] for f in cli_findings(project / "manifests") if f["file"] == other] == ["DRA703"]
    class_text = (REPO / "examples" / "driver" / "deviceclass.yaml").read_text()
    assert [f.rule for f in workspace.lint([other], {path: class_text})[other].findings] == before


def test_files_changed_on_disk_are_read_again(project: Path) -> None:
    workspace = Workspace([project], load_catalog())
    path = project / "manifests" / "claim.yaml"
    assert [f.rule for f in workspace.lint([str(path)], {})[str(path)].findings] == ["DRA701"]
    path.write_text(claim(count=-1, name="needs-nine") + "\n")
    assert [f.rule for f in workspace.lint([str(path)], {})[str(path)].findings] == ["DRA201"]


def test_the_configuration_is_read_again_when_it_changes(project: Path) -> None:
    workspace = Workspace([project], load_catalog())
    path = str(project / "manifests" / "mistakes" / "bad-cel.yaml")
    assert {f.rule for f in workspace.lint([path], {})[path].findings} == {"DRA501"}
    config = project / ".dralint.yaml"
    config.write_text(config.read_text() + "ignore: [DRA5]\n")
    assert workspace.lint([path], {})[path].findings == []
    config.write_text("kube-verison: '1.34'\n")
    assert workspace.lint([path], {})[path].findings == []  # the settings in force stay
    assert workspace.settings.error == f"{config}:1: unknown key 'kube-verison'; did you mean kube-version?"
    config.unlink()
    assert {f.rule for f in workspace.lint([path], {})[path].findings} == {"DRA501"}
    assert workspace.settings.error is None


def test_the_editors_feasibility_search_is_bounded_in_time(project: Path) -> None:
    # The command line bounds the search by steps only (a verdict must not depend on the machine's
    # load); the editor must answer while the user types, so it keeps a wall-clock bound as well.
    workspace = Workspace([project], load_catalog())
    workspace.lint([str(project / "manifests" / "mistakes" / "bad-cel.yaml")], {})
    assert workspace.settings.options.max_seconds == FEASIBILITY_SECONDS
    assert cli.build_parser().parse_args([]).max_seconds is None


def test_per_path_ignores_apply(project: Path) -> None:
    (project / ".dralint.yaml").write_text("per-path-ignores:\n  manifests/mistakes/: all\n")
    workspace = Workspace([project], load_catalog())
    path = str(project / "manifests" / "mistakes" / "bad-cel.yaml")
    assert workspace.lint([path], {})[path].findings == []


def test_cluster_paths_are_relative_to_the_configuration(project: Path) -> None:
    # Run from a subfolder, the command line reads the state the root's configuration names: the
    # allocator then misses the class (it is in manifests/driver, not linted here), which only
    # a run with cluster state says (DRA703).
    below = cli_findings(project / "manifests" / "gpu-inference")
    assert "DRA703" in {f["rule"] for f in below}
    (project / ".dralint.yaml").write_text("cluster: nowhere/\n")
    workspace = Workspace([project], load_catalog())
    assert workspace.settings.notes == [f"cluster: {project / 'nowhere'}: no such file or directory"]


def test_tool_dralint_in_pyproject_is_honoured_and_read_again(project: Path) -> None:
    (project / ".dralint.yaml").unlink()
    (project / "pyproject.toml").write_text('[project]\nname = "x"\n\n[tool.dralint]\nignore = ["DRA501"]\n')
    workspace = Workspace([project], load_catalog())
    path = str(project / "manifests" / "mistakes" / "bad-cel.yaml")
    assert workspace.lint([path], {})[path].findings == []
    (project / "pyproject.toml").write_text('[project]\nname = "x"\n\n[tool.dralint]\nseverity = {DRA501 = "info"}\n')
    assert {f.severity.value for f in workspace.lint([path], {})[path].findings} == {"info"}
