"""Selector answers worked out once per kind of device equal the answers device by device.

The fleet's columns evaluate an expression on one device per group of devices that look alike to
it (the attributes it names, plus whether the device's versions and capacities convert at all),
with the real CEL. On generated devices (valid and invalid versions and capacities, attributes
present or not) every column is compared with evaluating each device on its own, errors included.
"""
from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
import numpy as np

from dralint.feasibility.columns import ERROR, FALSE, TRUE, _firsts, _ranks
from dralint.feasibility.model import read_device
from dralint.feasibility.selection import (Selection, SelectorError, cel_entry_problem, cel_evaluator,
                                           cel_required_driver, names_read)
from dralint.kube.releases import DEFAULT_MINOR, Release

RELEASE = Release(DEFAULT_MINOR, {})
DRIVER_OF = cel_required_driver(RELEASE)

EXPRESSIONS = [
    'device.driver == "fpga.example.com" && "tier" in device.attributes["fpga.example.com"] && '
    'device.attributes["fpga.example.com"]["tier"] == "gold"',
    'device.attributes["fpga.example.com"].model == "u55c" && device.attributes["fpga.example.com"].index < 2',
    'device.attributes["fpga.example.com"].driverVersion.isGreaterThan(semver("1.2.0"))',
    'device.capacity["fpga.example.com"].memory.compareTo(quantity("32Gi")) >= 0',
    '"tier" in device.attributes["fpga.example.com"]',
    'device.driver == "gpu.example.com"',
]


@st.composite
def raw_device(draw, i: int) -> dict:
    attrs: dict = {"model": {"string": draw(st.sampled_from(["u55c", "agilex7"]))},
                   "index": {"int": draw(st.integers(0, 3))},
                   "driverVersion": {"version": draw(st.sampled_from(["1.1.0", "1.3.0", "1.3", "x"]))},
                   "uuid": {"string": f"u-{i}"}}
    if draw(st.booleans()):
        attrs["tier"] = {"string": draw(st.sampled_from(["gold", "silver"]))}
    capacity = {"memory": {"value": draw(st.sampled_from(["16Gi", "64Gi", "12Q"]))}}
    return {"name": f"fpga-{i}", "attributes": attrs, "capacity": capacity}


def _alone(evaluate, expression: str, device) -> int:
    try:
        return TRUE if evaluate(expression, device) else FALSE
    except SelectorError:
        return ERROR


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(["fpga.example.com", "gpu.example.com"]), min_size=1, max_size=12), st.data())
def test_columns_answer_like_each_device_alone(drivers, data):
    devices = [read_device(i, driver, "p", data.draw(raw_device(i)), ()) for i, driver in enumerate(drivers)]
    # The evaluator keeps each device's conversion by uid: one per example, as per run.
    evaluate, alone = cel_evaluator(RELEASE), cel_evaluator(RELEASE)
    selection = Selection(evaluate, False, DRIVER_OF, cel_entry_problem)
    selection.columns.add(devices)
    for expression in EXPRESSIONS:
        column = selection.columns.column(expression)
        for d in devices:
            want = _alone(alone, expression, d)
            if DRIVER_OF(expression) not in (None, d.key[0]):
                want = FALSE      # `device.driver == "x" && ...` is false before the rest fails
            assert column[d.uid] == want, (expression, d.raw)
            if want == ERROR:
                try:
                    alone(expression, d)
                except SelectorError as exc:
                    assert str(selection.columns.error(expression, d.uid)) == str(exc)


def test_a_literal_key_test_reads_that_key_only():
    assert names_read('"tier" in device.attributes["d"]') >= {"tier", "d"}
    assert names_read('x in device.attributes["d"]') is None


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 3000), max_size=300), st.sampled_from([1, 10**6]))
def test_numbering_without_a_sort_numbers_as_np_unique(values, scale):
    # Values spanning little (a table of presence) and much (np.unique itself) alike.
    array = np.array(values, np.int64) * scale
    _, first, inverse = np.unique(array, return_index=True, return_inverse=True)
    ranks = _ranks(array)
    assert ranks.tolist() == inverse.reshape(-1).tolist()
    assert _firsts(ranks).tolist() == first.tolist()
