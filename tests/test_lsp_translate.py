"""Findings into LSP messages (dralint.lsp.translate): what the end-to-end tests cannot reach."""
from __future__ import annotations

import pytest

pytest.importorskip("pygls")

from lsprotocol import types  # noqa: E402
from pygls.workspace.position_codec import PositionCodec  # noqa: E402

from dralint.findings import Category, Finding, Severity  # noqa: E402
from dralint.fixes import Fix, Safety, TextEdit  # noqa: E402
from dralint.lsp import translate  # noqa: E402
from dralint.lsp.spans import Lines, Point, Span  # noqa: E402

TEXT = "kind: ResourceClaim\ncout: 1\nnmae: x\n"
DOCUMENT = types.OptionalVersionedTextDocumentIdentifier(uri="file:///c.yaml", version=3)


def shown(line: int, safety: Safety, rule: str = "DRA101") -> translate.Shown:
    """A finding on ``line`` (1-based) whose fix replaces its first four characters."""
    fix = Fix(f"fix line {line}", safety, (TextEdit("/c.yaml", line, 1, line, 5, "good"),))
    finding = Finding(rule, "unknown-field", Severity.ERROR, Category.SCHEMA, "m", "/c.yaml", line, 1, fix=fix)
    span = Span(Point(line - 1, 0), Point(line - 1, 4))
    lines = Lines(TEXT)
    return translate.Shown(span, finding, types.Diagnostic(range=translate.to_range(span, lines, PositionCodec()),
                                                           message="m", code=rule))


def test_an_unsafe_fix_is_offered_but_not_preferred_nor_applied_by_fix_all() -> None:
    items = [shown(2, Safety.SAFE), shown(3, Safety.UNSAFE)]
    everything = Span(Point(0, 0), Point(3, 0))
    actions = translate.code_actions(items, everything, Lines(TEXT), PositionCodec(), DOCUMENT)
    quick = [a for a in actions if a.kind == types.CodeActionKind.QuickFix]
    assert [(a.title, a.is_preferred) for a in quick] == [
        ("fix line 2 (DRA101)", True), ("fix line 3 (unsafe: check the result) (DRA101)", False)]
    [fix_all] = [a for a in actions if a.kind == translate.FIX_ALL]
    edits = fix_all.edit.document_changes[0].edits
    assert [(e.range.start.line, e.new_text) for e in edits] == [(1, "good")]
    assert fix_all.edit.document_changes[0].text_document.version == 3


def test_kinds_asked_for_and_plain_edits() -> None:
    items = [shown(2, Safety.SAFE)]
    only_fix_all = translate.code_actions(items, Span(Point(1, 0), Point(1, 0)), Lines(TEXT), PositionCodec(),
                                          DOCUMENT, only=["source"], versioned=False)
    assert [a.kind for a in only_fix_all] == [translate.FIX_ALL]
    assert list(only_fix_all[0].edit.changes) == ["file:///c.yaml"]  # a client without documentChanges


def test_findings_kept_from_an_older_text_stay_inside_the_newer_one() -> None:
    older = shown(3, Safety.SAFE, rule="DRA701")
    newer = Lines("kind: ResourceClaim\n")
    [moved] = translate.moved([older], newer, PositionCodec())
    assert moved.span == Span(Point(1, 0), Point(1, 0)) and moved.finding.fix is None
    assert moved.diagnostic.range == types.Range(types.Position(1, 0), types.Position(1, 0))
    assert [s.finding.rule for s in translate.whole_run_only([older, shown(2, Safety.SAFE)])] == ["DRA701"]
