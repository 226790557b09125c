"""A ResourceSlice's own fields: driver, pool, node selection (exactly one way, or per device),
immutability on update, and the node operations its devices let the kubelet skip."""
from __future__ import annotations

from typing import Any, Iterator

from ...kube.releases import Release
from ...paths import FieldPath
from ...problems import Problem
from ..base import p
from ..fields import FIELD_IMMUTABLE, NODE_NAME_INVALID, driver_problems, node_name_problems, pool_name_problems
from ..formats import driver_name_errors
from ..nodeselector import ONE_TERM, node_selector_problems

POOL_COUNTS_INVALID = "DRA402"
NODE_SELECTION_EXCLUSIVE = "DRA403"
FLAG_FALSE = "DRA407"
DRIVER_UPPERCASE = "DRA426"
SKIP_NODE_OPERATIONS_INVALID = "DRA427"

_PER_DEVICE_NODE_SELECTION_SINCE = 33   # perDeviceNodeSelection joins the exactly-one-of set
_SKIP_PREPARE, _SKIP_UNPREPARE, _SKIP_ALL = "NodePrepareResources", "NodeUnprepareResources", "*"


def slice_driver_problems(spec: dict) -> Iterator[Problem]:
    """``spec.driver``: a valid driver name, in lower case."""
    driver = spec.get("driver", "")
    if isinstance(driver, str):
        yield from driver_problems(driver, p("spec", "driver"))
        if driver != driver.lower() and not driver_name_errors(driver):
            yield Problem(DRIVER_UPPERCASE, p("spec", "driver"),
                          f"driver {driver!r} has upper-case letters; driver names should be lowercase (the API "
                          "server accepts them but warns, and other components compare names exactly): use "
                          f"{driver.lower()!r}")


def skip_node_operations_problems(operations: Any, path: FieldPath) -> Iterator[Problem]:
    """``skipNodeOperations`` (DRAOptionalNodeOperations): a set of known operations; Prepare needs Unprepare."""
    if not isinstance(operations, list):
        return
    known = (_SKIP_PREPARE, _SKIP_UNPREPARE, _SKIP_ALL)
    seen: set[Any] = set()
    for i, op in enumerate(operations):
        if not isinstance(op, str) or op not in known:
            yield Problem(SKIP_NODE_OPERATIONS_INVALID, path.child(i),
                          f"{op!r} is not an operation that can be skipped; use {', '.join(map(repr, known))} "
                          "(API server: Unsupported value)")
        elif op in seen:
            yield Problem(SKIP_NODE_OPERATIONS_INVALID, path.child(i),
                          f"{op!r} is listed twice (API server: Duplicate value)")
        seen.add(op)
    if _SKIP_PREPARE in seen and _SKIP_UNPREPARE not in seen and _SKIP_ALL not in seen:
        yield Problem(SKIP_NODE_OPERATIONS_INVALID, path,
                      "NodePrepareResources cannot be skipped unless NodeUnprepareResources is also skipped: the "
                      "kubelet would unprepare devices it never prepared; add NodeUnprepareResources (or use '*') "
                      "(API server: Invalid value)")


def pool_problems(pool: Any) -> Iterator[Problem]:
    """``spec.pool``: its name, a positive slice count, a non-negative generation."""
    pool = pool if isinstance(pool, dict) else {}
    name = pool.get("name", "")
    if isinstance(name, str):
        yield from pool_name_problems(name, p("spec", "pool", "name"))
    count = pool.get("resourceSliceCount", 0)
    if isinstance(count, int) and not isinstance(count, bool) and count <= 0:
        yield Problem(POOL_COUNTS_INVALID, p("spec", "pool", "resourceSliceCount"),
                      f"resourceSliceCount is {count}; it must be greater than zero: the number of slices the "
                      "pool consists of (usually 1) (API server: Invalid value)")
    generation = pool.get("generation", 0)
    if isinstance(generation, int) and not isinstance(generation, bool) and generation < 0:
        yield Problem(POOL_COUNTS_INVALID, p("spec", "pool", "generation"),
                      f"pool generation is {generation}; it must be greater than or equal to zero (API server: "
                      "Invalid value)")


def immutable_problems(spec: dict, old: dict, flat: bool) -> Iterator[Problem]:
    """On update: the driver, pool name and node name stay as they were."""
    def node_name(s: dict) -> Any:
        value = s.get("nodeName")
        return None if flat and value == "" else value

    pairs = (
        (p("spec", "driver"), spec.get("driver"), old.get("driver"), "driver"),
        (p("spec", "pool", "name"), _get(spec, "pool", "name"), _get(old, "pool", "name"), "pool name"),
        (p("spec", "nodeName"), node_name(spec), node_name(old), "node name"),
    )
    for path, new, before, what in pairs:
        if new != before:
            yield Problem(FIELD_IMMUTABLE, path,
                          f"the {what} of a ResourceSlice is immutable ({before!r} → {new!r}); delete the slice and "
                          "create a new one instead (API server: Invalid value, \"field is immutable\")")


def _get(d: Any, *keys: str) -> Any:
    for key in keys:
        if not isinstance(d, dict):
            return None
        d = d.get(key)
    return d


def node_selection_problems(spec: dict, release: Release, flat: bool) -> Iterator[Problem]:
    """Exactly one of the slice's ways of saying which nodes can use its devices."""
    chosen: list[str] = []
    node_name = spec.get("nodeName")
    if node_name is not None and not (flat and node_name == ""):
        if node_name == "":
            yield Problem(NODE_NAME_INVALID, p("spec", "nodeName"),
                          "nodeName is an empty string; it must be either unset or the name of a node (API server: "
                          "Invalid value, \"must be either unset or set to a non-empty string\")")
        elif isinstance(node_name, str):
            chosen.append("nodeName")
            yield from node_name_problems(node_name, p("spec", "nodeName"))
    selector = spec.get("nodeSelector")
    if selector is not None:
        chosen.append("nodeSelector")
        yield from node_selector_problems(selector, p("spec", "nodeSelector"), release, one_term_rule=ONE_TERM)
    for flag in ("allNodes", "perDeviceNodeSelection"):
        value = spec.get(flag)
        if value is True:
            chosen.append(flag)
        elif value is False and not (flat and flag == "allNodes"):
            yield Problem(FLAG_FALSE, p("spec", flag),
                          f"`{flag}: false` is not allowed; it must be either unset or set to true (remove it) "
                          "(API server: Invalid value)")
    fields = ["nodeName", "nodeSelector", "allNodes"]
    if release.at_least(_PER_DEVICE_NODE_SELECTION_SINCE):
        fields.append("perDeviceNodeSelection")
    listed = ", ".join(f"`{f}`" for f in fields)
    if not chosen:
        yield Problem(NODE_SELECTION_EXCLUSIVE, p("spec"),
                      f"a ResourceSlice must say which nodes can use its devices: set exactly one of {listed} "
                      "(`allNodes: true` for network-attached devices) (API server: Required value)")
    elif len(chosen) > 1:
        yield Problem(NODE_SELECTION_EXCLUSIVE, p("spec"),
                      f"{', '.join(chosen)} are all set; exactly one of {listed} is allowed: keep the one that "
                      "describes where the devices are reachable (API server: Invalid value)",
                      details={"set": chosen})
