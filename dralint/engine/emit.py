"""From problems to findings: the emitter (rule metadata, the user's selection, positions) and the
findings the engine itself makes (input problems of the source stage, internal errors)."""
from __future__ import annotations

import traceback
from dataclasses import replace
from typing import Any, Iterable, Mapping

from ..catalog import Catalog
from ..convert import Canonical
from ..findings import Finding, Location, Position, Severity
from ..manifest import Manifest, Refusal
from ..paths import ROOT, FieldPath
from ..problems import Problem
from ..rule_filter import RuleFilter
from ..source import SourceDocument, SourceFile, SourceProblem
from .result import Subject

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
        # What each fixable finding is about, for the fixers: they work on the object, not its text.
        self.subjects: dict[Finding, Subject] = {}
        self._seen: set[tuple[str, str, int, int, str, str]] = set()

    def emit(self, rule_id: str, message: str, *, file: str, line: int, column: int, obj: str = "",
             field_path: FieldPath = ROOT, end: Position = Position(), severity: Severity | None = None,
             details: Mapping[str, Any] | None = None) -> Finding | None:
        """The finding made (None when the selection leaves the rule out or it was made already)."""
        rule = self.catalog.rules.get(rule_id)
        if rule is None:  # a check reporting a rule the catalog lacks is our bug; say so instead of crashing
            rule, message = self.catalog.get("DRA000"), f"internal error: rule {rule_id} is not in the catalog ({message})"
        if not self.rules.selected(rule):
            return None
        sev = self.rules.severity(rule, severity)
        if self.context != "this run":
            message = message.replace("this run", self.context)
        key = (rule_id, file, line, column, field_path.render(), message)
        if key in self._seen:
            return None
        self._seen.add(key)
        finding = Finding(rule=rule.id, name=rule.name, severity=sev, category=rule.category, message=message,
                          location=Location(file, Position(line, column), end, field_path), object=obj,
                          details=details)
        self.findings.append(finding)
        return finding

    def add(self, finding: Finding) -> None:
        """A finding another process made with the same catalog and selection."""
        key = (finding.rule, finding.file, finding.line, finding.column, finding.field, finding.message)
        if key not in self._seen:
            self._seen.add(key)
            self.findings.append(finding)

    def place(self, rule_id: str, message: str, manifest: Manifest, user: FieldPath, *, at: FieldPath | None = None,
              scalar_offset: int | None = None, severity: Severity | None = None,
              details: Mapping[str, Any] | None = None, placed: tuple[Position, Position] | None = None) -> None:
        """A finding on ``manifest`` at the user's path ``user``, placed at user path ``at`` when
        given (at character ``scalar_offset`` of the string there when given); ``placed``: where
        that is, worked out already (:func:`placed`)."""
        pos, end = placed if placed is not None else _place(manifest, user if at is None else at, scalar_offset)
        finding = self.emit(rule_id, message, file=manifest.document.file, line=pos.line, column=pos.column,
                            obj=manifest.display, field_path=user, end=end, severity=severity, details=details)
        if finding is not None and self.catalog.rules[rule_id].autofix is not None:
            self.subjects[finding] = Subject(manifest, user)

    def problem(self, target: Canonical, problem: Problem) -> None:
        """A check's problem on ``target``: its canonical path mapped back to the user's."""
        user, at = _user_paths(target, problem)
        self.place(problem.rule, problem.message, target.manifest, user, at=at, scalar_offset=problem.scalar_offset,
                   severity=problem.severity, details=problem.details, placed=problem.place)


def placed(target: Canonical, problem: Problem) -> Problem:
    """``problem`` with the place in its file that :meth:`Emitter.problem` would work out for it (for a
    stage that judges in several processes: each works out the places of its own problems, beside
    the others, instead of the main process for all of them once they are done)."""
    user, at = _user_paths(target, problem)
    return replace(problem, place=_place(target.manifest, user if at is None else at, problem.scalar_offset))


def _user_paths(target: Canonical, problem: Problem) -> tuple[FieldPath, FieldPath | None]:
    """The problem's path and where it points (``at``, None when at the path), in the user's spelling."""
    user = problem.user_path if problem.user_path is not None else target.to_user(problem.path)
    return user, None if problem.at is None else target.to_user(problem.at)


def _place(manifest: Manifest, user: FieldPath, scalar_offset: int | None) -> tuple[Position, Position]:
    """Where a finding at the user's path ``user`` of ``manifest`` starts and ends in its file."""
    doc = manifest.document
    full = FieldPath(tuple(manifest.base) + tuple(user))
    pos = doc.locate_in_scalar(full, scalar_offset) if scalar_offset is not None else doc.locate(full)
    return pos, doc.end_of(pos)


def refused(emitter: Emitter, refusal: Refusal) -> None:
    """The manifest stage's finding on a document or object the API server would not take.

    ``problem``'s path is the user's, under ``base`` in ``document`` (``at``, when given, is where
    to point); a None ``base`` is the whole document, at its first line."""
    document, base, problem = refusal.document, refusal.base, refusal.problem
    if base is None:
        pos = Position(document.line, 1)
    else:
        pos = document.locate(FieldPath(tuple(base) + tuple(problem.path if problem.at is None else problem.at)))
    emitter.emit(problem.rule, problem.message, file=document.file, line=pos.line, column=pos.column,
                 obj=refusal.display, field_path=problem.path, end=document.end_of(pos), severity=problem.severity,
                 details=problem.details)


def on_manifest(emitter: Emitter, manifest: Manifest, problem: Problem) -> None:
    """A finding of a stage that judges the object as written, before conversion (serving, schema):
    its path is the user's."""
    emitter.place(problem.rule, problem.message, manifest, problem.path, at=problem.at, severity=problem.severity,
                  details=problem.details)


def source_problem(emitter: Emitter, problem: SourceProblem) -> None:
    """An input problem of the source stage (DRA001, DRA002, DRA004, DRA005)."""
    rule = _SOURCE_RULES.get(problem.kind, "DRA001")
    emitter.emit(rule, problem.message, file=problem.file, line=problem.line, column=problem.column,
                 field_path=problem.path or ROOT)


def internal_error(emitter: Emitter, obj: Canonical, what: str, exc: BaseException) -> None:
    """DRA000 on ``obj``: check ``what`` failed (the other checks ran)."""
    emitter.place("DRA000", f"internal error in check {what}{_where(exc)}; please report it. The other checks ran.",
                  obj.manifest, ROOT)


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
