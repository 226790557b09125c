"""Real repository shapes: Helm charts, kustomize, excludes, symbolic links, size limits, non-Kubernetes YAML."""
from __future__ import annotations

import io
import json
import os
import sys
from pathlib import Path

import pytest

from dralint.cli import main
from dralint.source import Exclude, Reading, discover, load_file, load_text, plan
from dralint.source.jsonc import blank_comments

from conftest import BAD_CLAIM, REPO

GOOD_CLASS = (REPO / "examples" / "driver" / "deviceclass.yaml").read_text()
CHART_TEMPLATE = """{{- if .Values.gpu }}
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata:
  name: {{ .Release.Name }}-gpu
spec:
  spec:
    devices:
      requests:
      - name: gpu
        exactly:
          deviceClassName: {{ .Values.className | quote }}
{{- end }}
"""
# Parses as YAML, but the name is no name until Helm renders it.
QUOTED_TEMPLATE = GOOD_CLASS.replace("name: gpu.example.com", 'name: "{{ .Release.Name }}.example.com"', 1)


def run(*args: str, cwd: Path | None = None) -> tuple[int, dict, str]:
    out, err = io.StringIO(), io.StringIO()
    old = os.getcwd()
    try:
        if cwd is not None:
            os.chdir(cwd)
        code = main(["--no-config", "--format", "json", *args], stdout=out, stderr=err)
    finally:
        os.chdir(old)
    return code, json.loads(out.getvalue()) if out.getvalue() else {}, err.getvalue()


def write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)


# Item 5: Helm charts ---------------------------------------------------------------------------

def test_helm_templates_are_skipped_with_one_note_per_run(tmp_path: Path) -> None:
    write(tmp_path, {"chart/Chart.yaml": "apiVersion: v2\nname: gpu\nversion: 0.1.0\n",
                     "chart/templates/claim.yaml": CHART_TEMPLATE,
                     "chart/templates/class.yaml": QUOTED_TEMPLATE,
                     "chart/templates/sub/other.yaml": CHART_TEMPLATE,
                     "elsewhere/broken-template.yaml": CHART_TEMPLATE,
                     "elsewhere/class.yaml": GOOD_CLASS})
    code, report, err = run(str(tmp_path))
    assert code == 0 and report["findings"] == []
    assert report["summary"]["skipped"] == {"helm-template": 4}
    notes = [line for line in err.splitlines() if line.startswith("dralint: note:")]
    assert len(notes) == 1 and "helm template RELEASE CHART | dralint -" in notes[0]


def test_template_text_outside_a_chart_that_yaml_reads_is_linted(tmp_path: Path) -> None:
    # An annotation may hold {{ }} for another tool: the file is YAML, and dralint's to judge.
    write(tmp_path, {"class.yaml": GOOD_CLASS.replace("metadata:\n", "metadata:\n  annotations: {note: '{{ x }}'}\n", 1)})
    loaded = load_file(str(tmp_path / "class.yaml"))
    assert not loaded.skipped and len(loaded.documents) == 1


# Item 6: kustomize ------------------------------------------------------------------------------

def test_kustomize_patches_and_kustomizations_are_not_linted_as_objects(tmp_path: Path) -> None:
    patch = "apiVersion: resource.k8s.io/v1\nkind: DeviceClass\nmetadata:\n  name: gpu.example.com\n"
    json_patch = "- op: replace\n  path: /spec/selectors/0/cel/expression\n  value: 'true'\n"
    write(tmp_path, {"base/kustomization.yaml": "resources:\n- class.yaml\n",
                     "base/class.yaml": GOOD_CLASS,
                     "overlay/kustomization.yaml": "resources:\n- ../base\npatches:\n- path: patch.yaml\n"
                                                   "patchesJson6902:\n- target: {kind: DeviceClass}\n  path: ops.yaml\n"
                                                   "patchesStrategicMerge:\n- ../shared/old-style.yaml\n",
                     "overlay/patch.yaml": patch, "overlay/ops.yaml": json_patch,
                     "shared/old-style.yaml": patch})
    code, report, err = run(str(tmp_path))
    assert code == 0 and report["findings"] == [], report["findings"]
    assert report["summary"]["skipped"] == {"kustomization": 2, "kustomize-patch": 3}
    assert report["summary"]["objects"] == 1 and "kustomize build DIR | dralint -" in err
    # Named alone (as pre-commit does), a patch is still known by the kustomization beside it.
    assert plan([str(tmp_path / "overlay" / "patch.yaml")]).skip == {str(tmp_path / "overlay" / "patch.yaml"):
                                                                     "kustomize-patch"}


# Item 7: excludes, default excludes, symbolic links --------------------------------------------

def test_excludes_from_the_command_line_and_the_configuration(tmp_path: Path) -> None:
    write(tmp_path, {"mine/claim.yaml": BAD_CLAIM, "generated/claim.yaml": BAD_CLAIM, "mine/x.gen.yaml": BAD_CLAIM,
                     "node_modules/pkg/claim.yaml": BAD_CLAIM, "vendor/claim.yaml": BAD_CLAIM,
                     "third_party/claim.yaml": BAD_CLAIM})
    _, report, _ = run("--exclude", "generated/", "--exclude", "*.gen.yaml", ".", cwd=tmp_path)
    assert {f["file"] for f in report["findings"]} == {"./mine/claim.yaml"}
    (tmp_path / ".git").mkdir()
    (tmp_path / ".dralint.yaml").write_text("exclude: [generated/, '*.gen.yaml']\n")
    out = io.StringIO()
    cwd = os.getcwd()
    os.chdir(tmp_path / "mine")
    try:
        main(["--format", "json", ".."], stdout=out, stderr=io.StringIO())
    finally:
        os.chdir(cwd)
    assert {f["file"] for f in json.loads(out.getvalue())["findings"]} == {"../mine/claim.yaml"}
    # Default excludes only apply to walking: a vendored file named explicitly is read.
    assert run(str(tmp_path / "vendor" / "claim.yaml"))[0] == 1


@pytest.mark.skipif(not hasattr(os, "symlink"), reason="needs symbolic links")
def test_symbolic_links_to_folders_are_followed_once(tmp_path: Path) -> None:
    write(tmp_path, {"real/claim.yaml": BAD_CLAIM, "outside/class.yaml": GOOD_CLASS})
    os.symlink(tmp_path / "outside", tmp_path / "real" / "linked")
    os.symlink(tmp_path / "real", tmp_path / "real" / "loop")  # back up the tree
    files, problems = discover([str(tmp_path / "real")])
    assert files == [str(tmp_path / "real" / "claim.yaml"), str(tmp_path / "real" / "linked" / "class.yaml")]
    assert problems == []


def test_a_path_named_twice_is_read_once(tmp_path: Path) -> None:
    write(tmp_path, {"a/claim.yaml": BAD_CLAIM})
    files, _ = discover([str(tmp_path / "a"), str(tmp_path / "a") + "/", str(tmp_path / "a" / "claim.yaml"),
                         str(tmp_path / "a" / ".." / "a")])
    assert files == [str(tmp_path / "a" / "claim.yaml")]
    assert Exclude("a/", str(tmp_path)).matches(str(tmp_path / "a" / "claim.yaml"))


# Item 8: size limits ----------------------------------------------------------------------------

def test_a_file_over_the_limit_is_unreadable_input_and_says_how_to_raise_it(tmp_path: Path) -> None:
    (tmp_path / "big.yaml").write_text(GOOD_CLASS + "#" * 2000 + "\n")
    code, report, _ = run("--max-file-size", "1KiB", str(tmp_path / "big.yaml"))
    (finding,) = report["findings"]
    assert code == 2 and finding["rule"] == "DRA005" and (finding["line"], finding["column"]) == (1, 1)
    assert "larger than the limit of 1 KiB" in finding["message"] and "--max-file-size" in finding["message"]
    assert run("--max-file-size", "4096", str(tmp_path / "big.yaml"))[0] == 0
    assert run("--max-file-size", "lots", str(tmp_path / "big.yaml"))[0] == 2
    (tmp_path / ".git").mkdir()
    (tmp_path / ".dralint.yaml").write_text("max-file-size: 1KiB\n")
    out = io.StringIO()
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        assert main(["big.yaml"], stdout=out, stderr=io.StringIO()) == 2
    finally:
        os.chdir(cwd)


def test_stdin_over_the_limit_is_unreadable_input(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(GOOD_CLASS.encode() + b"#" * 2000)))
    code, report, _ = run("--max-file-size", "1KiB", "-")
    assert code == 2 and report["findings"][0]["file"] == "<stdin>"
    assert load_text("a: 1\n" * 300, "x.yaml", max_bytes=1024).problems[0].kind == "too-large"


def test_a_raised_limit_reads_the_file(tmp_path: Path) -> None:
    (tmp_path / "big.yaml").write_text(GOOD_CLASS + "#" * 2000 + "\n")
    assert load_file(str(tmp_path / "big.yaml"), Reading(max_bytes=4096).max_bytes).documents


# Item 13: YAML that is not Kubernetes, JSON with comments ---------------------------------------

def test_non_kubernetes_yaml_is_counted_not_reported(tmp_path: Path) -> None:
    write(tmp_path, {"playbook.yml": "- hosts: all\n  tasks:\n  - debug: {msg: hi}\n",
                     "version.yaml": "1.2.3\n", "settings.yaml": "theme: dark\n",
                     "tsconfig.json": '{\n  // strict mode\n  "compilerOptions": {"strict": true, /* on */},\n}\n',
                     "class.yaml": GOOD_CLASS})
    code, report, _ = run(str(tmp_path))
    assert code == 0 and report["findings"] == []
    assert report["summary"]["not_objects"] == 4 and report["summary"]["objects"] == 1


def test_a_file_that_does_not_parse_is_still_an_error(tmp_path: Path) -> None:
    write(tmp_path, {"broken.yaml": "apiVersion: v1\nkind: [\n", "broken.json": '{"a": 1 // no comma\n "b": 2}\n'})
    code, report, _ = run(str(tmp_path))
    assert code == 1 and {f["rule"] for f in report["findings"]} == {"DRA001"}
    assert len(report["findings"]) == 2


def test_json_comments_are_blanked_in_place() -> None:
    text = '{\n  "a": "keep // this", // drop\n  /* and\n this */ "b": [1, 2,],\n}\n'
    blanked = blank_comments(text)
    assert blanked is not None and len(blanked) == len(text) and blanked.count("\n") == text.count("\n")
    assert json.loads(blanked) == {"a": "keep // this", "b": [1, 2]}
    assert blank_comments('{"a": 1}') is None
    loaded = load_file_text(text)
    assert loaded.documents[0].value == {"a": "keep // this", "b": [1, 2]}


def load_file_text(text: str):
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "settings.json"
        path.write_text(text)
        return load_file(str(path))


# Robustness: what no file should make raise ----------------------------------------------------

from hypothesis import HealthCheck, example, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from dralint.source import kustomize  # noqa: E402

JSONISH = st.text(alphabet=list('{}[],:"/*\\ \n\ta1#-{{}}'), max_size=60)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=JSONISH)
def test_json_with_comments_and_templates_never_raise(tmp_path_factory: pytest.TempPathFactory, text: str) -> None:
    blanked = blank_comments(text)
    assert blanked is None or (len(blanked) == len(text) and blanked.count("\n") == text.count("\n"))
    folder = tmp_path_factory.mktemp("j")
    for name in ("x.json", "templates/y.yaml"):
        (folder / name).parent.mkdir(exist_ok=True)
        (folder / name).write_text(text)
        loaded = load_file(str(folder / name))
        assert loaded.skipped or loaded.documents is not None


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(value=st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=8),
                          lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
                              st.sampled_from(["patches", "path", "patchesStrategicMerge", "patchesJson6902",
                                               "helmCharts", "valuesFile", "openapi", "replacements", "x"]),
                              inner, max_size=4), max_leaves=12))
@example(value={"patchesStrategicMerge": ["\x00"], "patches": [{"path": "a\x00b"}]})   # os.path refuses NUL
def test_any_kustomization_is_read_without_raising(tmp_path_factory: pytest.TempPathFactory, value) -> None:
    import yaml

    folder = tmp_path_factory.mktemp("k")
    (folder / "kustomization.yaml").write_text(yaml.safe_dump(value))
    (folder / "patch.yaml").write_text("a: 1\n")
    found = kustomize.non_manifests([str(folder / "kustomization.yaml"), str(folder / "patch.yaml")])
    assert found.get(str(folder / "kustomization.yaml")) == "kustomization"
