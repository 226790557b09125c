"""Findings into LSP messages (dralint.lsp.translate): what the end-to-end tests cannot reach."""
from __future__ import annotations

import pytest

pytest.importorskip("pygls")

from lsprotocol import types  # noqa: E402
from pygls.workspace.position_codec import PositionCodec  # noqa: E402

from dralint.catalog import load_catalog  # noqa: E402
from dralint.findings import Category, Finding, Location, Position, Severity  # noqa: E402
from dralint.fixes import Fix, Safety, TextEdit  # noqa: E402
from dralint.lsp import translate  # noqa: E402
from dralint import source  # noqa: E402
from dralint.lsp.spans import Lines, Point, Span  # noqa: E402
from dralint.lsp.workspace import Linted  # noqa: E402

TEXT = "kind: ResourceClaim\ncout: 1\nnmae: x\n"
DOCUMENT = types.OptionalVersionedTextDocumentIdentifier(uri="file:///c.yaml", version=3)


def shown(line: int, safety: Safety, rule: str = "DRA101") -> translate.Shown:
    """A finding on ``line`` (1-based) whose fix replaces its first four characters."""
    fix = Fix(f"fix line {line}", safety, (TextEdit("/c.yaml", line, 1, line, 5, "good"),))
    finding = Finding(rule, "unknown-field", Severity.ERROR, Category.SCHEMA, "m", Location("/c.yaml", Position(line, 1)), fix=fix)
    span = Span(Point(line - 1, 0), Point(line - 1, 4))
    lines = Lines(TEXT)
    return translate.Shown(span, finding, types.Diagnostic(range=translate.to_range(span, lines, PositionCodec()),
                                                           message="m", code=rule))


def test_an_unsafe_fix_is_offered_but_not_preferred_nor_applied_by_fix_all() -> None:
    items = [shown(2, Safety.SAFE), shown(3, Safety.UNSAFE)]
    quick = translate.quick_fixes(items, Lines(TEXT), PositionCodec(), DOCUMENT)
    assert [(a.kind, a.title, a.is_preferred) for a in quick] == [
        (types.CodeActionKind.QuickFix, "fix line 2 (DRA101)", True),
        (types.CodeActionKind.QuickFix, "fix line 3 (unsafe: check the result) (DRA101)", False)]
    fix_all = translate.fix_all(items, Lines(TEXT), PositionCodec(), DOCUMENT)
    assert fix_all is not None and fix_all.kind == translate.FIX_ALL
    edits = fix_all.edit.document_changes[0].edits
    assert [(e.range.start.line, e.new_text) for e in edits] == [(1, "good")]
    assert fix_all.edit.document_changes[0].text_document.version == 3
    assert translate.fix_all(items[1:], Lines(TEXT), PositionCodec(), DOCUMENT) is None  # no safe fix


def test_kinds_asked_for_and_plain_edits() -> None:
    assert translate.wanted(translate.FIX_ALL, ["source"]) and translate.wanted(translate.FIX_ALL, None)
    assert not translate.wanted(types.CodeActionKind.QuickFix, ["source"])
    fix_all = translate.fix_all([shown(2, Safety.SAFE)], Lines(TEXT), PositionCodec(), DOCUMENT, versioned=False)
    assert fix_all is not None and list(fix_all.edit.changes) == ["file:///c.yaml"]  # a client without documentChanges


def test_only_the_findings_of_the_text_shown_under_the_range_get_fixes() -> None:
    catalog = load_catalog()
    older = shown(3, Safety.SAFE)
    [moved] = translate.moved([older], Lines(TEXT), PositionCodec())
    unfixable = shown(2, Safety.SAFE, rule="DRA701")
    fresh = shown(2, Safety.SAFE)
    assert translate.fixable([moved, unfixable, fresh], catalog) == [fresh]
    assert translate.overlapping([fresh, older], Span(Point(2, 1), Point(2, 1))) == [older]


def test_findings_kept_from_an_older_text_stay_on_the_lines_of_the_newer_one() -> None:
    older = shown(3, Safety.SAFE, rule="DRA701")
    newer = Lines("kind: ResourceClaim\n")
    [moved] = translate.moved([older], newer, PositionCodec())
    # Past the newer text's end: on its last line with content, not an empty range after it.
    assert moved.span == Span(Point(0, 0), Point(0, 19)) and not moved.current
    assert moved.diagnostic.range == types.Range(types.Position(0, 0), types.Position(0, 19))
    assert [s.finding.rule for s in translate.whole_run_only([older, shown(2, Safety.SAFE)])] == ["DRA701"]


def finding_at(line: int, column: int, rule: str = "DRA101") -> Finding:
    return Finding(rule, "unknown-field", Severity.ERROR, Category.SCHEMA, "m", Location("/c.yaml", Position(line, column)))


def placed(text: str, finding: Finding, codec: PositionCodec | None = None) -> types.Range:
    """The range sent for ``finding`` in ``text``."""
    lines = Lines(text)
    linted = Linted([finding], source.load_text(text, "/c.yaml"), None)  # type: ignore[arg-type]  # unread here
    [shown] = translate.diagnostics(linted, lines, codec or PositionCodec(), load_catalog())
    return shown.diagnostic.range


def test_ranges_count_lines_as_lsp_and_columns_in_utf16_units() -> None:
    # U+2028 and NEL in a quoted value end no line (LSP: \n, \r\n and \r only); the emoji before
    # the key is two UTF-16 units (one code point: the finding's column counts it once).
    text = 'kind: ResourceClaim\r\nmetadata: {annotations: {n: "\U0001F600\u2028\x85"}, nmae: x}\rspec: {}\n'
    column = text.split("\r\n")[1].index("nmae") + 1
    assert placed(text, finding_at(2, column)) == types.Range(types.Position(1, column), types.Position(1, column + 4))
    assert placed(text, finding_at(3, 1)) == types.Range(types.Position(2, 0), types.Position(2, 4))
    utf8 = PositionCodec(encoding=types.PositionEncodingKind.Utf8)
    # In UTF-8 the emoji, U+2028 and NEL are 4, 3 and 2 units.
    assert placed(text, finding_at(2, column), utf8).start.character == column - 1 + 3 + 2 + 1


def test_a_finding_past_the_end_of_the_text_is_shown_on_its_last_line() -> None:
    text = "kind: ResourceClaim\nspec: {}\n\n"
    assert placed(text, finding_at(9, 1)) == types.Range(types.Position(1, 0), types.Position(1, 8))
    assert placed(text, finding_at(4, 1)) == types.Range(types.Position(1, 0), types.Position(1, 8))
    assert placed("", finding_at(3, 1)) == types.Range(types.Position(0, 0), types.Position(0, 0))  # nothing to show
