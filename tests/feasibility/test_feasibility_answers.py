"""The selectors' answers for one node's devices alone equal the answers combined over the fleet.

A search asks ``Selection.answers_among`` for its node's devices: from the cache of combined
answers when it holds them, else device by device from the columns. Both ways must agree on every
device: errors, devices with binding conditions (with the feature on and off), forgotten devices,
and devices the columns never registered.
"""
from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dralint.feasibility.columns import ERROR
from dralint.feasibility.model import Alternative, read_device
from dralint.feasibility.selection import (DeviceClassInfo, Selection, cel_entry_problem, cel_evaluator,
                                           cel_required_driver)
from dralint.kube.releases import DEFAULT_MINOR, Release
from dralint.paths import FieldPath

RELEASE = Release(DEFAULT_MINOR, {})
DRIVER_OF = cel_required_driver(RELEASE)

EXPRESSIONS = [
    None,
    'device.attributes["fpga.example.com"].model == "u55c"',
    'device.attributes["fpga.example.com"].driverVersion.isGreaterThan(semver("1.2.0"))',
    'device.capacity["fpga.example.com"].memory.compareTo(quantity("32Gi")) >= 0',
    '"tier" in device.attributes["fpga.example.com"]',
    'device.driver == "gpu.example.com"',
]


def _alt(selectors: tuple[str | None, ...]) -> Alternative:
    return Alternative(name="r", parent="", class_name="c", selectors=selectors, mode="ExactCount", count=1,
                       admin_access=None, tolerations=(), capacity=None, has_capacity=False,
                       path=FieldPath(("spec",)))


@st.composite
def raw_device(draw: Any, i: int) -> dict:
    attrs: dict = {"model": {"string": draw(st.sampled_from(["u55c", "agilex7"]))},
                   "driverVersion": {"version": draw(st.sampled_from(["1.1.0", "1.3.0", "x"]))}}
    if draw(st.booleans()):
        attrs["tier"] = {"string": "gold"}
    raw = {"name": f"fpga-{i}", "attributes": attrs,
           "capacity": {"memory": {"value": draw(st.sampled_from(["16Gi", "64Gi", "12Q"]))}}}
    if draw(st.booleans()):
        raw["bindingConditions"] = ["ready"]
    return raw


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(["fpga.example.com", "gpu.example.com"]), min_size=1, max_size=10),
       st.lists(st.sampled_from(EXPRESSIONS), max_size=2), st.lists(st.sampled_from(EXPRESSIONS), max_size=2),
       st.booleans(), st.integers(0, 3), st.data())
def test_one_nodes_answers_equal_the_fleets(drivers: list[str], class_selectors: list[str | None],
                                            request_selectors: list[str | None], binding: bool, forgotten: int,
                                            data: Any) -> None:
    devices = [read_device(i, driver, "p", data.draw(raw_device(i)), ()) for i, driver in enumerate(drivers)]
    registered = devices[:-1] if len(devices) > 1 else devices   # the last one, unregistered
    cls, alt = DeviceClassInfo(None, "c", tuple(class_selectors)), _alt(tuple(request_selectors))  # type: ignore[arg-type]
    # The fleet's answers, and the node's worked out without them (a fresh selection caches none).
    fleet, alone = (Selection(cel_evaluator(RELEASE), binding, DRIVER_OF, cel_entry_problem) for _ in range(2))
    for selection in (fleet, alone):
        selection.columns.add(registered)
        if forgotten < len(registered) and len(registered) > 1:
            selection.columns.remove([registered[forgotten].uid])
    everything = fleet.answers(cls, alt)
    uids = [d.uid for d in devices]
    node, known = alone.answers_among(cls, alt, uids)
    assert isinstance(node, dict)
    cached, known_cached = fleet.answers_among(cls, alt, uids)
    assert known == known_cached == len(everything)
    for uid in uids:
        want = everything[uid] if uid < len(everything) else ERROR
        assert (node[uid] if uid < known else ERROR) == want
        assert (cached[uid] if uid < known_cached else ERROR) == want
