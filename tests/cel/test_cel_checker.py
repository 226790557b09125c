"""Type checker, validators, output-type rule and the environment per release (cel-go wording)."""
from __future__ import annotations

import pytest

from dralint.cel import CelEnv, compile_selector, env_for

STORED = CelEnv(37, stored=True)
NEW35 = CelEnv(35)


def first_error(expr: str, env: CelEnv = STORED) -> tuple[str, str, int | None]:
    issues = [i for i in compile_selector(expr, env).issues if i.severity == "error"]
    assert issues, f"{expr!r} compiled"
    return issues[0].code, issues[0].message, issues[0].offset


@pytest.mark.parametrize("expr,message,offset", [
    ('gpu.model == "a100"', "undeclared reference to 'gpu' (in container '')", 0),
    ("device.drivr == 'x'", "undefined field 'drivr'", 6),
    ("device.driver.size > 1", "type 'string' does not support field selection", 13),
    ("1 == 'a'", "found no matching overload for '_==_' applied to '(int, string)'", 2),
    ("'a'.startsWith(1)", "found no matching overload for 'startsWith' applied to 'string.(int)'", 14),
    ("device.capacity['d'].m > quantity('1')", "found no matching overload for '_>_' applied to "
                                               "'(kubernetes.Quantity, kubernetes.Quantity)'", 23),
    ("quantity('1').sign() == 1", "found no matching overload for 'sign' applied to 'kubernetes.Quantity.()'", 18),
    ("nosuch(1)", "undeclared reference to 'nosuch' (in container '')", 0),
    ("[1, 'a'].size() == 2", "expected type 'int' but found 'string'", 4),
    ("{'a': 1, 'b': 'x'}.size() == 2", "expected type 'int' but found 'string'", 14),
    ("'x'.matches('[')", "invalid matches argument", 12),
    ("duration('1x') > duration('1s')", "invalid duration argument", 9),
    ("timestamp('2020') > timestamp(0)", "invalid timestamp argument", 10),
    ("[1].all(x, x)", "found no matching overload for '_&&_' applied to '(bool, int)'", 7),
])
def test_check_messages(expr: str, message: str, offset: int) -> None:
    code, got, off = first_error(expr)
    assert code == "check"
    assert message in got
    assert off == offset


def test_relational_operator_on_quantity_teaches() -> None:
    [issue] = compile_selector("device.capacity['d'].m < quantity('1')", STORED).issues
    assert issue.message == "found no matching overload for '_<_' applied to '(kubernetes.Quantity, kubernetes.Quantity)'"
    assert "compareTo" in issue.hint and "isGreaterThan" in issue.hint


def test_any_is_not_a_comprehension_range() -> None:
    code, message, _ = first_error('device.attributes["d"].ids.exists(i, i == 1)', NEW35)
    assert message == ("expression of type 'any' cannot be range of a comprehension "
                       "(must be list, map, or dynamic)")
    assert compile_selector('device.attributes["d"].ids.exists(i, i == 1)', STORED).ok


@pytest.mark.parametrize("expr,type_name", [
    ("1", "int"), ("'x'", "string"), ("device.attributes['d']", "map(string, google.protobuf.Any)"),
    ("device.capacity['d'].m", "kubernetes.Quantity"), ("[1]", "list(int)"), ("optional.of(1)", "optional_type(int)"),
    ("dyn(1)", "dyn"),
])
def test_output_type_rule(expr: str, type_name: str) -> None:
    code, message, _ = first_error(expr, NEW35)
    assert code == "output-type"
    assert message == f"must evaluate to bool or the unknown type, not {type_name}"


def test_attribute_output_type_is_accepted() -> None:
    assert compile_selector('device.attributes["d"].ready', NEW35).ok
    assert compile_selector('device.attributes["d"].ready', STORED).ok  # dyn with list-type attributes


def test_format_is_exempt_from_homogeneous_literals() -> None:
    assert compile_selector('"%s-%d".format(["a", 1]) == "a-1"', STORED).ok


@pytest.mark.parametrize("expr,first_new,first_stored", [
    ("[1, 2].slice(0, 1) == [1]", 35, 34),                      # ext.Lists v3 in the base env at 1.34
    ("lists.range(2) == [0, 1]", 35, 34),
    ("[[1], [2]].flatten() == [1, 2]", 35, 34),
    ("[2, 1].reverse() == [1, 2]", 35, 34),
    ("[1, 1].distinct() == [1]", 35, 34),
    ("[2, 1].sort() == [1, 2]", 35, 34),
    ("[2, 1].sortBy(x, -x) == [2, 1]", 35, 34),
    ('isSemver("v1.0", true)', 34, 33),
    ("[1].existsOne(i, v, v > 0)", 33, 32),
    ("[1].transformList(i, v, v + 1) == [2]", 33, 32),
    ("{'a': 1}.transformMap(k, v, v + 1) == {'a': 2}", 33, 32),
    ('format.named("dns1123Label").hasValue()', 32, 31),
    ('semver("v1.0", true) == semver("1.0.0")', 34, 33),        # semver library v1 at 1.33
    ("{'a': 1}.all(k, v, v > 0)", 33, 32),                      # two-variable comprehensions at 1.32
    ("!format.dns1123Label().validate('a').hasValue()", 32, 31),
    ("ip('1.2.3.4').family() == 4", 31, 31),
])
def test_n_minus_one_rule(expr: str, first_new: int, first_stored: int) -> None:
    for minor in range(31, 38):
        assert compile_selector(expr, CelEnv(minor)).ok == (minor >= first_new), minor
        assert compile_selector(expr, CelEnv(minor, stored=True)).ok == (minor >= first_stored), minor


def test_gates() -> None:
    expr = "device.allowMultipleAllocations"
    assert not compile_selector(expr, CelEnv(35)).ok
    assert compile_selector(expr, CelEnv(35, gates=frozenset({"DRAConsumableCapacity"}))).ok
    assert compile_selector(expr, CelEnv(34, stored=True)).ok
    assert not compile_selector(expr, CelEnv(33, stored=True)).ok
    inc = 'device.attributes["d"].x.includes(1)'
    assert "undeclared reference to 'includes'" in first_error(inc, CelEnv(36))[1]
    assert compile_selector(inc, CelEnv(36, gates=frozenset({"DRAListTypeAttributes"}))).ok
    assert compile_selector(inc, CelEnv(36, stored=True)).ok


def test_env_for() -> None:
    env = env_for("v1.36.2", {"DRAConsumableCapacity": True, "DRAAdminAccess": True, "DRAListTypeAttributes": False},
                  stored=False)
    assert env == CelEnv(36, False, frozenset({"DRAConsumableCapacity"}))
    assert env_for("nonsense", {}, stored=True).kube_minor == 37


def test_several_errors_are_all_reported_in_order() -> None:
    issues = compile_selector("a == b", STORED).issues
    assert [i.offset for i in issues] == [0, 5]
