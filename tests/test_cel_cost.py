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


def test_cost_limit_is_reported_as_cel_go_does() -> None:
    compiled = compile_selector(EXPENSIVE, STORED)
    assert [(i.code, i.message) for i in compiled.issues] == [("cost", "too complex, exceeds cost limit")]


def test_four_nested_attribute_comprehensions_exceed_the_limit() -> None:
    expr = ("device.attributes.all(a, device.attributes.all(b, device.attributes.all(c, "
            "device.attributes.all(d, a == b))))")
    assert not compile_selector(expr, STORED).ok
    assert compile_selector("device.attributes.all(a, device.attributes.all(b, a == b))", STORED).ok


def test_unknown_sizes_saturate() -> None:
    compiled = compile_selector("[1].map(x, 'a').all(s, s.contains(s))", STORED)
    assert compiled.cost is not None and compiled.cost > MAX_COST
