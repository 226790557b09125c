"""Messages that teach: a request in the other version's shape, YAML 1.1 values where text is wanted."""
from __future__ import annotations

from dralint.engine import Options, lint_text
from dralint.kube.releases import Release

V1_FLAT = """apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata:
  name: one-gpu
  namespace: ml
spec:
  devices:
    requests:
    - name: gpu
      deviceClassName: gpu.example.com
      count: 1
"""
V1BETA1_NESTED = """apiVersion: resource.k8s.io/v1beta1
kind: ResourceClaimTemplate
metadata:
  name: one-gpu
  namespace: ml
spec:
  spec:
    devices:
      requests:
      - name: gpu
        exactly:
          deviceClassName: gpu.example.com
          count: 2
"""


def test_a_v1beta1_shaped_request_in_v1_is_one_finding_with_the_fix():
    (finding,) = lint_text(V1_FLAT, Options())
    assert (finding.rule, finding.line, finding.field) == ("DRA101", 10, "spec.devices.requests[0].deviceClassName")
    assert "in resource.k8s.io/v1 these fields go under `exactly:`" in finding.message
    assert "write `exactly: {deviceClassName: gpu.example.com, count: 1}`" in finding.message


def test_the_one_finding_carries_the_fix_in_both_directions():
    (flat,) = lint_text(V1_FLAT, Options(fixes=True))
    (nested,) = lint_text(V1BETA1_NESTED, Options(release=Release(33), fixes=True))
    assert flat.fix is not None and nested.fix is not None


def test_without_strict_decoding_the_missing_exactly_error_carries_the_hint():
    (finding,) = lint_text(V1_FLAT, Options(strict=False))
    assert finding.rule == "DRA206" and "these fields go under `exactly:`" in finding.message


def test_ignoring_unknown_fields_keeps_the_missing_exactly_error():
    assert [f.rule for f in lint_text(V1_FLAT, Options(ignore=("DRA101",)))] == ["DRA206"]


def test_a_v1_shaped_request_in_v1beta1_says_the_reverse():
    (finding,) = lint_text(V1BETA1_NESTED, Options(release=Release(33)))
    assert finding.rule == "DRA101" and finding.field == "spec.spec.devices.requests[0].exactly"
    assert "in resource.k8s.io/v1beta1 the fields of `exactly` go directly under the request" in finding.message
    assert "`deviceClassName: gpu.example.com`, `count: 2`" in finding.message


def test_an_unknown_field_beside_exactly_stays_a_plain_unknown_field():
    text = V1_FLAT.replace("      count: 1\n", "      exactly: {deviceClassName: gpu.example.com}\n")
    (finding,) = lint_text(text, Options())
    assert finding.message == "unknown field `deviceClassName`"


SLICE = """apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata:
  name: node-1-gpus
  labels:
    enabled: {enabled}
spec:
  driver: gpu.example.com
  nodeName: node-1
  pool: {{name: node-1, generation: 1, resourceSliceCount: 1}}
  devices:
  - name: gpu-0
    attributes:
      driverVersion: {{string: {version}}}
"""


def test_yaml_1_1_values_where_text_is_wanted_say_what_they_became():
    findings = lint_text(SLICE.format(enabled="on", version="12.10"), Options())
    assert [(f.rule, f.line) for f in findings] == [("DRA102", 6), ("DRA102", 14)]
    assert findings[0].message.endswith(
        'YAML 1.1 (which Kubernetes reads) makes unquoted `on` the boolean true: quote it ("on") to keep the text')
    assert findings[1].message.endswith('unquoted, `12.10` is the number 12.1: quote it ("12.10") to keep the text')


def test_quoted_values_and_other_type_errors_get_no_quote_hint():
    assert not lint_text(SLICE.format(enabled='"on"', version='"12.10"'), Options())
    (wrong,) = lint_text(V1_FLAT.replace("      deviceClassName: gpu.example.com\n      count: 1\n",
                                         "      exactly: {deviceClassName: gpu.example.com, count: \"2\"}\n"),
                         Options())
    assert wrong.rule == "DRA102" and "quote" not in wrong.message


ATTRIBUTES = """apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata:
  name: node-1-gpus
spec:
  driver: gpu.example.com
  pool: {name: node-1, generation: 1, resourceSliceCount: 1}
  nodeName: node-1
  devices:
  - name: gpu-0
    attributes:
      model: {string: a100}
      gpu.example.com/pcie-root:
        string: pci0000:00
"""


def test_a_bad_attribute_name_is_located_at_its_key_and_suggests_the_standard_pcie_root():
    (finding,) = lint_text(ATTRIBUTES, Options())
    assert finding.rule == "DRA413" and (finding.line, finding.column) == (13, 7)
    assert finding.field == "spec.devices[0].attributes"  # the API server's field, unchanged
    assert "e.g. gpu.example.com/pcieRoot" in finding.message
    assert "the standard attribute `resource.kubernetes.io/pcieRoot`" in finding.message


def test_whole_file_findings_are_located_at_line_one_column_one(tmp_path):
    import io

    from dralint.cli import main

    out = io.StringIO()
    code = main(["--no-config", str(tmp_path / "missing.yaml")], stdout=out, stderr=io.StringIO())
    assert code == 2 and out.getvalue().startswith(f"{tmp_path / 'missing.yaml'}:1:1: error: ")
