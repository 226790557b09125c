"""What counts as the run's cluster state: refused objects left out, duplicates found and resolved nearby."""
from __future__ import annotations

import io
import json
from pathlib import Path

from dralint.cli import main
from dralint.engine import Options, lint_paths

from conftest import REPO
from lsp_support import CLASS

EXAMPLES = REPO / "examples"

TEMPLATE = """apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata:
  name: gpus
  namespace: demo
spec:
  spec:
    devices:
      requests:
      - name: {request}
        exactly:
          deviceClassName: gpu.example.com
"""
POD = """apiVersion: v1
kind: Pod
metadata:
  name: {name}
  namespace: demo
spec:
  resourceClaims:
  - name: gpu
    resourceClaimTemplateName: gpus
  containers:
  - name: main
    image: registry.example.com/app:1.0
    resources:
      claims:
      - name: gpu
        request: {request}
"""
SLICE = """apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata:
  name: node-1-gpus{extra_meta}
spec:
  driver: gpu.example.com
  pool: {{name: node-1, generation: 1, resourceSliceCount: 1}}
  nodeName: node-1
  {selection}
  devices:
  - name: gpu-0
    attributes:
      model: {{string: a100}}
"""
CLAIM = """apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata:
  name: one-gpu
  namespace: demo
spec:
  devices:
    requests:
    - name: gpu
      exactly:
        deviceClassName: gpu.example.com
        selectors:
        - cel:
            expression: device.attributes["gpu.example.com"].model == "h100"
"""


def write(folder: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)


def rules_by_file(paths: list[str], **options) -> dict[str, set[str]]:
    result = lint_paths(paths, Options(**options))
    found: dict[str, set[str]] = {}
    for f in result.findings:
        found.setdefault(f.file, set()).add(f.rule)
    return found


# Item 2: objects the API server would refuse are not cluster state ----------------------------

def test_examples_report_exactly_the_files_under_mistakes() -> None:
    out = io.StringIO()
    code = main(["--no-config", "--format", "json", str(EXAMPLES)], stdout=out, stderr=io.StringIO())
    reported = {Path(f["file"]) for f in json.loads(out.getvalue())["findings"]}
    assert code == 1
    assert reported == set((EXAMPLES / "mistakes").glob("*.yaml"))


def test_a_refused_slice_does_not_fail_a_good_claim_in_another_file(tmp_path: Path) -> None:
    # nodeName and allNodes together: DRA403, the API server refuses the slice. Judged against it,
    # the claim (which asks for a model no other slice has) would be unallocatable.
    write(tmp_path, {"slice.yaml": SLICE.format(extra_meta="", selection="allNodes: true"),
                     "class.yaml": CLASS, "claim.yaml": CLAIM})
    found = rules_by_file([str(tmp_path)])
    assert found == {str(tmp_path / "slice.yaml"): {"DRA403"}}


def test_a_refused_class_is_named_when_a_claim_needs_it(tmp_path: Path) -> None:
    broken = CLASS.replace('device.driver == "gpu.example.com"', 'device.drvier == "gpu.example.com"')
    write(tmp_path, {"class.yaml": broken, "claim.yaml": CLAIM})
    result = lint_paths([str(tmp_path)], Options())
    (missing,) = [f for f in result.findings if f.rule == "DRA600"]
    assert f"the one in {tmp_path / 'class.yaml'} would be refused by the API server" in missing.message


def test_a_claim_refused_for_its_name_alone_is_still_judged(tmp_path: Path) -> None:
    # Capitals in the name: the server refuses the claim, but once renamed it still cannot be
    # allocated (no h100 anywhere), and the user wants both told.
    write(tmp_path, {"slice.yaml": SLICE.format(extra_meta="", selection=""), "class.yaml": CLASS,
                     "claim.yaml": CLAIM.replace("name: one-gpu", "name: One-GPU")})
    assert rules_by_file([str(tmp_path)]) == {str(tmp_path / "claim.yaml"): {"DRA121", "DRA701"}}


def test_a_claim_refused_for_its_spec_is_not_judged(tmp_path: Path) -> None:
    write(tmp_path, {"slice.yaml": SLICE.format(extra_meta="", selection=""), "class.yaml": CLASS,
                     "claim.yaml": CLAIM.replace("name: gpu\n", "name: GPU\n")})
    found = rules_by_file([str(tmp_path)])
    assert "DRA701" not in found[str(tmp_path / "claim.yaml")] and found[str(tmp_path / "claim.yaml")]


def test_cluster_state_is_taken_as_given(tmp_path: Path) -> None:
    # --cluster says what the cluster holds (stored objects may predate today's validation): a slice
    # there that today's API server would refuse still publishes its devices.
    write(tmp_path, {"claim.yaml": CLAIM, "class.yaml": CLASS,
                     "cluster/slice.yaml": SLICE.format(extra_meta="", selection="allNodes: true")})
    found = rules_by_file([str(tmp_path / "claim.yaml"), str(tmp_path / "class.yaml")],
                          cluster=(str(tmp_path / "cluster"),))
    assert found == {str(tmp_path / "claim.yaml"): {"DRA701"}}  # the slice's a100 is no h100


# Item 1: one kind/namespace/name twice ---------------------------------------------------------

def test_each_file_resolves_to_its_own_duplicate_and_the_duplicate_is_reported(tmp_path: Path) -> None:
    write(tmp_path, {"one/app.yaml": TEMPLATE.format(request="gpu") + "---\n" + POD.format(name="a", request="gpu"),
                     "two/app.yaml": TEMPLATE.format(request="gpus") + "---\n" + POD.format(name="b", request="gpus")})
    result = lint_paths([str(tmp_path)], Options())
    assert [(f.rule, f.file, f.line) for f in result.findings] == [("DRA605", str(tmp_path / "two/app.yaml"), 4)]
    (twice,) = result.findings
    assert f"also in {tmp_path / 'one/app.yaml'} (line 4)" in twice.message
    assert twice.severity.value == "warning" and twice.object == "ResourceClaimTemplate demo/gpus"


def test_a_duplicate_in_one_file_is_reported_there(tmp_path: Path) -> None:
    write(tmp_path, {"app.yaml": TEMPLATE.format(request="gpu") + "---\n" + TEMPLATE.format(request="x")})
    result = lint_paths([str(tmp_path)], Options())
    assert [(f.rule, f.line) for f in result.findings] == [("DRA605", 17)]
    assert "also earlier in this file (line 4)" in result.findings[0].message


def test_references_prefer_the_same_folder_and_name_the_file_they_resolved_to(tmp_path: Path) -> None:
    write(tmp_path, {"a/template.yaml": TEMPLATE.format(request="gpu"),
                     "b/pod.yaml": POD.format(name="p", request="gpus"),
                     "b/template.yaml": TEMPLATE.format(request="gpus"),
                     "c/pod.yaml": POD.format(name="q", request="gpus")})
    result = lint_paths([str(tmp_path)], Options())
    by_rule = {(f.rule, Path(f.file).relative_to(tmp_path).as_posix()): f for f in result.findings}
    # b/pod.yaml resolves to b/template.yaml (same folder): its request exists there.
    assert set(by_rule) == {("DRA605", "b/template.yaml"), ("DRA604", "c/pod.yaml")}
    # c/pod.yaml has no template beside it: the first of the run, named in the message.
    assert f"(the one in {tmp_path / 'a/template.yaml'})" in by_rule["DRA604", "c/pod.yaml"].message


def test_a_folder_named_twice_is_read_once(tmp_path: Path) -> None:
    write(tmp_path, {"app.yaml": TEMPLATE.format(request="gpu")})
    spellings = [str(tmp_path), str(tmp_path) + "/", str(tmp_path / "app.yaml"), str(tmp_path / ".." / tmp_path.name)]
    result = lint_paths(spellings, Options())
    assert result.files == 1 and result.findings == []
