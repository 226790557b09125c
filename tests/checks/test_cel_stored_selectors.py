"""Selectors on UPDATE, per release, as kubernetes/kubernetes ``pkg/apis/resource/validation``
judges them: a DeviceClass with unchanged selectors compiles them as stored expressions up to
1.36 and skips them from 1.37 (PR 140029); a claim's immutable spec is compiled as stored up to
1.33; a template is validated as new (its strategy runs ``ValidateResourceClaimTemplate``).
"""
from __future__ import annotations

from dralint.engine import Options, lint_text
from dralint.kube.releases import Release, parse_version

CEL_RULES = ("DRA500", "DRA501", "DRA502")


def _class(expr: str) -> str:
    return ("apiVersion: resource.k8s.io/v1\nkind: DeviceClass\nmetadata: {name: gpu.example.com}\nspec:\n"
            f"  selectors:\n  - cel:\n      expression: '{expr}'\n")


def _claim(expr: str, kind: str = "ResourceClaim", label: str = "a", api: str = "v1") -> str:
    spec = ("  devices:\n    requests:\n    - name: gpu\n      exactly:\n        deviceClassName: gpu.example.com\n"
            f"        selectors:\n        - cel:\n            expression: '{expr}'\n")
    if kind == "ResourceClaimTemplate":
        spec = "  spec:\n" + "".join("  " + line + "\n" for line in spec.splitlines())
    return (f"apiVersion: resource.k8s.io/{api}\nkind: {kind}\nmetadata: {{name: c, namespace: default, "
            f"labels: {{v: {label}}}}}\nspec:\n{spec}")


def _cel(text: str, version: str, old: str | None = None, **gates: bool) -> list[tuple[str, str]]:
    findings = lint_text(text, Options(release=Release(parse_version(version), dict(gates))), old_text=old)
    return [(f.rule, f.message) for f in findings if f.rule in CEL_RULES]


# allowMultipleAllocations needs DRAConsumableCapacity (off by default in 1.35) in new expressions;
# StoredExpressions always has it.
MULTI = "device.allowMultipleAllocations"
BROKEN = 'device.driver == "a" &&'
EXPENSIVE = ("device.attributes.all(a, device.attributes.all(b, device.attributes.all(c, "
             "device.attributes.all(d, a == b))))")


def test_an_unchanged_class_keeps_what_only_the_stored_environment_accepts() -> None:
    assert [r for r, _ in _cel(_class(MULTI), "1.35")] == ["DRA501"]
    assert _cel(_class(MULTI), "1.35", old=_class(MULTI)) == []
    # a changed list is new again, even when this selector is the same
    changed = _class(MULTI) + "  - cel:\n      expression: device.driver != \"\"\n"
    assert [r for r, _ in _cel(changed, "1.35", old=_class(MULTI))] == ["DRA501"]


def test_an_unchanged_class_is_still_refused_up_to_1_36_for_what_no_environment_accepts() -> None:
    found = _cel(_class(BROKEN), "1.36", old=_class(BROKEN))
    assert [r for r, _ in found] == ["DRA501"]
    assert "compiles them as stored expressions" in found[0][1]
    assert [r for r, _ in _cel(_class(EXPENSIVE), "1.36", old=_class(EXPENSIVE))] == ["DRA502"]
    # 1.37 returns before compiling a stored expression
    assert _cel(_class(BROKEN), "1.37", old=_class(BROKEN)) == []
    assert _cel(_class(EXPENSIVE), "1.37", old=_class(EXPENSIVE)) == []


def test_a_claims_update_compiles_its_immutable_selectors_as_stored_up_to_1_33() -> None:
    normalize = 'isSemver("v1.0", true)'  # semver normalize: in 1.33's stored environment only
    v1beta2 = {"api": "v1beta2"}  # what 1.33 serves
    assert [r for r, _ in _cel(_claim(normalize, **v1beta2), "1.33")] == ["DRA501"]
    assert _cel(_claim(normalize, label="b", **v1beta2), "1.33", old=_claim(normalize, **v1beta2)) == []
    assert [r for r, _ in _cel(_claim(BROKEN, label="b", **v1beta2), "1.33",
                               old=_claim(BROKEN, **v1beta2))] == ["DRA501"]
    # from 1.34 only the spec's immutability is checked
    assert _cel(_claim(BROKEN, label="b"), "1.34", old=_claim(BROKEN)) == []


def test_a_templates_update_is_validated_as_new() -> None:
    old = _claim(MULTI, "ResourceClaimTemplate")
    new = _claim(MULTI, "ResourceClaimTemplate", label="b")
    assert [r for r, _ in _cel(new, "1.35", old=old)] == ["DRA501"]
    assert _cel(new, "1.35", old=old, DRAConsumableCapacity=True) == []
