"""Groups judged ahead (a ``-j`` run starts on its fleet view before the checks are done) give the
findings that judging after the checks gives: a judgement made ahead stands only for the same
question, asked with the same answers to "is this object linted?"."""
from __future__ import annotations

import json
import os

import pytest

from dralint.feasibility import FeasibilityOptions, judge, judge_ahead, prepare
from dralint.feasibility import ahead as ahead_module
from dralint.index import Index
from dralint.kube.releases import Release

from test_feasibility_fleet import GATES, _objects
from test_feasibility_shards import _fleet

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")

RELEASE = Release(37, GATES)
OPTIONS = FeasibilityOptions(show_allocation=True, processes=2)
# A class whose selector fails on every device: the allocator's error is told on the class when it
# is linted, else on the claim that asked for it.
RISKY_CLASS = """
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: risky}
spec:
  selectors:
  - cel: {expression: 'device.attributes["gpu.example.com"].missing == 1'}
"""


def _risky_claim(n: int) -> str:
    return json.dumps({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                       "metadata": {"name": f"risky-{n}", "namespace": "default"},
                       "spec": {"devices": {"requests": [{"name": "r", "exactly": {"deviceClassName": "risky"}}]}}})


def _index() -> tuple[Index, list, object]:
    cluster, claims = _fleet(4)
    objects = _objects(cluster + [RISKY_CLASS] + claims + [_risky_claim(n) for n in range(8)], False)
    risky = next(o for o in objects if o.kind == "DeviceClass" and o.name == "risky")
    return Index.build(objects), objects, risky


def _findings(report) -> list[tuple]:
    return [(o.manifest.display, p.rule, str(p.path), p.message) for o, p in report.problems]


def _judged(index: Index, linted_ids: set[int], ahead_ids: set[int] | None, monkeypatch) -> tuple[list, list, int]:
    """The findings and allocations of judging ``linted_ids``, with groups judged ahead as if
    ``ahead_ids`` were linted (none when None); and how many judgements made ahead stood."""
    stood: list[int] = []
    take = ahead_module.Ahead.take
    monkeypatch.setattr(ahead_module.Ahead, "take", lambda self, *a: stood.append(len(r := take(self, *a))) or r)
    prepared = prepare(index, RELEASE, None)
    ahead = judge_ahead(prepared.world, index, OPTIONS, ahead_ids) if ahead_ids is not None else None
    try:
        report = judge(index, RELEASE, OPTIONS, lambda o: id(o) in linted_ids, prepared=prepared, ahead=ahead)
    finally:
        if ahead is not None:
            ahead.cancel()
    monkeypatch.undo()
    return _findings(report), report.allocations, sum(stood)


def test_judgements_made_ahead_stand_for_the_same_question(monkeypatch):
    index, objects, _ = _index()
    every = {id(o) for o in objects}
    expected = _judged(index, every, None, monkeypatch)
    assert {rule for _, rule, _, _ in expected[0]} >= {"DRA701", "DRA702"} and expected[1]
    got = _judged(index, every, every, monkeypatch)
    assert got[:2] == expected[:2]
    assert got[2] == 168          # every claim: none judged again
    assert expected[2] == 0


def test_a_judgement_that_asked_about_an_object_now_not_linted_is_made_again(monkeypatch):
    # The class turns out to have an error, so it is not linted: its selector's failure is told on
    # each claim asking for it, not on the class, as ahead.
    index, objects, risky = _index()
    every = {id(o) for o in objects}
    linted = every - {id(risky)}
    expected = _judged(index, linted, None, monkeypatch)
    assert expected[0] != _judged(index, every, None, monkeypatch)[0]
    assert sum(1 for name, rule, _, _ in expected[0] if rule == "DRA702" and "risky-" in name) == 8
    got = _judged(index, linted, every, monkeypatch)
    assert got[:2] == expected[:2]
    assert got[2] == 160          # the eight claims of the class were judged again


def test_groups_not_judged_or_formed_otherwise_are_left_to_the_stage(monkeypatch):
    # Claims that turn out to have errors are not judged at all; nothing made ahead is told of them.
    index, objects, _ = _index()
    every = {id(o) for o in objects}
    left_out = {id(o) for o in objects if o.kind == "ResourceClaim" and o.name in {"c000", "c001", "risky-0"}}
    expected = _judged(index, every - left_out, None, monkeypatch)
    assert not any(name.endswith(("/c000", "/c001", "/risky-0")) for name, _, _, _ in expected[0])
    got = _judged(index, every - left_out, every, monkeypatch)
    assert got[:2] == expected[:2]
    assert got[2] == 165


def test_no_judging_ahead_when_a_verdict_could_depend_on_when_or_what_else():
    index, objects, _ = _index()
    world = prepare(index, RELEASE, None).world
    every = {id(o) for o in objects}
    for options in (FeasibilityOptions(processes=1), FeasibilityOptions(processes=2, together=True),
                    FeasibilityOptions(processes=2, max_seconds=60)):
        assert judge_ahead(world, index, options, every) is None


def test_cancelled_judging_ahead_stops_its_processes():
    index, objects, _ = _index()
    ahead = judge_ahead(prepare(index, RELEASE, None).world, index, OPTIONS, {id(o) for o in objects})
    assert ahead is not None and ahead.shards is not None
    processes = [process for _, process in ahead.shards._children]
    ahead.cancel()
    assert ahead.shards is None and processes and not any(p.is_alive() for p in processes)


def _lone_claim() -> str:
    """A claim whose filter (its own selector) no other claim asks."""
    selector = {"cel": {"expression": 'device.attributes["gpu.example.com"].model == "lone"'}}
    return json.dumps({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                       "metadata": {"name": "lone", "namespace": "default"},
                       "spec": {"devices": {"requests": [{"name": "r", "exactly": {
                           "deviceClassName": "gpu", "selectors": [selector]}}]}}})


def _counted(world, groups) -> dict[str, bool]:
    """Per claim's first request, whether its filter is counted now."""
    from dralint.feasibility.counts import filter_key
    out = {}
    for group in groups:
        for member in group.members:
            alt = member.spec.requests[0].alternatives[0]
            out[member.display] = filter_key(alt, world.classes[alt.class_name].selectors) in world.counts._filters
    return out


def test_while_the_other_processes_are_busy_the_filters_several_groups_ask_are_counted_before_forking():
    cluster, claims = _fleet(4)
    objects = _objects(cluster + claims + [_lone_claim()], False)
    index = Index.build(objects)
    world = prepare(index, RELEASE, None).world
    groups = ahead_module.build_groups(index, lambda obj: True)
    ahead_module.share_first(world, groups, lambda: True)
    counted = _counted(world, groups)
    assert counted.pop("default/lone") is False          # asked by one group: left to whoever judges it
    assert all(counted.values()) and len(counted) == 160


def test_with_the_other_processes_done_nothing_is_read_or_counted_before_forking():
    index, objects, _ = _index()
    world = prepare(index, RELEASE, None).world
    groups = ahead_module.build_groups(index, lambda obj: True)
    ahead_module.share_first(world, groups, lambda: False)
    assert not any("spec" in vars(m) for g in groups for m in g.members)
    assert len(world.counts._filters) == 0


def test_counting_before_forking_stops_once_the_other_processes_are_done():
    index, objects, _ = _index()
    world = prepare(index, RELEASE, None).world
    groups = ahead_module.build_groups(index, lambda obj: True)
    looks = iter([True] * 2)
    ahead_module.share_first(world, groups, lambda: next(looks, False))
    read = sum("spec" in vars(m) for g in groups for m in g.members)
    assert read == 2 * ahead_module._READ_BETWEEN_LOOKS and len(world.counts._filters) == 0


def test_judgements_made_ahead_after_counting_first_are_the_same(monkeypatch):
    index, objects, _ = _index()
    every = {id(o) for o in objects}
    expected = _judged(index, every, None, monkeypatch)
    share = ahead_module.share_first
    monkeypatch.setattr(ahead_module, "share_first", lambda world, groups, busy: share(world, groups, lambda: True))
    got = _judged(index, every, every, monkeypatch)
    assert got == (expected[0], expected[1], 168)
