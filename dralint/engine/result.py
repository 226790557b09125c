"""The record a run returns: its findings plus the counts and extras the reporters show."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..convert import Canonical
from ..findings import Finding, Severity
from ..index import Index
from ..manifest import Manifest
from ..paths import FieldPath


@dataclass(frozen=True)
class Subject:
    """What the engine held when it made a finding that a fixer may fix: the object, and the
    user's path in it (the engine keeps these by finding: :attr:`RunResult.subjects`)."""

    manifest: Manifest
    path: FieldPath


@dataclass
class RunResult:
    """Findings of a run plus the counts and extras the reporters show."""

    findings: list[Finding]
    files: int = 0
    documents: int = 0
    objects: int = 0
    input_error: bool = False
    allocations: list[dict[str, Any]] = field(default_factory=list)
    traces: dict[str, list[str]] = field(default_factory=dict)
    suppressed: int = 0  # findings hidden by `dralint: ignore` comments and annotations
    skipped: dict[str, list[str]] = field(default_factory=dict)  # why → files that are no manifests
    foreign: int = 0  # documents that are YAML but no Kubernetes object (playbooks, settings...)
    # Objects of kinds dralint does not read whose pods ask for devices: "Kind (apiVersion)" → how many.
    unread: dict[str, int] = field(default_factory=dict)
    not_judged: dict[str, int] = field(default_factory=dict)  # objects of kinds dralint does not read, by kind
    # What the editor keeps of a large document's run as the other documents' context: the index
    # references were judged against (without the objects the API server would refuse), and the
    # linted objects in canonical form, in run order.
    index: Index | None = field(default=None, repr=False)
    linted: list[Canonical] = field(default_factory=list, repr=False)
    # What each fixable finding is about (fixers.attach: the editor makes fixes on request, later).
    subjects: dict[Finding, Subject] = field(default_factory=dict, repr=False)

    @property
    def errors(self) -> int:
        return sum(f.severity is Severity.ERROR for f in self.findings)

    @property
    def exit_code(self) -> int:
        if self.input_error:
            return 2
        return 1 if self.errors else 0
