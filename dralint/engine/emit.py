"""From problems to findings: the emitter (rule metadata, the user's selection, positions) and the
findings the engine itself makes (input problems of the source stage, internal errors)."""
from __future__ import annotations

import traceback
from typing import Any, Iterable, Mapping

from ..catalog import Catalog
from ..convert import Canonical
from ..findings import Finding, Severity
from ..manifest import Manifest, Refusal
from ..paths import FieldPath
from ..problems import Problem
from ..rule_filter import RuleFilter
from ..source import SourceDocument, SourceFile, SourceProblem

# Input problems of the source stage → rule ids (rules/DRA00x-*.yaml).
_SOURCE_RULES = {"syntax": "DRA001", "duplicate-key": "DRA002", "unreadable": "DRA004", "binary": "DRA004",
                 "too-large": "DRA005", "too-deep": "DRA005", "alias-limit": "DRA005"}


class Emitter:
    """Turns problems into findings: rule metadata, user paths, positions, the user's selection."""

    def __init__(self, catalog: Catalog, rules: RuleFilter, context: str = "this run") -> None:
        self.catalog = catalog
        self.rules = rules
        self.context = context
        self.findings: list[Finding] = []
        self._seen: set[tuple] = set()

    def emit(self, rule_id: str, message: str, *, file: str, line: int, column: int, obj: str = "",
             field_path: str = "", severity: Severity | None = None, details: Mapping[str, Any] | None = None) -> None:
        rule = self.catalog.rules.get(rule_id)
        if rule is None:  # a check reporting a rule the catalog lacks is our bug; say so instead of crashing
            rule, message = self.catalog.get("DRA000"), f"internal error: rule {rule_id} is not in the catalog ({message})"
        if not self.rules.selected(rule):
            return
        sev = self.rules.severity(rule, severity)
        if self.context != "this run":
            message = message.replace("this run", self.context)
        key = (rule_id, file, line, column, field_path, message)
        if key in self._seen:
            return
        self._seen.add(key)
        self.findings.append(Finding(rule=rule.id, name=rule.name, severity=sev, category=rule.category,
                                     message=message, file=file, line=line, column=column, object=obj,
                                     field=field_path, details=details))

    def add(self, finding: Finding) -> None:
        """A finding another process made with the same catalog and selection."""
        key = (finding.rule, finding.file, finding.line, finding.column, finding.field, finding.message)
        if key not in self._seen:
            self._seen.add(key)
            self.findings.append(finding)

    def problem(self, target: Canonical, problem: Problem) -> None:
        user = problem.user_path if problem.user_path is not None else target.to_user(problem.path)
        manifest = target.manifest
        doc = manifest.document
        full = FieldPath(tuple(manifest.base) + tuple(user if problem.at is None else target.to_user(problem.at)))
        pos = doc.locate_in_scalar(full, problem.scalar_offset) if problem.scalar_offset is not None else doc.locate(full)
        self.emit(problem.rule, problem.message, file=doc.file, line=pos.line, column=pos.column,
                  obj=manifest.display, field_path=user.render(), severity=problem.severity, details=problem.details)


def refused(emitter: Emitter, refusal: Refusal) -> None:
    """The manifest stage's finding on a document or object the API server would not take."""
    _before_conversion(emitter, refusal.document, refusal.base, refusal.display, refusal.problem)


def on_manifest(emitter: Emitter, manifest: Manifest, problem: Problem) -> None:
    """A finding of a stage that judges the object as written, before conversion (serving, schema)."""
    _before_conversion(emitter, manifest.document, manifest.base, manifest.display, problem)


def _before_conversion(emitter: Emitter, document: SourceDocument, base: FieldPath | None, obj: str,
                       problem: Problem) -> None:
    """``problem``'s path is the user's, under ``base`` in ``document`` (``at``, when given, is where
    to point); a None ``base`` is the whole document, at its first line."""
    if base is None:
        line, column = document.line, 1
    else:
        pos = document.locate(FieldPath(tuple(base) + tuple(problem.path if problem.at is None else problem.at)))
        line, column = pos.line, pos.column
    emitter.emit(problem.rule, problem.message, file=document.file, line=line, column=column, obj=obj,
                 field_path=problem.path.render(), severity=problem.severity, details=problem.details)


def source_problem(emitter: Emitter, problem: SourceProblem) -> None:
    """An input problem of the source stage (DRA001, DRA002, DRA004, DRA005)."""
    rule = _SOURCE_RULES.get(problem.kind, "DRA001")
    field_path = problem.path.render() if problem.path else ""
    emitter.emit(rule, problem.message, file=problem.file, line=problem.line, column=problem.column,
                 field_path=field_path)


def internal_error(emitter: Emitter, obj: Canonical, what: str, exc: BaseException) -> None:
    """DRA000 on ``obj``: check ``what`` failed (the other checks ran)."""
    doc = obj.manifest.document
    pos = doc.locate(obj.manifest.base)
    emitter.emit("DRA000", f"internal error in check {what}{_where(exc)}; please report it. The other checks ran.",
                 file=doc.file, line=pos.line, column=pos.column, obj=obj.manifest.display)


def object_error(emitter: Emitter, manifest: Manifest, stage: str, exc: BaseException) -> None:
    """DRA000 on one object whose ``stage`` failed: the run goes on with every other object."""
    pos = manifest.document.locate(manifest.base)
    stage_error(emitter, stage, exc, file=manifest.document.file, line=pos.line, column=pos.column,
                 obj=manifest.display)


def stage_error(emitter: Emitter, stage: str, exc: BaseException, *, file: str, line: int, column: int,
                 obj: str = "") -> None:
    """DRA000 at a given place: ``stage`` failed there, and the rest of the run went on."""
    emitter.emit("DRA000", f"internal error in {stage}: {type(exc).__name__}: {str(exc)[:300]}{_where(exc)}; "
                           "please report it. The other objects and files were judged.",
                 file=file, line=line, column=column, obj=obj)


def run_error(emitter: Emitter, stage: str, exc: BaseException, files: Iterable[SourceFile | SourceDocument]) -> None:
    """DRA000 for a step over the whole run (on its first file): the findings of every object stand."""
    first = next((f.file if isinstance(f, SourceDocument) else f.name for f in files), "")
    stage_error(emitter, stage, exc, file=first, line=1, column=1)


def _where(exc: BaseException) -> str:
    """`` at module.py:123``: where in dralint an exception was raised, for the report it asks for."""
    frame = traceback.extract_tb(exc.__traceback__)[-1] if exc.__traceback__ else None
    return f" at {frame.filename.rsplit('/', 1)[-1]}:{frame.lineno}" if frame else ""
