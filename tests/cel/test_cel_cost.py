"""Worst-case cost estimates, exact against the numbers Kubernetes' compile_test.go asserts."""
from __future__ import annotations

import pytest

from dralint.cel import MAX_COST, CelEnv, compile_selector

STORED = CelEnv(37, stored=True)
LISTS = CelEnv(37, gates=frozenset({"DRAListTypeAttributes"}))
D = 'device.attributes["dra.example.com"]'

NESTED = "[1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(x, " * 7
EXPENSIVE = ("[1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(x, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(y, "
             "[1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(z, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(z2, "
             "[1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(z3, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(z4, "
             "[1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(z5, int('1'.find('[0-9]*')) < 100)))))))")


@pytest.mark.parametrize("env,expr,cost", [
    (STORED, "device.driver == \"\"", 2),
    (STORED, 'device.driver == "dra.example.com"', 4),
    (STORED, '"no-such-domain" in device.attributes', 3),
    (STORED, f"{D}.name", 4),
    (STORED, f'{D}["name"]', 4),
    (STORED, f"{D}.name > 0", 5),
    (STORED, f'{D}.name == "fish"', 5),
    (STORED, f"cel.bind(dra, {D}, dra.name)", 15),
    (STORED, f'{D}.name.isGreaterThan(semver("0.0.1"))', 6),
    (STORED, f'{D}.name.isGreaterThan(semver("v0.0.1", true)) && isSemver("v1.0.0", true)', 7),
    (STORED, 'device.capacity["dra.example.com"].name.isGreaterThan(quantity("1Ki"))', 6),
    (STORED, '"name" in device.capacity["dra.example.com"] && '
             'device.capacity["dra.example.com"].name.isGreaterThan(quantity("1Ki"))', 10),
    (STORED, '!("name" in device.capacity["dra.example.com"]) || '
             'device.capacity["dra.example.com"].name.isGreaterThan(quantity("1Ki"))', 11),
    (STORED, f"{D}.a && {D}.b && {D}.c", 12),
    (STORED, 'device.attributes.exists_one(x, x == "dra.example.com")', 164),
    (STORED, f'{D}.exists_one(x, x == "services")', 133),
    (STORED, f'{D}.services.split("example").size() >= 2', 19),
    (STORED, f'{D}.services.matches("[^a]?sym")', 18),
    (STORED, "device.allowMultipleAllocations == true", 3),
    (STORED, f"{D}.name.exists(x, x > 0)", 389),
    (LISTS, f"{D}.names.size() == 2", 6),
    (LISTS, f'{D}.names.all(x, x != "")', 5 + 4 * 64),
    (LISTS, f'{D}.names.all(x, x.isGreaterThan(semver("0.0.1")))', 5 + 6 * 64),
    (LISTS, f'{D}.name.includes("fish")', 52),
    (LISTS, f'{D}.name.includes(semver("1.0.0"))', 53),
    (LISTS, f"1 in {D}.names", 68),
    (STORED, EXPENSIVE, 85_555_551),
])
def test_estimates(env: CelEnv, expr: str, cost: int) -> None:
    compiled = compile_selector(expr, env)
    assert compiled.cost == cost
    assert compiled.ok == (cost <= MAX_COST)


A = 'device.attributes["gpu.example.com"]'
NEW_ANY = CelEnv(37, gates=frozenset({"DRAConsumableCapacity"}))


@pytest.mark.parametrize("env,expr,cost", [
    # cel.bind: the bound variable keeps its path, so a.cores has the attribute's size (64)
    (STORED, f"cel.bind(a, {A}, a.cores).all(x, x >= 0)", 336),
    (STORED, f'string(cel.bind(a, {A}, a.index)) == "3"', 23),
    (STORED, f"int(string(cel.bind(a, {A}, a.numaNode))) == cel.bind(a, {A}, a.numaNode)", 39),
    (STORED, f"uint(cel.bind(a, {A}, a.index)) > 3u", 17),
    # dyn() costs one and passes its argument's size through
    (STORED, f"dyn({A}.index) == dyn(1)", 7),
    # a list literal's join() multiplies by an unknown element size: unbounded (issue 13)
    (STORED, '["a", "b"].join("-") == "a-b"', 1844674407370955275),
    (NEW_ANY, '["a", "b"].join("-") == "a-b"', 1844674407370955275),
    # an attribute's join() is bounded: no element size, 63 separators of one character
    (STORED, f'{A}.modes.join("-") == "a"', 12),
    # type values have no size: comparing them is unbounded
    (STORED, f"type({A}.model) == int", 1844674407370955270),
    (NEW_ANY, f"type({A}.model) == int", 1844674407370955270),
    # ext sets and lists (version 3) estimators
    (STORED, f"sets.contains({A}.cores, [5])", 79),
    (STORED, f'sets.intersects({A}.modes, ["mig", "mps"])', 143),
    (STORED, f"{A}.cores.sort()[0] == 0", 8619),
    # Kubernetes: parsing a literal costs a tenth of its length, rounded up
    (STORED, 'isSemver("1.12.6+build.2")', 2),
])
def test_cel_go_model(env: CelEnv, expr: str, cost: int) -> None:
    assert compile_selector(expr, env).cost == cost


def test_cost_limit_is_reported_as_cel_go_does() -> None:
    compiled = compile_selector(EXPENSIVE, STORED)
    assert [(i.code, i.message) for i in compiled.issues] == [("cost", "too complex, exceeds cost limit")]


def test_four_nested_attribute_comprehensions_exceed_the_limit() -> None:
    expr = ("device.attributes.all(a, device.attributes.all(b, device.attributes.all(c, "
            "device.attributes.all(d, a == b))))")
    assert not compile_selector(expr, STORED).ok
    assert compile_selector("device.attributes.all(a, device.attributes.all(b, a == b))", STORED).ok


def test_unknown_sizes_saturate() -> None:
    compiled = compile_selector("[1].map(x, string(x)).all(s, s.contains(s))", STORED)
    assert compiled.cost is not None and compiled.cost > MAX_COST


def test_entry_sizes_of_literals_flow_through_comprehensions() -> None:
    # cel-go tracks the size of a literal list's items into map() results: 'a' is one character,
    # so s.contains(s) costs 1 per item, not an unknown string's worth
    assert compile_selector("[1].map(x, 'a').all(s, s.contains(s))", STORED).cost == 40
