"""Cluster state for admission: the ResourceSlices, DeviceClasses, Namespaces... of ``--cluster``.

Read once with the engine's ``load_cluster`` and kept (reloaded when the files change), so a
request only pays for judging its own object against it.
"""
from __future__ import annotations

from dataclasses import dataclass

from dralint.engine import Options, load_cluster
from dralint.findings import Finding, Severity
from dralint.index import Index


class ClusterError(ValueError):
    """Cluster-state files that could not be read; the previous state (if any) stays in force."""


@dataclass(frozen=True)
class ClusterState:
    """The index the engine judges against, and what it noticed while reading (warnings)."""

    index: Index
    notes: tuple[Finding, ...]


def load_state(paths: tuple[str, ...], options: Options) -> ClusterState:
    """Read the cluster state; raises :class:`ClusterError` when a file cannot be read or parsed."""
    index, problems = load_cluster(list(paths), options)
    errors = [p for p in problems if p.severity is Severity.ERROR]
    if errors:
        first = errors[0]
        where = f"{first.file}:{first.line}" if first.line else first.file
        raise ClusterError(f"cluster state {where}: {first.message} ({first.rule}; {len(errors)} error(s) in all)")
    return ClusterState(index, tuple(problems))
