"""The engine end to end: stages, exit codes, selection, positions, update mode, bad input."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from dralint.cli import main
from dralint.kube.releases import Release
from dralint.engine import Options, lint_paths, lint_text, review
from dralint.findings import Location, Position
from dralint.paths import FieldPath

CLAIM_V1 = """\
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata:
  name: gpu-claim
  namespace: ml
spec:
  devices:
    requests:
    - name: gpu
      exactly:
        deviceClassName: gpu.example.com
        cout: 2
"""


def rules(findings) -> set[str]:
    return {f.rule for f in findings}


def test_unknown_field_points_at_its_line_and_the_users_path():
    findings = lint_text(CLAIM_V1, Options())
    unknown = [f for f in findings if f.rule == "DRA101"]
    assert len(unknown) == 1
    f = unknown[0]
    assert (f.line, f.column) == (12, 9)
    assert f.field == "spec.devices.requests[0].exactly.cout"
    assert f.object == "ResourceClaim ml/gpu-claim"
    assert "did you mean `count`" in f.message


def test_a_finding_s_location_holds_the_users_path_and_ends_after_its_key():
    f = next(f for f in lint_text(CLAIM_V1, Options()) if f.rule == "DRA101")
    assert f.location == Location("manifest.yaml", Position(12, 9), Position(12, 13),
                                  FieldPath(("spec", "devices", "requests", 0, "exactly", "cout")))
    # a list item that is a scalar: that scalar
    text = CLAIM_V1.replace("cout: 2", "count: 1") + "    - 3\n"
    ends = {f.location.path: (f.location.start, f.location.end) for f in lint_text(text, Options())}
    assert ends[FieldPath(("spec", "devices", "requests", 1))] == (Position(13, 7), Position(13, 8))


def test_not_served_names_the_releases_that_serve_it():
    text = "apiVersion: resource.k8s.io/v1beta2\nkind: DeviceClass\nmetadata: {name: a}\nspec: {}\n"
    (f,) = lint_text(text, Options(release=Release(32)))
    assert f.rule == "DRA801" and "1.33–1.38" in f.message and f.line == 1
    # 1.38 no longer serves v1beta1 (v1beta2 follows in 1.39).
    old = text.replace("v1beta2", "v1beta1")
    (f,) = lint_text(old, Options(release=Release(38)))
    assert f.rule == "DRA801" and "1.32–1.37" in f.message
    assert [f.rule for f in lint_text(old, Options(release=Release(37)))] == ["DRA803"]  # served, deprecated
    assert not lint_text(text, Options(release=Release(33)))


def test_a_deprecated_beta_gets_the_api_servers_warning_and_the_way_out():
    text = "apiVersion: resource.k8s.io/v1beta1\nkind: DeviceClass\nmetadata: {name: a}\nspec: {}\n"
    assert lint_text(text, Options(release=Release(34))) == []
    (f,) = lint_text(text, Options(release=Release(35)))
    assert (f.rule, f.severity.value, f.line, f.field) == ("DRA803", "warning", 1, "apiVersion")
    assert f.message.startswith("resource.k8s.io/v1beta1 DeviceClass is deprecated in v1.35+, unavailable in v1.38+")
    assert "`dralint migrate --to v1`" in f.message
    v1beta2 = text.replace("v1beta1", "v1beta2")
    assert lint_text(v1beta2, Options(release=Release(35))) == []
    assert "deprecated in v1.36+, unavailable in v1.39+" in lint_text(v1beta2, Options(release=Release(36)))[0].message
    alpha = "apiVersion: resource.k8s.io/v1alpha3\nkind: DeviceTaintRule\nmetadata: {name: a}\n" \
            "spec: {deviceSelector: {driver: gpu.example.com}, taint: {key: k, effect: NoSchedule}}\n"
    assert [f.rule for f in lint_text(alpha, Options(release=Release(37)))] == []


def test_a_misspelt_kind_gets_a_did_you_mean():
    text = CLAIM_V1.replace("kind: ResourceClaim", "kind: ResourceClaimTemplte")
    (f,) = [f for f in lint_text(text, Options()) if f.rule == "DRA801"]
    assert "no Kubernetes release serves it: did you mean `kind: ResourceClaimTemplate`?" in f.message
    assert "--kube-version" not in f.message  # no release would serve it
    nothing_close = lint_text(text.replace("ResourceClaimTemplte", "Frobnicator"), Options())
    assert [f.message for f in nothing_close if f.rule == "DRA801"][0].count("did you mean") == 0


def test_non_kubernetes_documents_are_skipped_and_mistaken_objects_reported():
    assert not lint_text("just: a config\n---\nkind: ConfigMap\napiVersion: v1\n", Options())
    # A playbook or a list of settings is no Kubernetes object, and not ours to judge.
    assert not lint_text("- hosts: all\n  tasks: []\n", Options())
    assert not lint_text("just a string\n", Options())
    # A list of objects, or a stray scalar in a file of objects, was meant to be objects.
    assert rules(lint_text("- apiVersion: v1\n  kind: Pod\n", Options())) == {"DRA003"}
    assert rules(lint_text("apiVersion: v1\nkind: Pod\n---\noops\n", Options())) == {"DRA003"}


def test_select_and_ignore_by_id_name_and_prefix():
    assert rules(lint_text(CLAIM_V1, Options(ignore=("unknown-field",)))) == set()
    assert rules(lint_text(CLAIM_V1, Options(select=("DRA1",)))) == {"DRA101"}
    assert rules(lint_text(CLAIM_V1, Options(select=("DRA2",)))) == set()


def test_severity_override():
    (f,) = [f for f in lint_text(CLAIM_V1, Options(severities={"DRA101": "warning"})) if f.rule == "DRA101"]
    assert f.severity.value == "warning"


def test_the_prefix_dra_names_every_rule_and_nothing_else_passes_for_one():
    from dralint.catalog import load_catalog
    from dralint.rule_filter import UsageError, resolve

    catalog = load_catalog()
    assert resolve(catalog, "dra", "--ignore") == frozenset(catalog.rules)
    findings = lint_text(CLAIM_V1, Options(severities={"DRA": "warning"}))
    assert findings and {f.severity.value for f in findings} == {"warning"}
    for token in ("DRAX", "DRA-", "DR"):
        with pytest.raises(UsageError, match="unknown rule"):
            resolve(catalog, token, "--ignore")


def test_lists_are_expanded_with_item_positions():
    text = ("apiVersion: v1\nkind: List\nitems:\n"
            "- apiVersion: resource.k8s.io/v1\n  kind: DeviceClass\n  metadata: {name: a}\n  spec: {}\n"
            "- apiVersion: resource.k8s.io/v1\n  kind: DeviceClass\n  metadata: {name: b}\n  spec: {bogus: 1}\n")
    (f,) = lint_text(text, Options())
    assert f.rule == "DRA101" and f.line == 11 and f.field == "spec.bogus" and f.object == "DeviceClass b"


def test_review_judges_an_admission_object_without_positions():
    obj = {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "x"}, "spec": {"bogus": 1}}
    (f,) = review(obj, None, "CREATE", "", Options())
    assert f.rule == "DRA101" and f.line == 0 and f.field == "spec.bogus"


def write(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def run_cli(*args: str) -> tuple[int, str, str]:
    proc = subprocess.run([sys.executable, "-m", "dralint", *args], capture_output=True, text=True)
    return proc.returncode, proc.stdout, proc.stderr


def test_exit_codes(tmp_path):
    good = write(tmp_path, "good.yaml", "apiVersion: resource.k8s.io/v1\nkind: DeviceClass\nmetadata: {name: a}\nspec: {}\n")
    bad = write(tmp_path, "bad.yaml", CLAIM_V1)
    assert run_cli(good)[0] == 0
    assert run_cli(bad)[0] == 1
    code, _, err = run_cli("--kube-version", "1.99", good)
    assert code == 2 and "1.99" in err
    code, _, err = run_cli("--feature-gates", "DRAAdminAcess=true", good)
    assert code == 2 and "did you mean" in err
    code, out, _ = run_cli("--format", "json", str(tmp_path / "missing.yaml"), good)
    assert code == 2 and json.loads(out)["findings"][0]["rule"] == "DRA004"


def test_json_shape(tmp_path):
    code, out, _ = run_cli("--format", "json", write(tmp_path, "bad.yaml", CLAIM_V1))
    data = json.loads(out)
    assert set(data) == {"findings", "summary"}
    assert set(data["findings"][0]) >= {"rule", "name", "severity", "category", "message", "file", "line", "column",
                                        "object", "field"}
    assert data["summary"]["errors"] == 1 and code == 1


def test_a_folder_is_read_recursively_and_the_run_goes_on_after_bad_files(tmp_path):
    (tmp_path / "sub").mkdir()
    write(tmp_path, "sub/broken.yaml", "a: [1, 2\n")
    write(tmp_path, "sub/binary.yaml", "\x00\x01\x02")
    write(tmp_path, "claim.yml", CLAIM_V1)
    write(tmp_path, "notes.txt", "not yaml at all: [")
    result = lint_paths([str(tmp_path)], Options())
    assert {"DRA001", "DRA004", "DRA101"} <= rules(result.findings)
    assert result.files == 3
    assert result.exit_code == 2


def test_stdin(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "dralint", "--format", "json", "-"], input=CLAIM_V1,
                          capture_output=True, text=True)
    data = json.loads(proc.stdout)
    assert proc.returncode == 1 and data["findings"][0]["file"] == "<stdin>"


def test_list_rules_and_version(capsys):
    assert main(["--list-rules"]) == 0
    out = capsys.readouterr().out
    assert "DRA101" in out and "unknown-field" in out
    with pytest.raises(SystemExit) as exc:
        main(["--version"])
    assert exc.value.code == 0


def test_show_allocation_and_trace_on_the_examples():
    repo = Path(__file__).resolve().parents[2] / "examples"
    code, out, _ = run_cli("--cluster", str(repo / "driver"), str(repo / "gpu-inference"), "--show-allocation",
                           "--trace", "ml-serving/two-gpus-same-root")
    assert code == 0
    # Both GPUs on the same PCIe root, as the claim's matchAttribute constraint demands.
    assert ("allocation: ml-serving/two-gpus-same-root on worker-1: gpus → gpu.example.com/worker-1/gpu-0, "
            "gpu.example.com/worker-1/gpu-1") in out
    assert "trace of ml-serving/two-gpus-same-root:" in out and "result: allocated on worker-1" in out


def test_a_run_names_where_its_objects_come_from_as_the_options_say():
    claim = """apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: c, namespace: ml}
spec: {devices: {requests: [{name: gpu, exactly: {deviceClassName: gpu.exmaple.com}}]}}
"""
    cluster = """apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: gpu.example.com}
"""

    def dra600(options: Options) -> str:
        (message,) = [f.message for f in lint_text(claim, options, cluster_text=cluster) if f.rule == "DRA600"]
        return message

    assert "DeviceClass(es) of this run" in dra600(Options())
    assert "DeviceClass(es) of the cluster" in dra600(Options(context="the cluster"))
