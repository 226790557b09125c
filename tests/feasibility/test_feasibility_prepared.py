"""A fleet view built before the stage (``prepare``, as a ``-j`` run's main process builds it while
its workers judge objects) serves the judgement of that very index alone, and changes no verdict."""
from __future__ import annotations

import json

from dralint.feasibility import FeasibilityOptions, judge, prepare
from dralint.feasibility import world as world_module
from dralint.index import Index
from dralint.kube.releases import Release

from test_feasibility_fleet import GATES, _objects
from test_feasibility_search import CLASS

RELEASE = Release(37, GATES)


def _slice(node: str, model: str) -> str:
    return json.dumps({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": f"{node}-gpus"},
                       "spec": {"driver": "gpu.example.com", "nodeName": node,
                                "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
                                "devices": [{"name": "gpu-0", "attributes": {"model": {"string": model}}}]}})


CLAIM = """
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: wants-h100, namespace: default}
spec:
  devices:
    requests:
    - name: gpu
      exactly:
        deviceClassName: gpu
        selectors:
        - cel: {expression: 'device.attributes["gpu.example.com"].model == "h100"'}
"""


def _judged(index: Index, claims: list, builds: list, monkeypatch, **kwargs) -> list[tuple[str, str]]:
    ids = {id(o) for o in claims}
    from_index = world_module.World.from_index.__func__
    monkeypatch.setattr(world_module.World, "from_index",
                        classmethod(lambda cls, *a, **k: builds.append(1) or from_index(cls, *a, **k)))
    report = judge(index, RELEASE, FeasibilityOptions(node=kwargs.pop("node", None)), lambda o: id(o) in ids,
                   **kwargs)
    monkeypatch.undo()
    return [(p.rule, p.message) for _, p in report.problems]


def test_the_view_prepared_for_the_index_is_used_and_changes_nothing(monkeypatch):
    claims = _objects([CLAIM], False)
    index = Index.build(_objects([CLASS, _slice("node-a", "a100")], True) + claims)
    alone: list = []
    expected = _judged(index, claims, alone, monkeypatch)
    assert expected and expected[0][0] == "DRA701" and alone == [1]
    prepared = prepare(index, RELEASE, None)
    builds: list = []
    assert _judged(index, claims, builds, monkeypatch, prepared=prepared) == expected
    assert builds == []


def test_a_view_prepared_for_another_index_or_node_is_not_used(monkeypatch):
    claims = _objects([CLAIM], False)
    cluster = _objects([CLASS, _slice("node-a", "a100")], True)
    before = Index.build(cluster + claims)
    # The slice the claim needs comes with the index judged (as when the index the view was built
    # from kept a refused object out): the verdict is the judged index's, not the view's.
    after = Index.build(cluster + _objects([_slice("node-b", "h100")], True) + claims)
    builds: list = []
    assert _judged(after, claims, builds, monkeypatch, prepared=prepare(before, RELEASE, None)) == []
    assert builds == [1]
    builds.clear()
    # Built for every node, asked for one: the stage builds the view of that node.
    _judged(after, claims, builds, monkeypatch, prepared=prepare(after, RELEASE, None), node="node-b")
    assert builds == [1]
