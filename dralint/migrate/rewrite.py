"""Migrate the DRA objects of one text: plan, edit, prove, and refuse what cannot be proven.

Nothing here touches files. The result is the new text and one outcome per object; an object
whose rewrite cannot be made or proven (see :mod:`dralint.migrate.verify`) is left exactly as
written, with the reason, and the others are migrated without it.
"""
from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass, field
from typing import Any

from ..manifest import DRA_GROUP
from ..paths import FieldPath, value_at
from ..kube.releases import DEFAULT_MINOR
from ..source import SourceProblem, load_text
from ..source.composer import DocumentComposer
from ..yamltext.edits import EditRefused, Splice, apply_splices, delete_entry
from ..yamltext.layout import Layout, LayoutError, read_layout
from . import plan, verify
from .plan import ObjectRef, Step

MIGRATED = "migrated"
REFUSED = "refused"
DEFAULT_RELEASE = f"1.{DEFAULT_MINOR}"  # the linter's default --kube-version


@dataclass(frozen=True)
class ObjectOutcome:
    """What happened to one object: migrated (``lost``: fields dropped by --force) or refused (``reason``)."""

    ref: ObjectRef
    line: int
    status: str
    reason: str = ""
    lost: tuple[str, ...] = ()


@dataclass(frozen=True)
class TextOutcome:
    """The migration of one text; ``error`` (the text was left alone) when it could not be read."""

    text: str
    new_text: str
    objects: tuple[ObjectOutcome, ...] = ()
    error: str = ""
    error_line: int = 0
    already: int = 0  # DRA objects already in the target version

    @property
    def changed(self) -> bool:
        return self.new_text != self.text


@dataclass
class _Run:
    """The work on one text: what to migrate, what was refused, what --force drops."""

    text: str
    layout: Layout
    values: list[Any]
    target: str
    force: bool
    doubts: int = 0  # keys written twice in the text (in objects left as they are)
    plans: dict[ObjectRef, list[Step]] = field(default_factory=dict)
    refused: dict[ObjectRef, str] = field(default_factory=dict)
    drops: dict[ObjectRef, list[FieldPath]] = field(default_factory=dict)


def migrate_text(text: str, name: str, target: str, *, force: bool = False,
                 release: str = DEFAULT_RELEASE) -> TextOutcome:
    """Migrate every DRA object (and the pods' old claim fields) of ``text`` to ``resource.k8s.io/<target>``,
    as served by Kubernetes ``release``."""
    if DRA_GROUP not in text and "source" not in text:  # nothing to migrate: not worth parsing
        return TextOutcome(text, text)
    try:
        layout = read_layout(text)
        values, problem, doubts = _values(text, layout)
    except LayoutError as error:
        return TextOutcome(text, text, error=f"{error}; left untouched", error_line=error.line)
    if problem:
        return TextOutcome(text, text, error=f"{problem[0]}; left untouched", error_line=problem[1])
    run = _Run(text, layout, values, target, force, sum(map(len, doubts.values())))
    already = 0
    for ref in plan.objects(values, name):
        if ref.is_dra and ref.version == target:
            already += 1
            continue
        value = value_at(values[ref.document], ref.base)
        why = _doubt(ref, doubts) or (plan.refusal(ref, target, release) if ref.is_dra else None)
        if why is None and ref.is_dra:
            wrong = verify.refused_as_written(value, ref)
            if wrong is not None:
                why = (f"every API server serving {ref.api_version} refuses it as written ({wrong}); migrating "
                       "would only carry the error into another version: correct it first (`dralint` says how)")
        if why is not None:
            run.refused[ref] = why
            continue
        steps = plan.steps(ref, value, target)
        if steps:
            run.plans[ref] = steps
    new_text = _settle(run)
    outcomes = [ObjectOutcome(ref, _line(layout, ref), MIGRATED, lost=tuple(p.render() for p in run.drops.get(ref, ())))
                for ref in run.plans if ref not in run.refused]
    outcomes += [ObjectOutcome(ref, _line(layout, ref), REFUSED, reason) for ref, reason in run.refused.items()]
    outcomes.sort(key=lambda o: (o.line, o.ref.display))
    return TextOutcome(text, new_text, tuple(outcomes), already=already)


def _values(text: str, layout: Layout) -> tuple[list[Any], tuple[str, int] | None, dict[int, list[SourceProblem]]]:
    """The value of each document of ``layout`` as Kubernetes reads it (the linter's own reader), or
    the first problem that makes the text unsure (broken YAML); and, by document, the keys written
    twice, which make only the objects holding them unsure."""
    loaded = load_text(text, "<migrate>")
    fatal = [p for p in loaded.problems if p.kind != "duplicate-key" or p.path is None]
    if fatal:
        problem = min(fatal, key=lambda p: p.line)
        return [], (problem.message, problem.line), {}
    by_line = {document.line: document.value for document in loaded.documents}
    values = [by_line.pop(root.line + 1, None) if root is not None else None for root in layout.roots]
    if by_line:  # a document not where the layout has one: read them all exactly
        documents, error = DocumentComposer().compose(text)
        if error is not None or len(documents) != len(layout.roots):
            return [], ("the documents could not be told apart", 0), {}
        values = [d.value for d in documents]
    present = [index for index, root in enumerate(layout.roots) if root is not None]
    first_lines = [root.line + 1 for root in layout.roots if root is not None]
    doubts: dict[int, list[SourceProblem]] = {}
    for problem in loaded.problems:  # each in the last document starting at or above its line
        at = max(bisect_right(first_lines, problem.line) - 1, 0)
        doubts.setdefault(present[at], []).append(problem)
    return values, None, doubts


def _doubt(ref: ObjectRef, doubts: dict[int, list[SourceProblem]]) -> str | None:
    """Why ``ref`` is left alone: it holds a key written twice (or set by a merge key too); None when not."""
    for problem in doubts.get(ref.document, ()):
        assert problem.path is not None   # a doubt is a key written twice, which has its path (_values)
        if tuple(problem.path)[:len(ref.base)] == tuple(ref.base):
            return f"line {problem.line}: {problem.message}; migrate leaves such an object as it is"
    return None


def _settle(run: _Run) -> str:
    """Edit and prove until every object left in the plan is proven; the others are refused."""
    while True:
        plans = {ref: steps for ref, steps in run.plans.items() if ref not in run.refused}
        if not plans:
            return run.text
        new_text, failed = _edit(run.layout, plans, run.drops)
        drops: dict[ObjectRef, list[FieldPath]] = {}
        if not failed:
            failed, drops = _prove(run, new_text, plans)
        if not failed and not drops:
            return new_text
        run.refused.update(failed)
        run.drops.update(drops)  # --force: edit again, dropping what the target cannot hold


def _edit(original: Layout, plans: dict[ObjectRef, list[Step]], drops: dict[ObjectRef, list[FieldPath]]
          ) -> tuple[str, dict[ObjectRef, str]]:
    """Run every object's steps over the text (step k of all objects, then step k + 1); then --force's drops."""
    rounds = max(len(steps) for steps in plans.values())
    dropping = any(drops.get(ref) for ref in plans)
    current = original.text
    for k in range(rounds + 1 if dropping else rounds):
        try:
            layout = original if k == 0 else read_layout(current)
        except LayoutError as error:
            return current, _culprits(original, plans, drops, f"the rewrite would not parse ({error})")
        splices: list[Splice] = []
        failed: dict[ObjectRef, str] = {}
        indents: dict[int, int] = {}  # a document's indentation step, worked out once for all its objects
        for ref, steps in plans.items():
            node = plan.object_node(layout, ref)
            try:
                if node is None:
                    raise EditRefused("the object was not found again after an earlier step")
                if k < len(steps):
                    if ref.document not in indents:
                        indents[ref.document] = plan.document_step(layout, ref)
                    mine = steps[k](layout, node, indents[ref.document])
                else:
                    mine = _drop(layout, node, drops.get(ref, ())) if k == rounds else []
                shared = plan.shared_edit(layout, ref, node, mine)
                if shared is not None:
                    raise EditRefused(shared)
                splices += mine
            except EditRefused as error:
                failed[ref] = f"cannot be rewritten faithfully: {error}"
        if failed:
            return current, failed
        try:
            current = apply_splices(current, splices)
        except EditRefused as error:
            return current, _culprits(original, plans, drops, str(error))
    return current, {}


def _culprits(original: Layout, plans: dict[ObjectRef, list[Step]], drops: dict[ObjectRef, list[FieldPath]],
              reason: str) -> dict[ObjectRef, str]:
    """The objects whose edits fail on their own (every one, when none fails alone)."""
    found = {ref: reason for ref in plans if _edit(original, {ref: plans[ref]}, drops)[1]}
    return found or {ref: reason for ref in plans}


def _drop(layout: Layout, node: Any, paths: Any) -> list[Splice]:
    splices = []
    for path in paths:
        holder = node.find(tuple(path[:-1]))
        if holder is None or holder.kind != "map":
            raise EditRefused(f"{path.render()} was not found to drop")
        splices += delete_entry(layout, holder, str(path[-1]))
    return splices


def _prove(run: _Run, new_text: str, plans: dict[ObjectRef, list[Step]]
           ) -> tuple[dict[ObjectRef, str], dict[ObjectRef, list[FieldPath]]]:
    """The objects whose rewrite does not mean what the original meant, with why; and, with --force,
    the fields to drop from those that hold what the target version cannot."""
    try:
        values, problem, doubts = _values(new_text, read_layout(new_text))
    except LayoutError as error:
        values, problem, doubts = [], (str(error), error.line), {}
    if not problem and sum(map(len, doubts.values())) != run.doubts:
        problem = ("a key would be written twice", 0)
    if problem or len(values) != len(run.values):
        why = f"the rewrite would not read back ({problem[0] if problem else 'documents changed'})"
        return {ref: why for ref in plans}, {}
    touched = {ref.document for ref in plans}
    if any(index not in touched and old != new for index, (old, new) in enumerate(zip(run.values, values))):
        return {ref: "the rewrite changed another document" for ref in plans}, {}
    for document in touched:  # and, in a document of several objects (a List), nothing beside them
        mine = [ref for ref in plans if ref.document == document]
        bases = [ref.base for ref in mine]
        difference = verify.first_difference(verify.outside(run.values[document], bases),
                                             verify.outside(values[document], bases))
        if difference is not None:
            return {ref: f"the rewrite would change text outside the object (at {difference})" for ref in mine}, {}
    target_api = f"{DRA_GROUP}/{run.target}"
    failed: dict[ObjectRef, str] = {}
    drops: dict[ObjectRef, list[FieldPath]] = {}
    for ref in plans:
        old = value_at(run.values[ref.document], ref.base)
        new = value_at(values[ref.document], ref.base)
        if not isinstance(new, dict) or not isinstance(old, dict):
            failed[ref] = "the object was not found after the rewrite"
            continue
        new_api = target_api if ref.is_dra else ref.api_version
        expected = verify.canonical(old, ref, ref.api_version)
        dropped = run.drops.get(ref)
        if dropped:
            expected = verify.without(expected, [verify.canonical_path(ref.kind, run.target, p) for p in dropped])
        difference = verify.first_difference(expected, verify.canonical(new, ref, new_api))
        if difference is not None:
            failed[ref] = (f"the rewrite would not round-trip (it differs at {difference})"
                           f"{plan.borrowed_text(run.layout, ref)}")
            continue
        lost = verify.lost_fields(old, ref, new, target_api) if ref.is_dra else []
        if lost and run.force and not dropped:
            drops[ref] = lost
        elif lost:
            names = ", ".join(f"`{p.render()}`" for p in lost)
            one = len(lost) == 1
            failed[ref] = (f"{names} {'has' if one else 'have'} no equivalent in {target_api} "
                           f"(--force migrates the object without {'it' if one else 'them'})")
    return failed, drops


def _line(layout: Layout, ref: ObjectRef) -> int:
    node = plan.object_node(layout, ref)
    return node.line + 1 if node is not None else 0
