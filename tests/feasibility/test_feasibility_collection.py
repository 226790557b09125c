"""The feasibility stage turns the garbage collector off while it builds the fleet view and judges
(neither makes garbage to speak of), and sets what it made aside from young collections at its end;
its callers (the language server, the webhook) find the collector as they left it."""
from __future__ import annotations

import gc

import pytest

from dralint.feasibility import FeasibilityOptions, judge, prepare
from dralint.feasibility.judgement import Judge
from dralint.index import Index

from test_feasibility_prepared import CLAIM, RELEASE, _slice
from test_feasibility_fleet import _objects
from test_feasibility_search import CLASS


def _index() -> tuple[Index, list]:
    claims = _objects([CLAIM], False)
    return Index.build(_objects([CLASS, _slice("node-a", "a100")], True) + claims), claims


@pytest.fixture
def collector():
    threshold, enabled = gc.get_threshold(), gc.isenabled()
    yield
    gc.unfreeze()
    gc.set_threshold(*threshold)
    gc.enable() if enabled else gc.disable()


@pytest.mark.parametrize("enabled", [True, False])
def test_judging_and_preparing_leave_the_collector_as_they_found_it(collector, enabled):
    index, claims = _index()
    gc.unfreeze()
    gc.set_threshold(1234, 7, 3)
    gc.enable() if enabled else gc.disable()
    report = judge(index, RELEASE, FeasibilityOptions(), lambda o: any(o is c for c in claims))
    prepare(index, RELEASE, None)
    assert [p.rule for _, p in report.problems] == ["DRA701"]
    assert gc.get_threshold() == (1234, 7, 3)
    assert gc.isenabled() is enabled
    assert gc.get_freeze_count() == 0      # the view is handed back to the collector: it can be freed


def test_a_caller_s_frozen_objects_stay_frozen(collector):
    index, claims = _index()
    kept = [[i] for i in range(100)]
    gc.freeze()
    frozen = gc.get_freeze_count()
    assert frozen >= len(kept)
    judge(index, RELEASE, FeasibilityOptions(), lambda o: any(o is c for c in claims))
    prepare(index, RELEASE, None)
    assert gc.get_freeze_count() == frozen
    assert gc.isenabled()



def test_the_collector_is_off_while_judging(collector, monkeypatch):
    index, claims = _index()
    gc.enable()
    seen: list[bool] = []
    alone = Judge.alone

    def judged(self: Judge, *args: object) -> object:
        seen.append(gc.isenabled())
        return alone(self, *args)

    monkeypatch.setattr(Judge, "alone", judged)
    report = judge(index, RELEASE, FeasibilityOptions(), lambda o: any(o is c for c in claims))
    assert [p.rule for _, p in report.problems] == ["DRA701"]
    assert seen == [False]
    assert gc.isenabled()
