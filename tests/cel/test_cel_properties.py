"""Property tests: random expressions and strings only ever yield issues or CelRuntimeError."""
from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dralint.cel import CelEnv, CelIssue, CelRuntimeError, Compiled, Device, compile_selector, lint_selector
from dralint.cel.values import Semver
from dralint.kube.quantity import Quantity

ENVS = [CelEnv(m, s, g) for m in (31, 34, 35, 36, 37) for s in (False, True)
        for g in (frozenset(), frozenset({"DRAConsumableCapacity", "DRAListTypeAttributes"}))]
DEVICE = Device("gpu.example.com",
                {"gpu.example.com": {"model": "a100", "index": 3, "ok": True, "v": Semver.parse("1.2.3"),
                                     "ids": (1, 2)}},
                {"gpu.example.com": {"memory": Quantity.parse("80Gi")}})
CODES = {"too-long", "syntax", "check", "panic", "output-type", "program", "cost", "has-domain-always-true",
         "version-string-compare", "unknown-domain", "unknown-attribute", "unknown-capacity", "unguarded-attribute"}

ATOMS = ["1", "0", "-1", "2.5", "1u", "'a100'", "\"\"", "true", "false", "null", "[]", "[1, 2]", "{}", "{'k': 1}",
         "device.driver", 'device.attributes["gpu.example.com"].model', 'device.attributes["gpu.example.com"].index',
         'device.attributes["gpu.example.com"].ids', 'device.attributes["gpu.example.com"].v',
         'device.attributes["x"].y', 'device.capacity["gpu.example.com"].memory', "device.attributes",
         'quantity("1Gi")', 'semver("1.0.0")', "device.allowMultipleAllocations", "x", "lists.range(3)",
         "optional.none()", "optional.of(1)", "dyn(1)", "'a1b2'", "b'x'", "duration('1s')", "'%d-%s'"]
BINARY = ["+", "-", "*", "/", "%", "==", "!=", "<", "<=", ">", ">=", "&&", "||", "in"]
METHODS = [".size()", ".contains('a')", ".startsWith('a')", ".matches('[0-9]+')", ".isGreaterThan(quantity('1'))",
           ".compareTo(semver('1.0.0'))", ".exists(e, e == 1)", ".all(e, true)", ".map(e, e)", ".filter(e, e > 0)",
           ".includes(1)", ".orValue(0)", ".hasValue()", ".split('a')", ".lowerAscii()", ".sum()", ".min()",
           ".?model", "[0]", "['k']", "[?0]", ".sort()", ".reverse()", ".find('[a-z]')", ".asInteger()",
           ".major()", ".exists_one(k, v, true)", ".transformList(i, v, v)", ".format([1, 'a'])"]


def _expr() -> st.SearchStrategy[str]:
    base = st.sampled_from(ATOMS)

    def extend(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
        return st.one_of(
            st.tuples(inner, st.sampled_from(BINARY), inner).map(lambda t: f"({t[0]} {t[1]} {t[2]})"),
            st.tuples(inner, st.sampled_from(METHODS)).map(lambda t: f"{t[0]}{t[1]}"),
            inner.map(lambda s: f"!{s}"),
            st.tuples(inner, inner, inner).map(lambda t: f"({t[0]} ? {t[1]} : {t[2]})"),
            st.lists(inner, max_size=3).map(lambda xs: "[" + ", ".join(xs) + "]"),
            st.tuples(inner, inner).map(lambda t: f"cel.bind(b, {t[0]}, {t[1]})"),
            inner.map(lambda s: f"has({s}.f)"),
        )
    return st.recursive(base, extend, max_leaves=12)


def check_one(expr: str, env: CelEnv) -> None:
    compiled = compile_selector(expr, env)
    assert isinstance(compiled, Compiled)
    assert all(isinstance(i, CelIssue) and i.code in CODES for i in compiled.issues)
    assert all(i.offset is None or 0 <= i.offset <= len(expr) for i in compiled.issues)
    try:
        result = compiled.evaluate(DEVICE)
        # A program refused only for its estimated cost still runs (stored expressions do).
        assert compiled.ok or all(i.code == "cost" for i in compiled.issues)
        assert result in (True, False)
    except CelRuntimeError as exc:
        assert isinstance(exc.message, str) and exc.message
        assert "internal evaluation error" not in exc.message, (expr, exc.message)
    for issue in lint_selector(expr, env, {"attributes": {"gpu.example.com": {"model"}}, "capacity": {}},
                               {"attributes": {}, "capacity": {}}):
        assert issue.code in CODES


_SETTINGS = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow])


@settings(max_examples=150, **_SETTINGS)
@given(_expr(), st.sampled_from(ENVS))
def test_random_expressions(expr: str, env: CelEnv) -> None:
    check_one(expr, env)


@settings(max_examples=150, **_SETTINGS)
@given(st.text(max_size=80), st.sampled_from(ENVS))
def test_random_text(expr: str, env: CelEnv) -> None:
    check_one(expr, env)


@settings(max_examples=100, **_SETTINGS)
@given(st.text(alphabet="()[]{}.?!-+*/%<>=&|,:'\"\\ 0123456789abcdexyzu_", max_size=60), st.sampled_from(ENVS))
def test_random_token_soup(expr: str, env: CelEnv) -> None:
    check_one(expr, env)


@pytest.mark.slow
@settings(max_examples=2500, **_SETTINGS)
@given(_expr(), st.sampled_from(ENVS))
def test_random_expressions_slow(expr: str, env: CelEnv) -> None:
    check_one(expr, env)


@pytest.mark.slow
@settings(max_examples=1500, **_SETTINGS)
@given(st.text(alphabet="()[]{}.?!-+*/%<>=&|,:'\"\\ 0123456789abcdexyzu_devic", max_size=120), st.sampled_from(ENVS))
def test_random_token_soup_slow(expr: str, env: CelEnv) -> None:
    check_one(expr, env)


def test_a_program_refused_for_its_cost_alone_still_evaluates() -> None:
    # Found by the slow suite: the list size of lists.range() is unknown to the cost estimator.
    check_one("lists.range(3).exists_one(k, v, true)", CelEnv(kube_minor=36, stored=False, gates=frozenset()))
