"""A device's shape as the columns register it: entries of one typed value are made once and shared
between devices, and never confused; capacities read from one quantity are shared too."""
from __future__ import annotations

from dralint.feasibility.columns import Columns
from dralint.feasibility.model import read_device, read_slice, shape_entry
from dralint.feasibility.selection import SelectorError, cel_entry_problem


def _raw(**attributes: object) -> dict:
    return {"name": "d", "attributes": attributes, "capacity": {"memory": {"value": "80Gi"}}}


def _columns(checked: bool = True) -> Columns:
    return Columns(lambda expr, device: True, SelectorError, lambda expr: None, lambda expr: None,
                   cel_entry_problem if checked else None)


def _named(columns: Columns, driver: str, *raws: dict) -> list[dict]:
    devices = [read_device(i, driver, "p", raw, ()) for i, raw in enumerate(raws, start=len(columns.devices))]
    columns.add(devices)
    return [columns._named[d.uid] for d in devices]


def test_equal_entries_are_shared_between_devices() -> None:
    first, second = _named(_columns(), "gpu.example.com", _raw(model={"string": "a100"}), _raw(model={"string": "a100"}))
    assert first == second
    assert first["model"] is second["model"] and first["memory"] is second["memory"]


def test_values_equal_in_python_but_not_to_cel_stay_apart() -> None:
    named = _named(_columns(), "gpu.example.com", *(_raw(index={"int": value}) for value in (1, True, 1.0)))
    assert [type(n["index"][2][0][1]) for n in named] == [int, bool, float]


def test_the_same_name_under_another_driver_is_another_entry() -> None:
    columns = _columns()
    (one,), (two,) = _named(columns, "a.example.com", _raw(model={"string": "x"})), \
        _named(columns, "b.example.com", _raw(model={"string": "x"}))
    assert one["model"][0] == "attributes:a.example.com" and two["model"][0] == "attributes:b.example.com"


def test_entries_read_before_change_no_shape() -> None:
    raw = _raw(model={"string": "a100"}, index={"int": 3}, ver={"version": "1.2.3"}, odd={"a": 1, "b": 2})
    for checked in (True, False):
        kept, fresh = _columns(checked), _columns(checked)
        _named(kept, "gpu.example.com", _raw(model={"string": "a100"}, index={"int": 3}), raw)
        _named(fresh, "gpu.example.com", raw)
        inverse = [{code: key for key, code in c._interned.items()} for c in (kept, fresh)]
        assert inverse[0][int(kept._base[1])] == inverse[1][int(fresh._base[0])]
        assert kept._named[1] == fresh._named[0]


def test_an_id_in_two_domains_sees_both_entries_in_order() -> None:
    (named,) = _named(_columns(), "gpu.example.com", _raw(model={"string": "a"}, **{"gpu.example.com/model": {"string": "b"}}))
    assert named["model"] == (shape_entry("gpu.example.com", "attributes", "model", {"string": "a"}),
                              shape_entry("gpu.example.com", "attributes", "gpu.example.com/model", {"string": "b"}))


def test_the_base_tells_a_version_that_does_not_convert() -> None:
    columns = _columns()
    _named(columns, "gpu.example.com", _raw(v={"version": "1.2.3"}), _raw(v={"version": "1.2.4"}), _raw(v={"version": "x"}))
    good, other, bad = (int(b) for b in columns._base[:3])
    assert good == other != bad


def test_capacities_read_from_one_quantity_are_one_record() -> None:
    class Obj:
        name = "s"
        value = {"spec": {"driver": "d", "pool": {"name": "p"}, "devices": [
            {"name": "a", "capacity": {"m": {"value": "1Gi"}, "n": {"value": "1024Mi"}}},
            {"name": "b", "capacity": {"m": {"value": "1Gi"}, "n": {"value": "2Gi", "requestPolicy": {"default": "1Gi"}}}},
            {"name": "c", "capacity": {"m": "1Gi", "n": {"value": 5}}}]}}
    a, b, c = read_slice(Obj(), 0, {}).devices  # type: ignore[arg-type]
    assert a.capacity["m"] is a.capacity["n"] is b.capacity["m"]
    assert b.capacity["n"].value == (2 << 30) * 10**9 and b.capacity["n"].policy is not None
    assert c.capacity["m"].value == 0 and c.capacity["n"].value == 5 * 10**9


def test_entries_shared_as_read_give_what_copies_give() -> None:
    # A file's equal entries are one object (source/sharing.py); the columns look them up as objects
    # first, and make an unchecked entry's record from another value's: both must change nothing.
    model, healthy, version = {"string": "a100"}, {"bool": True}, {"version": "1.2.3"}

    def raws(share: bool) -> list[dict]:
        pick = (lambda value: value) if share else (lambda value: dict(value))
        return [{"name": f"d{i}", "attributes": {"model": pick(model), "healthy": pick(healthy), "ver": pick(version),
                                                  "uuid": {"string": f"u-{i}"}, "index": {"int": i}},
                 "capacity": {"memory": pick({"value": "80Gi"}) if share else {"value": "80Gi"}}} for i in range(6)]

    for checked in (True, False):
        shared, copied = _columns(checked), _columns(checked)
        assert _named(shared, "gpu.example.com", *raws(True)) == _named(copied, "gpu.example.com", *raws(False))
        assert [shared._base.tolist(), shared._driver.tolist()] == [copied._base.tolist(), copied._driver.tolist()]
        for ident in ("model", "uuid", "index", "ver", "memory", "absent"):
            assert shared._attr_column(ident).tolist() == copied._attr_column(ident).tolist()
        assert shared._interned == copied._interned
