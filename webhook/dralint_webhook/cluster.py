"""Cluster state for admission: the ResourceSlices, DeviceClasses, Namespaces... reviews judge against.

Two sources: files (``--cluster``), read once with the engine's ``load_cluster`` and read again
when they change; or the live cluster (``--watch``, :mod:`.live`). Either way a request only pays
for judging its own object against the index kept here.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from dralint.engine import load_cluster
from dralint.options import Options
from dralint.findings import Finding, Severity
from dralint.index import Index

# How findings name where the objects judged against come from (the CLI says "this run").
LIVE_CONTEXT = "the cluster (as the webhook last saw it)"
FILES_CONTEXT = "the webhook's cluster-state files"


class ClusterError(ValueError):
    """Cluster-state files that could not be read; the previous state (if any) stays in force."""


@dataclass(frozen=True)
class ClusterState:
    """The index the engine judges against, and what it noticed while reading (warnings)."""

    index: Index
    notes: tuple[Finding, ...]
    context: str = FILES_CONTEXT
    generation: int = 0
    fleet: Any = None       # the live state's FleetView (feasibility kept current), None for files


def load_state(paths: tuple[str, ...], options: Options, previous: ClusterState | None = None) -> ClusterState:
    """Read the cluster state; raises :class:`ClusterError` when a file cannot be read or parsed.

    A state without a single object is refused too: a folder emptied while a writer replaces its
    files (or a mount gone) must not replace a good state with "no devices at all". So is one
    without a ResourceSlice where ``previous`` (the state in force) has some: every claim would be
    infeasible, and under ``feasibility: deny`` refused.
    """
    index, problems = load_cluster(list(paths), options)
    errors = [p for p in problems if p.severity is Severity.ERROR]
    if errors:
        first = errors[0]
        where = f"{first.file}:{first.line}" if first.line else first.file
        raise ClusterError(f"cluster state {where}: {first.message} ({first.rule}; {len(errors)} error(s) in all)")
    if not index.all_objects() and not index.context_objects:
        raise ClusterError(f"cluster state {', '.join(paths)}: no objects at all (an empty folder or file is refused, "
                           "so that a half-written update does not leave every claim without devices)")
    if previous is not None and previous.index.slices and not index.slices:
        raise ClusterError(f"cluster state {', '.join(paths)}: no ResourceSlice, where the state in force has "
                           f"{len(previous.index.slices)}; refused (a lost mount or a half-written update would "
                           "leave every claim without devices): keep the state in force")
    return ClusterState(index, tuple(problems))
