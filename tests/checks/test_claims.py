"""Claim and template spec rules (dralint/checks/claims.py, opaque.py, tolerations.py)."""
from __future__ import annotations

import textwrap

import pytest

from dralint.engine import Options, lint_text
from dralint.kube.releases import Release, parse_version


def claim(body: str, *, version: str = "v1", kind: str = "ResourceClaim", namespace: str = "default") -> str:
    body = textwrap.indent(textwrap.dedent(body).strip("\n"), "      " if kind == "ResourceClaimTemplate" else "    ")
    spec = f"  spec:\n    devices:\n{body}\n" if kind == "ResourceClaimTemplate" else f"  devices:\n{body}\n"
    return (f"apiVersion: resource.k8s.io/{version}\nkind: {kind}\nmetadata:\n  name: c\n  namespace: {namespace}\n"
            f"spec:\n{spec}")


def lint(text: str, version: str = "1.37", **gates: bool) -> list[tuple[str, str]]:
    findings = lint_text(text, Options(release=Release(parse_version(version), dict(gates))))
    return sorted((f.rule, f.field) for f in findings)


def errors(text: str, version: str = "1.37", **gates: bool) -> list[tuple[str, str]]:
    findings = lint_text(text, Options(release=Release(parse_version(version), dict(gates))))
    return sorted((f.rule, f.field) for f in findings if f.severity.value == "error")


REQ = "requests:\n- name: gpu\n  exactly:\n    deviceClassName: gpu.example.com\n"


def exactly(extra: str) -> str:
    """REQ with more fields under its ``exactly``."""
    return REQ + textwrap.indent(textwrap.dedent(extra).strip("\n"), "    ") + "\n"


def spec(extra: str) -> str:
    """REQ with more ``devices`` fields (constraints, config)."""
    return REQ + textwrap.dedent(extra).strip("\n") + "\n"


def test_valid_claim_and_template_raise_nothing():
    assert lint(claim(REQ)) == []
    assert lint(claim(REQ, kind="ResourceClaimTemplate")) == []


@pytest.mark.parametrize(("count", "mode", "expected"), [
    (0, "ExactCount", []),                       # defaulted to 1
    (None, None, []),
    (-1, "ExactCount", [("DRA201", "spec.devices.requests[0].exactly.count")]),
    (-1, None, [("DRA201", "spec.devices.requests[0].exactly.count")]),  # empty mode defaults to ExactCount
    (2, "All", [("DRA202", "spec.devices.requests[0].exactly.count")]),
    (0, "All", []),
])
def test_count_and_mode_follow_server_defaulting(count, mode, expected):
    body = REQ + (f"    count: {count}\n" if count is not None else "") + (f"    allocationMode: {mode}\n" if mode else "")
    assert errors(claim(body)) == expected


def test_unknown_mode_suggests_the_right_spelling():
    findings = lint_text(claim(REQ + "    allocationMode: exactcount\n"), Options())
    assert [(f.rule, f.field) for f in findings] == [("DRA203", "spec.devices.requests[0].exactly.allocationMode")]
    assert "'ExactCount'" in findings[0].message


def test_v1beta1_paths_are_the_users_flat_paths():
    body = "requests:\n- name: gpu\n  deviceClassName: gpu.example.com\n  count: -3\n"
    assert errors(claim(body, version="v1beta1")) == [("DRA201", "spec.devices.requests[0].count")]


def test_v1beta1_request_without_class_is_not_defaulted():
    # v1beta1 defaulting skips requests without a class: the mode stays empty (NotSupported) too.
    body = "requests:\n- name: gpu\n  count: 2\n"
    assert errors(claim(body, version="v1beta1")) == [("DRA203", "spec.devices.requests[0].allocationMode"),
                                                      ("DRA207", "spec.devices.requests[0].deviceClassName")]


def test_before_prioritized_lists_a_bare_request_only_lacks_its_class():
    body = "requests:\n- name: gpu\n"
    assert errors(claim(body, version="v1beta1"), "1.32", DynamicResourceAllocation=True) == [("DRA207", "spec.devices.requests[0].deviceClassName")]
    assert errors(claim(body, version="v1beta1"), "1.34") == [("DRA206", "spec.devices.requests[0]")]


def test_too_many_requests_short_circuits_the_items():
    body = "requests:\n" + "".join(f"- name: BAD_{i}\n" for i in range(33))
    assert errors(claim(body)) == [("DRA200", "spec.devices.requests")]


def test_request_names_duplicates_and_exactly_one_of():
    body = """
    requests:
    - name: gpu
      exactly: {deviceClassName: gpu.example.com}
    - name: gpu
      exactly: {deviceClassName: gpu.example.com}
    - name: Bad_Name
      exactly: {deviceClassName: gpu.example.com}
    - name: both
      exactly: {deviceClassName: gpu.example.com}
      firstAvailable: [{name: a, deviceClassName: gpu.example.com}]
    - name: neither
    """
    assert errors(claim(body)) == [("DRA204", "spec.devices.requests[1]"), ("DRA205", "spec.devices.requests[2].name"),
                                   ("DRA206", "spec.devices.requests[3]"), ("DRA206", "spec.devices.requests[4]")]


def test_subrequests():
    subs = "".join(f"  - name: s{i}\n    deviceClassName: gpu.example.com\n" for i in range(9))
    assert errors(claim("requests:\n- name: gpu\n  firstAvailable:\n" + subs)) == [
        ("DRA211", "spec.devices.requests[0].firstAvailable")]
    body = """
    requests:
    - name: gpu
      firstAvailable:
      - name: large
      - name: large
        deviceClassName: GPU
        count: -1
      - name: "&^%"
        deviceClassName: gpu.example.com
    """
    assert errors(claim(body)) == [
        ("DRA201", "spec.devices.requests[0].firstAvailable[1].count"),
        ("DRA207", "spec.devices.requests[0].firstAvailable[0].deviceClassName"),
        ("DRA208", "spec.devices.requests[0].firstAvailable[1].deviceClassName"),
        ("DRA212", "spec.devices.requests[0].firstAvailable[1]"),
        ("DRA213", "spec.devices.requests[0].firstAvailable[2].name"),
    ]


def test_selectors_need_cel_and_a_limit():
    many = "".join("    - cel: {expression: 'true'}\n" for _ in range(33))
    assert errors(claim(REQ + "    selectors:\n" + many)) == [("DRA209", "spec.devices.requests[0].exactly.selectors")]
    assert errors(claim(REQ + "    selectors:\n    - cel:\n")) == [
        ("DRA210", "spec.devices.requests[0].exactly.selectors[0].cel")]


def test_constraint_references_and_attributes():
    body = """
    requests:
    - name: gpu
      firstAvailable:
      - {name: large, deviceClassName: gpu.example.com}
    - name: nic
      exactly: {deviceClassName: nic.example.com}
    constraints:
    - requests: [gpu, gpu/large, nic, nic]
      matchAttribute: example.com/numa
    - requests: [gpu/small, nic/x, a/b/c, "!@#"]
      matchAttribute: numa
    - requests: [gpu]
      matchAttribute: ""
    - requests: [gpu]
    """
    assert errors(claim(body), DRAConsumableCapacity=True) == [
        ("DRA222", "spec.devices.constraints[0].requests[3]"),
        ("DRA223", "spec.devices.constraints[1].requests[0]"),
        ("DRA223", "spec.devices.constraints[1].requests[1]"),
        ("DRA223", "spec.devices.constraints[1].requests[2]"),
        ("DRA223", "spec.devices.constraints[1].requests[3]"),
        ("DRA224", "spec.devices.constraints[1].matchAttribute"),
        ("DRA224", "spec.devices.constraints[2].matchAttribute"),
        ("DRA225", "spec.devices.constraints[3]"),
    ]
    assert errors(claim(body), DRAConsumableCapacity=False)[-1] == ("DRA225", "spec.devices.constraints[3].matchAttribute")


def test_an_invalid_request_name_is_quoted_once_unless_it_is_part_of_the_reference():
    body = "requests:\n- name: GPU\n  exactly: {deviceClassName: gpu.example.com}\n" \
           "constraints:\n- requests: [GPU]\n  matchAttribute: example.com/numa\n"
    (message,) = [f.message for f in lint_text(claim(body), Options(release=Release(37))) if f.rule == "DRA223"]
    assert message.startswith("'GPU' is not a valid request name: ")
    body = "requests:\n- name: gpu\n  firstAvailable:\n  - {name: X, deviceClassName: gpu.example.com}\n" \
           "constraints:\n- requests: [gpu/X]\n  matchAttribute: example.com/numa\n"
    (message,) = [f.message for f in lint_text(claim(body), Options(release=Release(37))) if f.rule == "DRA223"]
    assert message.startswith("'X' in 'gpu/X' is not a valid request name: ")


def test_distinct_attribute_dropped_when_gate_off_then_match_attribute_required():
    body = REQ + "constraints:\n- distinctAttribute: example.com/numa\n"
    assert lint(claim(body), "1.35") == [("DRA225", "spec.devices.constraints[0].matchAttribute"),
                                         ("DRA802", "spec.devices.constraints[0].distinctAttribute")]
    assert lint(claim(body), "1.36") == []


def test_config_entries():
    body = spec("""
    config:
    - requests: [gpus]
      opaque: {driver: gpu.example.com, parameters: {a: 1}}
    - requests: [gpu]
    - opaque: {driver: "bad driver", parameters: [1, 2]}
    - opaque: {driver: gpu.example.com}
    - opaque: {driver: gpu.example.com, parameters: null}
    """)
    assert errors(claim(body)) == [
        ("DRA227", "spec.devices.config[0].requests[0]"),
        ("DRA228", "spec.devices.config[1].opaque"),
        ("DRA229", "spec.devices.config[2].opaque.driver"),
        ("DRA230", "spec.devices.config[2].opaque.parameters"),
        ("DRA230", "spec.devices.config[3].opaque.parameters"),
        ("DRA230", "spec.devices.config[4].opaque.parameters"),
    ]


@pytest.mark.parametrize(("size", "too_large"), [(10240, False), (10241, True)])
def test_parameters_limit_is_exact_on_compact_json(size, too_large):
    # {"s":"xxx"} is 8 bytes plus the string
    text = claim(REQ + f"config:\n- opaque:\n    driver: gpu.example.com\n    parameters:\n      s: {'x' * (size - 8)}\n")
    assert errors(text) == ([("DRA231", "spec.devices.config[0].opaque.parameters")] if too_large else [])


def test_tolerations():
    body = exactly("""
        tolerations:
        - {key: "bad key!", operator: Equal}
        - {key: example.com/t, operator: Exists, value: x}
        - {key: example.com/t, operator: Maybe}
        - {key: example.com/t, effect: NoRun}
        - {key: example.com/t, value: "no spaces allowed"}
        - {key: example.com/t, effect: None}
        - {operator: Exists}
    """)
    assert errors(claim(body)) == [
        ("DRA214", "spec.devices.requests[0].exactly.tolerations[0].key"),
        ("DRA214", "spec.devices.requests[0].exactly.tolerations[1].value"),
        ("DRA214", "spec.devices.requests[0].exactly.tolerations[2].operator"),
        ("DRA214", "spec.devices.requests[0].exactly.tolerations[3].effect"),
        ("DRA214", "spec.devices.requests[0].exactly.tolerations[4].value"),
    ]
    none_effect = claim(REQ + "    tolerations:\n    - {key: example.com/t, effect: None}\n")
    assert errors(none_effect, "1.34", DRADeviceTaints=True) == [
        ("DRA214", "spec.devices.requests[0].exactly.tolerations[0].effect")]


def test_documented_toleration_limit_is_only_a_warning():
    tols = "".join(f"    - {{key: example.com/t{i}, operator: Exists}}\n" for i in range(17))
    findings = lint_text(claim(REQ + "    tolerations:\n" + tols), Options())
    assert [(f.rule, f.severity.value) for f in findings] == [("DRA215", "warning")]


def test_admin_access_namespace_label():
    body = REQ + "    adminAccess: true\n"
    text = claim(body, namespace="ops")
    assert lint(text) == [("DRA217", "spec.devices.requests[0].exactly.adminAccess")]
    unlabelled = text + "---\napiVersion: v1\nkind: Namespace\nmetadata:\n  name: ops\n"
    assert errors(unlabelled) == [("DRA216", "spec.devices.requests[0].exactly.adminAccess")]
    labelled = unlabelled + "  labels:\n    resource.kubernetes.io/admin-access: \"true\"\n"
    assert lint(labelled) == []
    template = claim(body, namespace="ops", kind="ResourceClaimTemplate")
    assert lint(template) == [("DRA217", "spec.spec.devices.requests[0].exactly.adminAccess")]


def test_capacity_requests():
    body = REQ + "    capacity:\n      requests:\n        memory: 10 GB\n        bad/name/x: 1Gi\n        zero: '0'\n"
    findings = lint_text(claim(body), Options(release=Release(38)))
    got = sorted((f.rule, f.severity.value, f.field) for f in findings)
    base = "spec.devices.requests[0].exactly.capacity.requests"
    # A value that is not a quantity fails decoding (the schema stage); the rest are warnings.
    assert got == [("DRA102", "error", f"{base}[memory]"), ("DRA218", "warning", f"{base}[bad/name/x]"),
                   ("DRA218", "warning", f"{base}[zero]")]


def test_capacity_request_names_with_several_slashes_are_only_warned_about_from_1_38():
    body = REQ + "    capacity:\n      requests:\n        gpu.example.com/mem/hbm: 1Gi\n"
    base = "spec.devices.requests[0].exactly.capacity.requests"
    # Up to 1.37 a device can publish such a capacity; 1.38 refuses it in slices (kubernetes#141644).
    assert [f.rule for f in lint_text(claim(body), Options(release=Release(37)))] == []
    assert [(f.rule, f.severity.value, f.field) for f in lint_text(claim(body), Options(release=Release(38)))] == [
        ("DRA218", "warning", f"{base}[gpu.example.com/mem/hbm]")]


def test_template_paths():
    body = "requests:\n- name: gpu\n  exactly:\n    deviceClassName: Bad\n"
    assert errors(claim(body, kind="ResourceClaimTemplate")) == [
        ("DRA208", "spec.spec.devices.requests[0].exactly.deviceClassName")]


def test_spec_is_not_validated_on_update():
    old = claim(REQ)
    new = claim("requests:\n- name: gpu\n  exactly:\n    deviceClassName: Bad\n")
    findings = lint_text(new, Options(), old_text=old)
    assert [(f.rule, f.field) for f in findings] == [("DRA255", "spec")]
