"""A device's shape: entries of one typed value are made once and shared, and never confused."""
from __future__ import annotations

from dralint.feasibility.model import device_shape


def _raw(**attributes: object) -> dict:
    return {"name": "d", "attributes": attributes, "capacity": {"memory": {"value": "80Gi"}}}


def test_equal_entries_are_shared_between_devices() -> None:
    entries: dict = {}
    first = device_shape("gpu.example.com", _raw(model={"string": "a100"}), entries)
    second = device_shape("gpu.example.com", _raw(model={"string": "a100"}), entries)
    assert first == second
    assert all(a is b for a, b in zip(first[:-1], second[:-1]))  # the last: allowMultipleAllocations


def test_values_equal_in_python_but_not_to_cel_stay_apart() -> None:
    entries: dict = {}
    shapes = [device_shape("gpu.example.com", _raw(index={"int": value}), entries) for value in (1, True, 1.0)]
    values = [next(e[2] for e in shape if e[1] == "index") for shape in shapes]
    assert [type(v[0][1]) for v in values] == [int, bool, float]


def test_the_same_name_under_another_driver_is_another_entry() -> None:
    entries: dict = {}
    one = device_shape("a.example.com", _raw(model={"string": "x"}), entries)
    two = device_shape("b.example.com", _raw(model={"string": "x"}), entries)
    assert [e[0] for e in one if e[1] == "model"] == ["attributes:a.example.com"]
    assert [e[0] for e in two if e[1] == "model"] == ["attributes:b.example.com"]


def test_entries_read_before_change_no_shape() -> None:
    raw = _raw(model={"string": "a100"}, index={"int": 3}, ver={"version": "1.2.3"}, odd={"a": 1, "b": 2})
    entries: dict = {}
    device_shape("gpu.example.com", _raw(model={"string": "a100"}, index={"int": 3}), entries)
    assert device_shape("gpu.example.com", raw, entries) == device_shape("gpu.example.com", raw, {})
