"""CEL with declared variables (dralint.cel.declared): an admission policy's identifiers instead of
the selector's ``device``, their sizes for the estimate, and evaluation with bindings."""
from __future__ import annotations

import pytest

from dralint.cel import types as T
from dralint.cel.declared import ANY_PREFIX, ANY_SEGMENT, Declarations, Sizes, compile_declared
from dralint.cel.env import CelEnv
from dralint.cel.errors import CelRuntimeError, CostLimitExceeded

ENV = CelEnv(kube_minor=34)
DECLS = Declarations((("object", T.DYN), ("limit", T.INT)),
                     Sizes({("object", "items"): 10, (ANY_PREFIX, "name"): 20, ("object", "items", ANY_SEGMENT): 3}))


def test_declared_variables_are_read_from_their_bindings():
    program = compile_declared("object.items.filter(i, i.name.startsWith('a')).size() <= limit", ENV, DECLS)
    assert program.ok and program.output == T.BOOL
    assert program.evaluate({"object": {"items": [{"name": "ab"}, {"name": "b"}]}, "limit": 1}, 1000)[0] is True
    assert program.evaluate({"object": {"items": [{"name": "ab"}, {"name": "ac"}]}, "limit": 1}, 1000)[0] is False


def test_the_selectors_device_is_not_declared_beside_them():
    program = compile_declared("device.driver == 'x'", ENV, DECLS)
    assert not program.ok and "undeclared reference to 'device'" in program.error_text()


def test_a_type_error_is_found_before_evaluation():
    program = compile_declared("limit + 'a'", ENV, DECLS)
    assert not program.ok and program.error_text().startswith("compilation failed: ERROR: <input>:1:7: found no "
                                                              "matching overload for '_+_'")


def test_the_estimate_is_bounded_by_the_declared_sizes_and_unbounded_without_them():
    bounded = compile_declared("object.items.all(i, i.name.size() < 5)", ENV, DECLS)
    unbounded = compile_declared("object.other.all(i, i.name.size() < 5)", ENV, DECLS)
    assert bounded.cost is not None and bounded.cost < 100
    assert unbounded.cost == 2**64 - 1


def test_the_digits_of_an_int_bound_a_string_made_from_it():
    program = compile_declared("'item ' + string(limit) + ' of ' + object.items[0].name", ENV, DECLS)
    assert program.cost is not None and program.cost < 20


def test_evaluation_stops_at_the_budget_and_reports_runtime_errors():
    program = compile_declared("object.items.all(i, i.name.size() < 5)", ENV, DECLS)
    with pytest.raises(CostLimitExceeded):
        program.evaluate({"object": {"items": [{"name": "a"}] * 50}}, 10)
    with pytest.raises(CelRuntimeError, match="no such key: items"):
        program.evaluate({"object": {}}, 1000)
