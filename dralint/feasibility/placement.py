"""Where a pod may run at all, before any device is looked at: its ``nodeName``, ``nodeSelector``,
required node affinity, and tolerations against node taints (a cordoned node counts as tainted
``node.kubernetes.io/unschedulable:NoSchedule``), as kube-scheduler's NodeName, NodeAffinity,
TaintToleration and NodeUnschedulable filters decide. A pod that names its node skips those
filters; the kubelet still checks its node selector and affinity, and NoExecute taints evict it.

Labels and taints are only known for nodes given as Node objects; a node known only from a
slice's ``nodeName`` is assumed to admit every pod (docs/feasibility.md says so).
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Mapping

from .model import NodeTaint, Toleration
from .nodes import NodeView, selector_matches

UNSCHEDULABLE = NodeTaint("node.kubernetes.io/unschedulable", "", "NoSchedule")
_BLOCKING = ("NoSchedule", "NoExecute")
_EVICTING = ("NoExecute",)


@dataclass(frozen=True)
class Placement:
    """What a pod's spec says about nodes; ``key`` identifies equal placements."""

    node_name: str = ""
    node_selector: tuple[tuple[str, str], ...] = ()
    affinity: str = ""                                  # required node affinity (a NodeSelector), as JSON
    tolerations: tuple[Toleration, ...] = ()

    @property
    def free(self) -> bool:
        """Nothing restricts the nodes but taints."""
        return not (self.node_name or self.node_selector or self.affinity)

    def refuses(self, node: NodeView) -> str:
        """Why ``node`` cannot run the pod ("" when it can)."""
        if self.node_name and node.name != self.node_name and not node.placeholder:
            return "nodeName"
        if not node.known:
            return ""
        if self.node_selector and any(node.labels.get(k) != v for k, v in self.node_selector):
            return "nodeSelector"
        if self.affinity and not selector_matches(json.loads(self.affinity), node):
            return "node affinity"
        taints = node.taints + ((UNSCHEDULABLE,) if node.unschedulable else ())
        # A pod that names its node skips the scheduler's taint filter: the kubelet admits it, and
        # only the NoExecute taints evict it (a cordon is NoSchedule too).
        blocking = _EVICTING if self.node_name else _BLOCKING
        for taint in taints:
            if taint.effect in blocking and not any(t.tolerates(taint) for t in self.tolerations):
                return "cordoned" if taint == UNSCHEDULABLE else f"taint {taint.key}={taint.value}:{taint.effect}"
        return ""


def _dict(value: Any) -> dict:
    return value if isinstance(value, dict) else {}


def read_placement(pod_spec: Mapping[str, Any]) -> Placement:
    """The placement part of a pod spec (malformed fields read as absent; the schema reports them)."""
    selector = _dict(pod_spec.get("nodeSelector"))
    required = _dict(_dict(_dict(pod_spec.get("affinity")).get("nodeAffinity")).get(
        "requiredDuringSchedulingIgnoredDuringExecution"))
    tolerations = []
    for t in pod_spec.get("tolerations") or [] if isinstance(pod_spec.get("tolerations"), list) else []:
        if isinstance(t, dict):
            tolerations.append(Toleration(str(t.get("key") or ""), str(t.get("operator") or "Equal"),
                                          str(t.get("value") or ""), str(t.get("effect") or "")))
    node_name = pod_spec.get("nodeName")
    return Placement(node_name=node_name if isinstance(node_name, str) else "",
                     node_selector=tuple(sorted((str(k), str(v)) for k, v in selector.items())),
                     affinity=json.dumps(required, sort_keys=True) if required else "",
                     tolerations=tuple(tolerations))
