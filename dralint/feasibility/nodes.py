"""The nodes a claim could land on, and node selection as the scheduler matches it.

When the node list is known (the webhook's watch lists every Node; a cluster state with Node
objects), the nodes are exactly the Node objects: the scheduler filters only the nodes it has, so a
slice whose ``nodeName`` has no Node object (a node deleted, a name nobody registered) gives
nothing, and node selectors and ``allNodes`` reach only the nodes there are. Otherwise nodes come
from the node names that slices mention, and placeholders stand in where no name is: one that every
``allNodes`` slice reaches, and one per distinct node selector that is assumed to match it (a
cluster dump without Node objects should not make network-attached devices unreachable).
"""
from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

import numpy as np

from .model import NodeTaint, Slice


@dataclass(frozen=True)
class NodeView:
    name: str
    labels: Mapping[str, str] = field(default_factory=dict)
    assumed_selectors: frozenset[str] = frozenset()   # placeholders: selectors taken to match
    taints: tuple[NodeTaint, ...] = ()
    unschedulable: bool = False                       # cordoned (spec.unschedulable)
    known: bool = False                               # a Node object was given (labels and taints are real)

    @property
    def placeholder(self) -> bool:
        return self.name.startswith("<")


def selector_key(selector: Mapping[str, Any]) -> str:
    """A stable spelling of a node selector (identity for placeholder nodes)."""
    return json.dumps(selector, sort_keys=True, default=str)


def _requirement(req: Any, value_of: Mapping[str, str], fields: bool) -> bool:
    if not isinstance(req, dict):
        return False
    key, op = req.get("key"), req.get("operator")
    values = [v for v in req.get("values") or [] if isinstance(v, str)] if isinstance(req.get("values"), list) else []
    if not isinstance(key, str):
        return False
    present = key in value_of
    if fields and (key != "metadata.name" or op not in ("In", "NotIn")):
        return False  # the scheduler rejects such a selector; nothing matches
    if op == "In":
        return present and value_of[key] in values
    if op == "NotIn":
        return not present or value_of[key] not in values
    if op == "Exists":
        return present
    if op == "DoesNotExist":
        return not present
    if op in ("Gt", "Lt") and present and len(values) == 1:
        try:
            have, want = int(value_of[key]), int(values[0])
        except ValueError:
            return False
        return have > want if op == "Gt" else have < want
    return False


def selector_matches(selector: Mapping[str, Any] | None, node: NodeView) -> bool:
    """Node affinity semantics: terms are ORed, requirements in a term ANDed, an empty term matches nothing."""
    if not isinstance(selector, dict):
        return False
    if node.assumed_selectors:
        return selector_key(selector) in node.assumed_selectors
    fields = {"metadata.name": node.name}
    for term in selector.get("nodeSelectorTerms") or []:
        if not isinstance(term, dict):
            continue
        exprs = term.get("matchExpressions") or []
        flds = term.get("matchFields") or []
        if not exprs and not flds:
            continue
        if all(_requirement(r, node.labels, False) for r in exprs) and all(_requirement(r, fields, True) for r in flds):
            return True
    return False


def node_matches(node: NodeView, node_name: str, all_nodes: bool, selector: Mapping[str, Any] | None) -> bool:
    """``NodeMatches``: a node name, else all nodes, else a node selector; nothing set matches nothing."""
    if node_name:
        return node.name == node_name
    if all_nodes:
        return True
    if selector is not None:
        return selector_matches(selector, node)
    return False


def _labels(obj: Mapping[str, Any]) -> dict[str, str]:
    meta = obj.get("metadata")
    labels = meta.get("labels") if isinstance(meta, dict) else None
    return {str(k): str(v) for k, v in labels.items()} if isinstance(labels, dict) else {}


def node_view(name: str, obj: Mapping[str, Any] | None) -> NodeView:
    """A node as placement and node selectors see it; ``obj`` is its Node object, if given."""
    if obj is None:
        return NodeView(name)
    spec = obj.get("spec")
    spec = spec if isinstance(spec, dict) else {}
    taints = []
    for t in spec.get("taints") or [] if isinstance(spec.get("taints"), list) else []:
        if isinstance(t, dict) and isinstance(t.get("key"), str):
            taints.append(NodeTaint(t["key"], str(t.get("value") or ""), str(t.get("effect") or "")))
    return NodeView(name, _labels(obj), taints=tuple(taints), unschedulable=spec.get("unschedulable") is True,
                    known=True)


def candidate_nodes(node_objects: Mapping[str, Mapping[str, Any]], slices: Iterable[Slice],
                    only: str | None, views: dict[str, tuple[Any, NodeView]] | None = None,
                    known: bool = False) -> list[NodeView]:
    """The nodes to judge on, sorted by name; ``only`` restricts to one (``--node``).

    ``known``: ``node_objects`` is the cluster's whole node list (none left out, none more): the
    node names slices mention are not nodes by themselves, and no placeholder stands in, so an
    empty list means no node at all. ``views``: each node's view with the object it was read from,
    reused while the object is the same one and brought up to date here (a world kept current reads
    only the Nodes that changed).
    """
    if only:
        return [node_view(only, node_objects.get(only))]
    names = set(node_objects)
    selectors: dict[str, Mapping[str, Any]] = {}
    for s in () if known else slices:
        if s.node_name:
            names.add(s.node_name)
        if s.node_selector is not None:
            selectors[selector_key(s.node_selector)] = s.node_selector
        for d in s.devices if s.per_device else ():
            if d.node_name:
                names.add(d.node_name)
            if d.node_selector is not None:
                selectors[selector_key(d.node_selector)] = d.node_selector
    if views is None:
        nodes = [node_view(n, node_objects.get(n)) for n in sorted(names)]
    else:
        kept = dict(views)
        views.clear()
        for n in sorted(names):
            obj = node_objects.get(n)
            have = kept.get(n)
            views[n] = have if have is not None and have[0] is obj else (obj, node_view(n, obj))
        nodes = [view for _, view in views.values()]
    if not node_objects and not known:
        # Without Node objects nothing says which nodes a selector reaches: assume one node per selector.
        nodes += [NodeView(f"<a node matching selector {i + 1}>", assumed_selectors=frozenset({k}))
                  for i, k in enumerate(sorted(selectors))]
    if not nodes and not known:
        nodes.append(NodeView("<any node>"))
    return nodes


@dataclass(frozen=True)
class NodeSet:
    """The nodes a pod may run on, in order, with their slots in the fleet's arrays."""

    nodes: list[NodeView]
    slots: np.ndarray
    unusable: np.ndarray          # per node: it sees an incomplete or invalid pool
    key: Any
    refused: Counter
