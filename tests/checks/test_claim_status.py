"""Update rules of claims and templates, and claim status writes (dralint/checks/claim_status.py)."""
from __future__ import annotations

from dralint.engine import Options, lint_text
from dralint.kube.releases import Release, parse_version

HEAD = """apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata:
  name: c
  namespace: default{meta}
spec:
  devices:
    requests:
    - name: gpu
      exactly:
        deviceClassName: gpu.example.com{extra}
"""
RESULT = """      - request: gpu
        driver: gpu.example.com
        pool: worker-1
        device: gpu-0
"""
ALLOC = "  allocation:\n    devices:\n      results:\n" + RESULT


def claim(status: str = "", *, meta: str = "", extra: str = "") -> str:
    return HEAD.format(meta=meta, extra=extra) + (f"status:\n{status}" if status else "")


def reserved(*uids: int) -> str:
    return "  reservedFor:\n" + "".join(f"  - {{resource: pods, name: p{u}, uid: u-{u}}}\n" for u in uids)


def findings(new: str, old: str, version: str = "1.37", **gates: bool) -> list[tuple[str, str]]:
    options = Options(release=Release(parse_version(version), dict(gates)))
    return sorted((f.rule, f.field) for f in lint_text(new, options, old_text=old))


def test_status_is_ignored_on_create():
    got = lint_text(claim(ALLOC + "  reservedFor: [{}]\n"), Options())
    assert [(f.rule, f.severity.value, f.field) for f in got] == [("DRA265", "info", "status")]


def test_spec_immutable_after_defaulting():
    old = claim()
    assert findings(claim(extra="\n        allocationMode: ExactCount\n        count: 1\n        selectors: []"), old) == []
    assert findings(claim(extra="\n        count: 2"), old) == [("DRA255", "spec")]


def test_template_spec_immutable():
    tmpl = ("apiVersion: resource.k8s.io/v1\nkind: ResourceClaimTemplate\nmetadata: {name: t, namespace: default}\n"
            "spec:\n  spec:\n    devices:\n      requests:\n      - name: gpu\n        exactly:\n"
            "          deviceClassName: CLASS\n")
    old = tmpl.replace("CLASS", "gpu.example.com")
    assert findings(old, old) == []
    got = lint_text(tmpl.replace("CLASS", "big.example.com"), Options(), old_text=old)
    assert [(f.rule, f.field) for f in got] == [("DRA255", "spec")]
    assert "spec.spec.devices.requests[0].exactly.deviceClassName" in got[0].message


def test_allocation_and_reservations():
    old = claim()
    assert findings(claim(ALLOC), old) == []
    assert findings(claim(ALLOC + reserved(1, 2)), claim(ALLOC)) == []
    assert findings(claim(reserved(1)), old) == [("DRA253", "status.reservedFor")]
    assert findings(claim(ALLOC + reserved(1, 1)), claim(ALLOC)) == [("DRA251", "status.reservedFor[1]")]
    incomplete = ALLOC + "  reservedFor:\n  - {name: p}\n"
    assert findings(claim(incomplete), claim(ALLOC)) == [("DRA252", "status.reservedFor[0].resource"),
                                                        ("DRA252", "status.reservedFor[0].uid")]
    assert findings(claim(ALLOC.replace("gpu-0", "gpu-1")), claim(ALLOC)) == [("DRA256", "status.allocation")]


def test_reserved_for_limit_depends_on_release():
    beta = claim(ALLOC).replace("/v1\n", "/v1beta1\n").replace("      exactly:\n        deviceClassName",
                                                                "      deviceClassName")
    many = beta + reserved(*range(33))
    assert findings(many, beta, "1.32", DynamicResourceAllocation=True) == [("DRA250", "status.reservedFor")]
    assert findings(many, beta, "1.33") == []


def test_no_new_consumers_while_deleting():
    meta = "\n  deletionTimestamp: '2025-06-01T12:00:00Z'"
    old = claim(ALLOC + reserved(1, 2), meta=meta)
    assert findings(claim(ALLOC + reserved(1), meta=meta), old) == []
    assert findings(claim(ALLOC + reserved(1, 3), meta=meta), old) == [("DRA254", "status.reservedFor")]


def test_new_allocation_is_validated():
    old = claim()
    bad = ALLOC.replace("request: gpu", "request: gpu/x").replace("device: gpu-0", "device: GPU") + \
        "        shareID: NOT-A-UUID\n        bindingConditions: [ready]\n" + \
        "      config:\n      - requests: [gpu, nope]\n        opaque: {driver: gpu.example.com, parameters: {}}\n" + \
        "      - source: FromSomewhere\n" + \
        "    nodeSelector: {}\n"
    assert findings(claim(bad), old) == sorted([
        ("DRA258", "status.allocation.devices.config[0].requests[1]"),
        ("DRA258", "status.allocation.devices.results[0].request"),
        ("DRA259", "status.allocation.devices.results[0].bindingFailureConditions"),
        ("DRA259", "status.allocation.devices.results[0].device"),
        ("DRA259", "status.allocation.devices.results[0].shareID"),
        ("DRA260", "status.allocation.devices.config[0].source"),
        ("DRA260", "status.allocation.devices.config[1].source"),
        ("DRA228", "status.allocation.devices.config[1].opaque"),
        ("DRA405", "status.allocation.nodeSelector.nodeSelectorTerms"),
    ])


def test_stored_allocation_is_not_revalidated():
    stored = claim(ALLOC.replace("device: gpu-0", "device: GPU"))
    assert findings(claim(ALLOC.replace("device: gpu-0", "device: GPU") + reserved(1)), stored) == []


def test_admin_access_in_a_new_allocation():
    old = claim()
    admin = claim(ALLOC + "        adminAccess: true\n")
    assert findings(admin, old) == [("DRA217", "status.allocation.devices.results[0].adminAccess")]
    with_ns = admin + "---\napiVersion: v1\nkind: Namespace\nmetadata: {name: default}\n"
    assert findings(with_ns, old) == [("DRA216", "status.allocation.devices.results[0].adminAccess")]


def test_device_status():
    old = claim(ALLOC)
    ok = ALLOC + ("  devices:\n  - driver: gpu.example.com\n    pool: worker-1\n    device: gpu-0\n"
                  "    conditions:\n    - {type: Ready, status: 'True', reason: Up, lastTransitionTime: '2025-01-01T00:00:00Z'}\n"
                  "    data: {a: 1}\n    networkData: {interfaceName: eth0, ips: [10.9.8.7/24, '2001:db8::1/64']}\n")
    assert findings(claim(ok), old) == []
    bad = ALLOC + ("  devices:\n  - driver: gpu.example.com\n    pool: worker-1\n    device: gpu-1\n"
                   "    conditions:\n    - {type: Ready, status: Maybe, reason: '1x'}\n"
                   "    data: [1]\n    networkData: {ips: [300.9.8.0/24, 010.009.008.000/24, '2001:0db8::1/64', 10.0.0.1]}\n"
                   "  - driver: gpu.example.com\n    pool: worker-1\n    device: gpu-1\n")
    dev = "status.devices[0]"
    assert findings(claim(bad), old) == sorted([
        ("DRA262", "status.devices[1]"), ("DRA263", dev), ("DRA263", "status.devices[1]"),
        ("DRA264", f"{dev}.conditions[0].lastTransitionTime"), ("DRA264", f"{dev}.conditions[0].reason"),
        ("DRA264", f"{dev}.conditions[0].status"), ("DRA264", f"{dev}.data"),
        ("DRA264", f"{dev}.networkData.ips[0]"), ("DRA264", f"{dev}.networkData.ips[1]"),
        ("DRA264", f"{dev}.networkData.ips[2]"), ("DRA264", f"{dev}.networkData.ips[3]"),
    ])


def test_device_status_of_deallocated_devices_is_dropped():
    old = claim(ALLOC + "  devices:\n  - {driver: gpu.example.com, pool: worker-1, device: gpu-0}\n")
    assert findings(claim("  devices:\n  - {driver: gpu.example.com, pool: worker-1, device: gpu-0}\n"), old) == []
