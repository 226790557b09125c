"""Judging in several processes gives what one process gives: the same findings, in the same
order, with the same allocations, whatever a child process does."""
from __future__ import annotations

import json
import os
import random

import pytest

from dralint.feasibility import FeasibilityOptions, judge
from dralint.feasibility import shards
from dralint.index import Index
from dralint.kube.releases import Release

from test_feasibility_fleet import GATES, _objects
from test_feasibility_search import CLASS, mini_cel

fork_only = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")


@fork_only
def test_judge_all_gives_every_result_in_order():
    assert shards.judge_all(50, lambda i: i * i, 3) == [i * i for i in range(50)]


@fork_only
def test_what_a_failing_child_does_not_deliver_is_judged_here():
    parent = os.getpid()

    def judge_one(i: int) -> int:
        if os.getpid() != parent:
            raise RuntimeError("a child that fails at once")
        return i + 1

    assert shards.judge_all(40, judge_one, 2) == [i + 1 for i in range(40)]


@fork_only
def test_results_a_child_names_wrongly_are_judged_again_here():
    parent = os.getpid()

    def decode(value: int) -> int:
        if value < 0:
            raise KeyError(value)   # an object the main process does not know
        return value

    judged_here: list[int] = []

    def judge_one(i: int) -> int:
        if os.getpid() == parent:
            judged_here.append(i)
            return i
        return -1

    assert shards.judge_all(40, judge_one, 2, decode=decode) == list(range(40))
    assert sorted(judged_here) == list(range(40))


@fork_only
def test_when_forking_is_refused_everything_is_judged_here(monkeypatch):
    # The second fork fails (a process limit): the child already started is stopped, and every item
    # is judged in this process.
    import multiprocessing
    from multiprocessing.context import ForkProcess

    start = ForkProcess.start
    calls: list[int] = []

    def refuse_the_second(process):
        calls.append(1)
        if len(calls) == 2:
            raise OSError("fork: Resource temporarily unavailable")
        start(process)

    monkeypatch.setattr(ForkProcess, "start", refuse_the_second)
    parent = os.getpid()
    assert shards.judge_all(50, lambda i: (i * i, os.getpid() == parent), 3) == [(i * i, True) for i in range(50)]
    assert len(calls) == 2 and not multiprocessing.active_children()


def test_one_process_judges_here_without_forking():
    parent = os.getpid()
    assert shards.judge_all(5, lambda i: os.getpid() == parent, 1) == [True] * 5


def _fleet(seed: int) -> tuple[list[str], list[str]]:
    """Twelve nodes of four devices, and 160 claims: most fit, some ask for more than a node has,
    some for a model no device has, some are constrained to one NUMA node."""
    rng = random.Random(seed)
    cluster = [CLASS]
    for n in range(12):
        devices = [{"name": f"d{i}", "attributes": {"numa": {"int": i // 2},
                                                     "model": {"string": rng.choice("ab")}}} for i in range(4)]
        cluster.append(json.dumps({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
                                   "metadata": {"name": f"s{n}"},
                                   "spec": {"driver": "gpu.example.com", "nodeName": f"node-{n}", "devices": devices,
                                            "pool": {"name": f"p{n}", "generation": 1, "resourceSliceCount": 1}}}))
    claims = []
    for c in range(160):
        exact: dict = {"deviceClassName": "gpu", "count": rng.choice([1, 2, 2, 3, 5])}
        if rng.random() < 0.3:
            exact["selectors"] = [{"cel": {"expression": 'device.attributes["gpu.example.com"].model == "'
                                           + rng.choice("abc") + '"'}}]
        devices: dict = {"requests": [{"name": "r0", "exactly": exact}]}
        if rng.random() < 0.3:
            devices["requests"].append({"name": "r1", "exactly": {"deviceClassName": "gpu", "count": 1}})
            devices["constraints"] = [{"matchAttribute": "gpu.example.com/numa"}]
        claims.append(json.dumps({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                                  "metadata": {"name": f"c{c:03d}", "namespace": "default"},
                                  "spec": {"devices": devices}}))
    return cluster, claims


def _judged(cluster: list[str], linted: list[str], processes: int):
    mine = _objects(linted, False)
    ids = {id(o) for o in mine}
    report = judge(Index.build(_objects(cluster, True) + mine), Release(37, GATES),
                   FeasibilityOptions(show_allocation=True, processes=processes), lambda o: id(o) in ids,
                   evaluate=mini_cel)
    return ([(o.manifest.display, p.rule, str(p.path), p.message, json.dumps(p.details, sort_keys=True))
             for o, p in report.problems], report.allocations)


@fork_only
@pytest.mark.parametrize("seed", [1, 2])
def test_two_processes_judge_as_one(seed):
    cluster, claims = _fleet(seed)
    alone = _judged(cluster, claims, 1)
    assert alone[0] and alone[1]   # some claims fit, some do not: both kinds travel back
    assert _judged(cluster, claims, 2) == alone


@fork_only
def test_out_of_time_is_told_once_for_every_process():
    cluster, claims = _fleet(3)
    mine = _objects(claims, False)
    ids = {id(o) for o in mine}
    report = judge(Index.build(_objects(cluster, True) + mine), Release(37, GATES),
                   FeasibilityOptions(processes=2, max_seconds=0), lambda o: id(o) in ids, evaluate=mini_cel)
    undecided = [(o.manifest.display, p.details) for o, p in report.problems if p.rule == "DRA709"]
    assert undecided == [("ResourceClaim default/c000", {"unjudged": 160})]
