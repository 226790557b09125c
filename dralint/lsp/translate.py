"""Findings into LSP messages: ranges in the client's units, diagnostics, hovers.

The one place that knows both dralint's records and the protocol's types (``lsprotocol``); the
server's handlers call these and send what they return.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Sequence

from lsprotocol import types
from pygls.workspace.position_codec import PositionCodec

from ..cancel import checkpoint
from ..catalog import Catalog
from ..explain import explain
from ..findings import Finding, Severity
from ..fixers import FIXERS
from ..fixes import Fix, Safety, TextEdit, apply_fixes
from ..report.context import rule_url
from .spans import DocumentsByOffset, Lines, Point, Span, finding_span, visible
from .workspace import WHOLE_RUN_RULES, Linted

SOURCE = "dralint"
FIX_ALL = f"{types.CodeActionKind.SourceFixAll.value}.{SOURCE}"  # "source.fixAll.dralint"
FIX_ALL_TITLE = "Apply dralint's safe fixes"
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
    current: bool = True
    """Whether the finding is of the text shown, not kept from an older one (only those get fixes)."""


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
    documents = DocumentsByOffset(linted.parsed.documents)
    for finding in linted.findings:
        checkpoint()  # 10,000 findings take a second to place: a newer text stops that too
        span = finding_span(finding, lines, documents)
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
    """Findings of an older text shown on a newer one: the same places, kept inside the new text
    (on its last line with content if past its end), and never fixed (a fix's edits are made for
    the text of its finding)."""
    out = []
    for s in shown:
        span = visible(Span(lines.clamp(s.span.start), lines.clamp(s.span.end)), lines)
        diagnostic = types.Diagnostic(range=to_range(span, lines, codec), message=s.diagnostic.message,
                                      severity=s.diagnostic.severity, code=s.diagnostic.code,
                                      code_description=s.diagnostic.code_description, source=SOURCE)
        out.append(Shown(span, s.finding, diagnostic, current=False))
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


def fixable(shown: Sequence[Shown], catalog: Catalog) -> list[Shown]:
    """The findings among ``shown`` that may have a fix: of the text shown, by a rule with a fixer."""
    return [s for s in shown if s.current and s.finding.rule in FIXERS
            and catalog.rules[s.finding.rule].autofix is not None]


def overlapping(shown: Sequence[Shown], span: Span) -> list[Shown]:
    """The findings among ``shown`` whose range meets ``span``."""
    return [s for s in shown if s.span.start <= span.end and span.start <= s.span.end]


def quick_fixes(fixed: Sequence[Shown], lines: Lines, codec: PositionCodec,
                document: types.OptionalVersionedTextDocumentIdentifier, *,
                versioned: bool = True) -> list[types.CodeAction]:
    """The fixes of ``fixed`` (findings with their fixes made) as quick fixes, safe ones preferred.

    A fix with edits in another file is not offered: its positions are that file's as linted,
    which the editor may hold otherwise. ``versioned`` sends ``documentChanges`` tied to the
    document's version, so a client whose text moved on refuses the edit instead of misplacing it.
    """
    actions = []
    for s in fixed:
        fix = s.finding.fix
        if fix is None or not _in_document(fix, s.finding.file):
            continue
        unsafe = "" if fix.safety is Safety.SAFE else " (unsafe: check the result)"
        actions.append(types.CodeAction(
            title=f"{fix.title}{unsafe} ({s.finding.rule})", kind=types.CodeActionKind.QuickFix,
            diagnostics=[s.diagnostic], is_preferred=fix.safety is Safety.SAFE,
            edit=_workspace_edit(document, fix.edits, lines, codec, versioned)))
    return actions


def fix_all(fixed: Sequence[Shown], lines: Lines, codec: PositionCodec,
            document: types.OptionalVersionedTextDocumentIdentifier, *,
            versioned: bool = True) -> types.CodeAction | None:
    """The ``source.fixAll.dralint`` action: every safe fix of ``fixed`` (the document's findings with
    their fixes made) that does not overlap another; None when there is none."""
    safe = [s.finding.fix for s in fixed if s.finding.fix is not None and s.finding.fix.safety is Safety.SAFE
            and _in_document(s.finding.fix, s.finding.file)]
    if not safe:
        return None
    _, taken, _ = apply_fixes(lines.text, fixed[0].finding.file, safe)
    return types.CodeAction(title=FIX_ALL_TITLE, kind=FIX_ALL,
                            edit=_workspace_edit(document, [e for fix in taken for e in fix.edits], lines, codec,
                                                 versioned))


def fix_all_to_resolve(document: types.OptionalVersionedTextDocumentIdentifier) -> types.CodeAction:
    """The ``source.fixAll.dralint`` action without its edit, which the client asks for when the
    user picks it (``codeAction/resolve``): the fixes of a whole document are made only then."""
    return types.CodeAction(title=FIX_ALL_TITLE, kind=FIX_ALL, data={"uri": document.uri, "version": document.version})


def wanted(kind: str, only: Sequence[str] | None) -> bool:
    """Whether the client asked for actions of ``kind`` (a kind asked for covers its sub-kinds)."""
    asked = [str(getattr(k, "value", k)) for k in only or ()]  # enum members or plain strings
    return not asked or any(kind == k or kind.startswith(f"{k}.") for k in asked)


def _in_document(fix: Fix, file: str) -> bool:
    return all(edit.file == file for edit in fix.edits)


def _workspace_edit(document: types.OptionalVersionedTextDocumentIdentifier, edits: Sequence[TextEdit],
                    lines: Lines, codec: PositionCodec, versioned: bool) -> types.WorkspaceEdit:
    text_edits = [types.TextEdit(range=to_range(Span(Point(e.start_line - 1, e.start_column - 1),
                                                     Point(e.end_line - 1, e.end_column - 1)), lines, codec),
                                 new_text=e.new_text) for e in edits]
    if versioned:
        return types.WorkspaceEdit(document_changes=[types.TextDocumentEdit(text_document=document,
                                                                            edits=text_edits)])
    return types.WorkspaceEdit(changes={document.uri: text_edits})
