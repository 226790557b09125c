"""How a judgement is told: the texts, details and allocations a report carries."""
from __future__ import annotations

from collections import Counter
from typing import Any, Callable

from ..convert import Canonical
from ..paths import FieldPath
from ..problems import Problem
from .explain import Explanation
from .fatal import FatalError
from .groups import Group
from .nodes import NodeSet
from .outcome import Outcome, Placed
from .report import FeasibilityReport


PLACEMENT_FIELDS = {"nodeName": "nodeName", "nodeSelector": "nodeSelector", "node": "affinity",
                     "taint": "tolerations", "cordoned": "tolerations"}


_REFUSAL_TEXT = {"nodeName": "are not its nodeName", "nodeSelector": "do not match its nodeSelector",
                 "node affinity": "do not match its required node affinity", "cordoned": "are cordoned",
                 "its allocated claims' node": "are not where its allocated claims are",
                 "the node of its shared claims": "are not where its shared claims were allocated"}


# The verbs of _REFUSAL_TEXT for one node: "1 node has", never "1 node have".
_SINGULAR = {"are": "is", "do": "does", "have": "has"}


def refusals(refused: Counter) -> str:
    """Why the nodes a pod may not run on refuse it, most common reason first."""
    if not refused:
        return "the cluster state has no nodes"
    parts = []
    for why, n in refused.most_common():
        text = _REFUSAL_TEXT.get(why) or f"have {why} that it does not tolerate"
        if n == 1:
            verb, _, rest = text.partition(" ")
            text = f"{_SINGULAR.get(verb, verb)} {rest}"
        parts.append(f"{n} {text}")
    total = sum(refused.values())
    return (f"none of the {total} nodes can run it: " if total != 1 else "the 1 node cannot run it: ") + \
        ", ".join(parts)


def placement_note(nodes: NodeSet) -> str:
    """How many of the nodes the pod may run on were searched, when its placement left some out."""
    if not nodes.refused:
        return ""
    return f" (on the {len(nodes.nodes)} of {len(nodes.nodes) + sum(nodes.refused.values())} nodes the pod can run on)"


def location(obj: Canonical) -> str:
    """``file:line`` of an object, for a message that names another one."""
    doc = obj.manifest.document
    pos = doc.locate(obj.manifest.base)
    return f"{doc.file}:{pos.line}"


def summary(outcome: Outcome) -> str:
    """The last line of a claim's search trace."""
    if outcome.fatal is not None:
        return f"result: error: {outcome.fatal.message}"
    if outcome.undecided:
        return f"result: undecided after {outcome.undecided} steps"
    if outcome.node is not None:
        return f"result: allocated on {outcome.node.name}"
    return f"result: cannot be allocated on any of {outcome.tried} nodes"


def request_details(why: Explanation, nodes: NodeSet) -> dict[str, Any]:
    """A finding's JSON details: the nodes tried and what each request found."""
    return {"nodes_tried": len(nodes.nodes), "requests": why.details}


def report_fatal(group: Group, exc: FatalError, linted: Callable[[Canonical], bool],
                  report: FeasibilityReport) -> None:
    """Report an error that stopped the search on the linted object it is about (else the group's owner)."""
    if exc.obj is not None and linted(exc.obj):
        if exc.compile_error:
            return  # the CEL check reports compile errors of linted objects
        report.problems.append((exc.obj, Problem(exc.rule, exc.path, exc.message)))
        return
    if exc.fallback is not None and linted(exc.fallback[0]):
        report.problems.append((exc.fallback[0], Problem(exc.rule, exc.fallback[1], exc.message)))
        return
    if linted(group.owner):
        member = next((m for m in group.members if exc.obj is m.obj), None)
        path = member.ref_path if member is not None and member.ref_path is not None else FieldPath()
        report.problems.append((group.owner, Problem(exc.rule, path, exc.message)))


def allocations(group: Group, placed: Placed, replica: int) -> list[dict[str, Any]]:
    """``--show-allocation`` entries of one replica: each claim's node and devices."""
    out: list[dict[str, Any]] = []
    outcome = placed.outcome
    if outcome.node is None:
        return out
    for m, picks in zip(placed.members, outcome.picks):
        devices: dict[str, list[str]] = {}
        for p in picks:
            devices.setdefault(p.request, []).append(p.device.label)
        entry: dict[str, Any] = {"claim": m.display, "node": outcome.node.name, "devices": devices}
        if group.is_workload:
            entry["pod"] = group.label
            if group.replicas > 1:
                entry["replica"] = replica + 1
        out.append(entry)
    return out
