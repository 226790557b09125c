"""Findings into LSP messages: ranges in the client's units, diagnostics, hovers.

The one place that knows both dralint's records and the protocol's types (``lsprotocol``); the
server's handlers call these and send what they return.
"""
from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from typing import Sequence

from lsprotocol import types
from pygls.workspace.position_codec import PositionCodec

from ..catalog import Catalog
from ..explain import explain
from ..findings import Finding, Severity
from ..fixes import Fix, Safety, TextEdit, apply_fixes
from ..report.context import rule_url
from .spans import Lines, Point, Span, finding_span
from .workspace import WHOLE_RUN_RULES, Linted

SOURCE = "dralint"
FIX_ALL = f"{types.CodeActionKind.SourceFixAll.value}.{SOURCE}"  # "source.fixAll.dralint"
_SEVERITY = {
    Severity.ERROR: types.DiagnosticSeverity.Error,
    Severity.WARNING: types.DiagnosticSeverity.Warning,
    Severity.INFO: types.DiagnosticSeverity.Information,
}


@dataclass(frozen=True)
class Shown:
    """A finding as the editor shows it: where (in characters) and the diagnostic sent."""

    span: Span
    finding: Finding
    diagnostic: types.Diagnostic


def to_range(span: Span, lines: Lines, codec: PositionCodec) -> types.Range:
    """``span`` (code points) in the client's position encoding (UTF-16 unless negotiated)."""
    return types.Range(start=_position(span.start, lines, codec), end=_position(span.end, lines, codec))


def _position(point: Point, lines: Lines, codec: PositionCodec) -> types.Position:
    point = lines.clamp(point)
    return types.Position(line=point.line, character=codec.client_num_units(lines.line(point.line)[:point.column]))


def from_position(position: types.Position, lines: Lines, codec: PositionCodec) -> Point:
    """A client position as a character position of ``lines``."""
    text = lines.line(position.line)
    units = column = 0
    while column < len(text) and units < position.character:
        units += codec.client_num_units(text[column])
        column += 1
    return lines.clamp(Point(position.line, column))


def diagnostics(linted: Linted, lines: Lines, codec: PositionCodec, catalog: Catalog) -> list[Shown]:
    """One diagnostic per finding of a document: the rule id as code, linked to its documentation."""
    shown = []
    for finding in linted.findings:
        span = finding_span(finding, lines, linted.parsed.documents)
        rule = catalog.rules.get(finding.rule)
        diagnostic = types.Diagnostic(
            range=to_range(span, lines, codec),
            message=finding.message,
            severity=_SEVERITY[finding.severity],
            code=finding.rule,
            code_description=types.CodeDescription(href=rule_url(rule)) if rule is not None else None,
            source=SOURCE,
        )
        shown.append(Shown(span, finding, diagnostic))
    return shown


def whole_run_only(shown: Sequence[Shown]) -> list[Shown]:
    """The findings among ``shown`` that only a whole run makes (feasibility, unused suppressions)."""
    return [s for s in shown if s.finding.rule.startswith(WHOLE_RUN_RULES)]


def moved(shown: Sequence[Shown], lines: Lines, codec: PositionCodec) -> list[Shown]:
    """Findings of an older text shown on a newer one: the same places, kept inside the new text,
    without their fixes (their edits were computed for the old text)."""
    out = []
    for s in shown:
        span = Span(lines.clamp(s.span.start), lines.clamp(s.span.end))
        diagnostic = types.Diagnostic(range=to_range(span, lines, codec), message=s.diagnostic.message,
                                      severity=s.diagnostic.severity, code=s.diagnostic.code,
                                      code_description=s.diagnostic.code_description, source=SOURCE)
        out.append(Shown(span, dataclasses.replace(s.finding, fix=None), diagnostic))
    return out


def hover(shown: Sequence[Shown], point: Point, lines: Lines, codec: PositionCodec, catalog: Catalog, *,
          markdown: bool = True) -> types.Hover | None:
    """The findings under ``point`` and their rules' explanations (``--explain``); None when there is none."""
    here = [s for s in shown if s.span.start <= point <= s.span.end]
    if not here:
        return None
    parts = []
    for rule_id in dict.fromkeys(s.finding.rule for s in here):
        group = [s.finding for s in here if s.finding.rule == rule_id]
        rule = catalog.rules.get(rule_id)
        explanation = explain(rule) if rule is not None else ""
        if markdown:
            messages = "\n".join(f"- {_escape(f.message)}" for f in group)
            parts.append(f"**{rule_id}** {group[0].name}\n\n{messages}\n\n```text\n{explanation}```")
        else:
            parts.append("\n".join(f"{rule_id}: {f.message}" for f in group) + "\n\n" + explanation)
    first = min((s.span for s in here), key=lambda span: (span.start, span.end))
    kind = types.MarkupKind.Markdown if markdown else types.MarkupKind.PlainText
    separator = "\n\n---\n\n" if markdown else "\n\n"
    return types.Hover(contents=types.MarkupContent(kind=kind, value=separator.join(parts)),
                       range=to_range(first, lines, codec))


def _escape(text: str) -> str:
    """Plain text that Markdown shows as written (messages quote CEL and field paths)."""
    return re.sub(r"([\\`*_\[\]<>#|])", r"\\\1", text)


def code_actions(shown: Sequence[Shown], span: Span, lines: Lines, codec: PositionCodec,
                 document: types.OptionalVersionedTextDocumentIdentifier, *, only: Sequence[str] | None = None,
                 versioned: bool = True) -> list[types.CodeAction]:
    """The fixes of the findings under ``span`` as quick fixes (safe ones preferred), and one
    ``source.fixAll.dralint`` action applying every safe fix of the document that does not overlap another.

    A fix with edits in another file is not offered: its positions are that file's as linted,
    which the editor may hold otherwise. ``versioned`` sends ``documentChanges`` tied to the
    document's version, so a client whose text moved on refuses the edit instead of misplacing it.
    """
    fixable = [s for s in shown if s.finding.fix is not None and _in_document(s.finding.fix, s.finding.file)]
    actions = []
    if _wanted(types.CodeActionKind.QuickFix.value, only):
        for s in fixable:
            if s.span.start <= span.end and span.start <= s.span.end:
                fix = s.finding.fix
                assert fix is not None
                unsafe = "" if fix.safety is Safety.SAFE else " (unsafe: check the result)"
                actions.append(types.CodeAction(
                    title=f"{fix.title}{unsafe} ({s.finding.rule})", kind=types.CodeActionKind.QuickFix,
                    diagnostics=[s.diagnostic], is_preferred=fix.safety is Safety.SAFE,
                    edit=_workspace_edit(document, fix.edits, lines, codec, versioned)))
    safe = [s.finding.fix for s in fixable if s.finding.fix is not None and s.finding.fix.safety is Safety.SAFE]
    if safe and _wanted(FIX_ALL, only):
        _, taken, _ = apply_fixes(lines.text, fixable[0].finding.file, safe)
        actions.append(types.CodeAction(
            title=f"Apply dralint's safe fixes ({len(taken)})", kind=FIX_ALL,
            edit=_workspace_edit(document, [e for fix in taken for e in fix.edits], lines, codec, versioned)))
    return actions


def _in_document(fix: Fix, file: str) -> bool:
    return all(edit.file == file for edit in fix.edits)


def _wanted(kind: str, only: Sequence[str] | None) -> bool:
    """Whether the client asked for actions of ``kind`` (a kind asked for covers its sub-kinds)."""
    asked = [str(getattr(k, "value", k)) for k in only or ()]  # enum members or plain strings
    return not asked or any(kind == k or kind.startswith(f"{k}.") for k in asked)


def _workspace_edit(document: types.OptionalVersionedTextDocumentIdentifier, edits: Sequence[TextEdit],
                    lines: Lines, codec: PositionCodec, versioned: bool) -> types.WorkspaceEdit:
    text_edits = [types.TextEdit(range=to_range(Span(Point(e.start_line - 1, e.start_column - 1),
                                                     Point(e.end_line - 1, e.end_column - 1)), lines, codec),
                                 new_text=e.new_text) for e in edits]
    if versioned:
        return types.WorkspaceEdit(document_changes=[types.TextDocumentEdit(text_document=document,
                                                                            edits=text_edits)])
    return types.WorkspaceEdit(changes={document.uri: text_edits})
