"""An explanation that would search again exactly what the judge searched (a claim with one
constraint, on the same nodes, with nothing left out) takes the judge's "no node" instead: it must
say what searching says, and only for that question."""
from __future__ import annotations

import json
import math
from collections import Counter
from dataclasses import replace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dralint.feasibility import explain, search
from dralint.feasibility.explain import Explainer
from dralint.feasibility.judgement import Judge
from dralint.feasibility.model import ClaimSpec, read_claim
from dralint.feasibility.nodes import NodeSet
from dralint.feasibility.outcome import Outcome, Searched
from dralint.feasibility.picks import Budget
from dralint.feasibility.report import FeasibilityOptions
from dralint.feasibility.world import World
from dralint.index import Index
from dralint.kube.releases import Release

from test_feasibility_fleet import GATES, _objects, claims, cluster
from test_feasibility_search import CLASS, mini_cel


def _slice(n: int, memories: list[int]) -> str:
    devices = [{"name": f"d{i}", "attributes": {"memory": {"int": m}}} for i, m in enumerate(memories)]
    return json.dumps({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": f"s{n}"},
                       "spec": {"driver": "gpu.example.com", "nodeName": f"node-{n}", "devices": devices,
                                "pool": {"name": f"p{n}", "generation": 1, "resourceSliceCount": 1}}})


def _node(n: int) -> str:
    return json.dumps({"apiVersion": "v1", "kind": "Node", "metadata": {"name": f"node-{n}"}})


def _claim(name: str, count: int) -> str:
    # Two devices with one memory size: no node has two alike, though each has two devices.
    return json.dumps({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                       "metadata": {"name": name, "namespace": "default"},
                       "spec": {"devices": {
                           "requests": [{"name": "r", "exactly": {"deviceClassName": "gpu", "count": count}}],
                           "constraints": [{"requests": ["r"], "matchAttribute": "gpu.example.com/memory"}]}}})


def _judged() -> tuple[Judge, list[ClaimSpec], NodeSet]:
    cluster = [CLASS, *(_node(n) for n in range(3)), _slice(0, [40, 80, 96]), _slice(1, [80, 96]),
               _slice(2, [40, 48])]
    index = Index.build(_objects(cluster, True) + _objects([_claim("c", 2), _claim("d", 3)], False))
    world = World.from_index(index, Release(37, {}), mini_cel, by_name=True)
    nodes = world.node_list()
    node_set = NodeSet(nodes, world.order, world.unusable_slots()[world.order], "everywhere", Counter())
    specs = [read_claim(index.claims[("default", n)], f"default/{n}") for n in ("c", "d")]
    return Judge(world, FeasibilityOptions(), math.inf), specs, node_set


def _no_node(judge: Judge, spec: ClaimSpec, nodes: NodeSet) -> Outcome:
    out = judge.decide([spec], nodes, Budget(1_000_000, math.inf), None)
    assert out.node is None and out.fatal is None and not out.undecided
    return out


def _searches(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts the explanations' searches (each asks the precheck once)."""
    asked: list[int] = []
    must_search = explain.must_search

    def counted(*args, **kwargs):
        asked.append(1)
        return must_search(*args, **kwargs)
    monkeypatch.setattr(explain, "must_search", counted)
    return asked


def test_the_judges_answer_is_taken_and_says_what_searching_says(monkeypatch: pytest.MonkeyPatch) -> None:
    judge, (spec, _), nodes = _judged()
    out = _no_node(judge, spec, nodes)
    assert out.searched is not None and out.searched.steps < 1024
    asked = _searches(monkeypatch)
    searched = Explainer(judge.world, judge.counts, math.inf).claim(spec, nodes, out.failures)
    assert len(asked) == 2         # without the constraint, then with it
    asked.clear()
    taken = Explainer(judge.world, judge.counts, math.inf).claim(spec, nodes, out.failures, out.searched)
    assert len(asked) == 1         # with it: the judge's answer
    assert taken == searched
    assert "constraint matchAttribute `gpu.example.com/memory`" in taken.message
    # The explanation's own search finds no node, in no more steps than the judge's.
    made = _counted_budgets(monkeypatch)
    assert Explainer(judge.world, judge.counts, math.inf).search([spec], nodes) is False
    assert made[0].steps <= out.searched.steps


def test_only_the_same_question_takes_the_answer() -> None:
    judge, (spec, other), nodes = _judged()
    world = judge.world
    known = _no_node(judge, spec, nodes).searched
    assert known is not None
    ex = Explainer(world, judge.counts, math.inf)
    assert ex._answered(known, [spec], nodes, frozenset())
    assert not ex._answered(known, [other], nodes, frozenset())                      # another claim
    assert not ex._answered(known, [spec, spec], nodes, frozenset())                 # more claims
    assert not ex._answered(known, [spec], nodes, frozenset({"taints"}))             # a check left out
    assert not ex._answered(known, [spec], replace(nodes, key="elsewhere"), frozenset())   # other nodes
    assert not ex._answered(replace(known, steps=1024), [spec], nodes, frozenset())  # its clock may be read
    assert not Explainer(world, judge.counts, math.inf, exhaustive=True)._answered(known, [spec], nodes, frozenset())
    assert not ex._answered(replace(known, shapes=(None,)), [replace(spec, shape=None)], nodes, frozenset())
    device = next(d for d in world.selection.columns.devices if d is not None)
    world.hold({device.key})                                                         # the fleet changed
    assert not ex._answered(known, [spec], nodes, frozenset())
    world.release({device.key})
    assert ex._answered(known, [spec], nodes, frozenset())
    assert Searched.of([spec], nodes, world, 0).asks([spec], nodes, world)


def test_no_record_under_a_trace_or_exhaustive() -> None:
    judge, (spec, _), nodes = _judged()
    lines: list[str] = []
    assert judge.decide([spec], nodes, Budget(1_000_000, math.inf), lines.append).searched is None
    exhaustive = Judge(judge.world, FeasibilityOptions(), math.inf, exhaustive=True)
    assert exhaustive.decide([spec], nodes, Budget(1_000_000, math.inf), None).searched is None


def _counted_budgets(monkeypatch: pytest.MonkeyPatch) -> list[Budget]:
    """The explanations' budgets, without a limit: how many steps their searches take."""
    made: list[Budget] = []

    class Counted(Budget):
        def __init__(self, max_steps: int, deadline: float) -> None:
            super().__init__(10 ** 9, deadline)
            made.append(self)
    monkeypatch.setattr(explain, "Budget", Counted)
    return made


def _never_more_steps(state: list[str], mine: list[str], cut_at_once: bool) -> None:
    index = Index.build(_objects(state, True) + _objects(mine, False))
    world = World.from_index(index, Release(37, GATES), mini_cel, by_name=True)
    judge = Judge(world, FeasibilityOptions(), math.inf)
    nodes = world.node_list()
    node_set = NodeSet(nodes, world.order, world.unusable_slots()[world.order], "everywhere", Counter())
    with pytest.MonkeyPatch.context() as monkeypatch:
        if cut_at_once:
            monkeypatch.setattr(search, "PRUNE_AFTER", 0)
        made = _counted_budgets(monkeypatch)
        for (namespace, name), obj in index.claims.items():
            spec = read_claim(obj, f"{namespace}/{name}")
            out = judge.decide([spec], node_set, Budget(1_000_000, math.inf), None)
            if out.node is not None or out.fatal is not None or out.undecided:
                continue
            assert out.searched is not None
            made.clear()
            assert Explainer(world, judge.counts, math.inf).search([spec], node_set) is False
            assert made[0].steps <= out.searched.steps


# The judge's "no node" is taken when its steps are few: the explanation's own search, on the nodes
# its precheck leaves, must find no node in no more steps, whatever the fleet and the claims.
# Most drawn claims fit or are left out everywhere by the precheck: more examples than FEW find searches.
test_the_explanations_search_never_takes_more_steps = settings(
    max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])(
    given(cluster(), claims(), st.booleans())(_never_more_steps))
