"""The fix record: text edits located like findings, applied together, never overlapping."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dralint.catalog import CatalogError, _load_rule, load_catalog
from dralint.findings import Category, Finding, Location, Position, Severity
from dralint.fixes import EditConflict, Fix, Safety, TextEdit, apply_edits, apply_fixes, edit_from_offsets, line_starts


def test_replace_a_key_on_its_line():
    text = "spec:\n  cout: 2\n"
    edit = TextEdit("f.yaml", 2, 3, 2, 7, "count")
    assert apply_edits(text, [edit]) == "spec:\n  count: 2\n"


def test_columns_count_characters_not_bytes():
    text = "name: \u00e9t\u00e9\nkey: x\n"
    edit = edit_from_offsets("f", text, text.index("t\u00e9"), text.index("t\u00e9") + 2, "T\u00c9")
    assert (edit.start_line, edit.start_column, edit.end_line, edit.end_column) == (1, 8, 1, 10)
    assert apply_edits(text, [edit]) == "name: \u00e9T\u00c9\nkey: x\n"


@pytest.mark.parametrize("newline", ["\n", "\r\n", "\r"])
def test_lines_end_at_every_newline_convention(newline):
    text = newline.join(["a: 1", "b: 2", "c: 3"]) + newline
    assert line_starts(text) == [0, 4 + len(newline), 8 + 2 * len(newline), len(text)]
    assert apply_edits(text, [TextEdit("f", 3, 1, 3, 2, "d")]) == newline.join(["a: 1", "b: 2", "d: 3"]) + newline


def test_an_edit_may_span_lines_and_insert():
    text = "a: 1\nb: 2\nc: 3\n"
    delete_b = TextEdit("f", 2, 1, 3, 1, "")
    insert = TextEdit("f", 1, 1, 1, 1, "# top\n")
    assert apply_edits(text, [delete_b, insert]) == "# top\na: 1\nc: 3\n"


def test_insertions_at_one_place_keep_their_order():
    text = "x\n"
    edits = [TextEdit("f", 1, 1, 1, 1, "a"), TextEdit("f", 1, 1, 1, 1, "b")]
    assert apply_edits(text, edits) == "abx\n"


def test_overlapping_edits_are_refused():
    text = "abcdef\n"
    with pytest.raises(EditConflict, match="overlap"):
        apply_edits(text, [TextEdit("f", 1, 1, 1, 4, "X"), TextEdit("f", 1, 3, 1, 5, "Y")])


@pytest.mark.parametrize("edit", [TextEdit("f", 3, 1, 3, 1, "x"), TextEdit("f", 1, 9, 1, 9, "x"),
                                  TextEdit("f", 0, 1, 1, 1, "x"), TextEdit("f", 1, 3, 1, 2, "x")])
def test_positions_outside_the_text_are_refused(edit):
    with pytest.raises(EditConflict):
        apply_edits("abc\n", [edit])


def test_apply_fixes_skips_a_fix_that_overlaps_an_earlier_one_and_other_files():
    text = "a: 1\nb: 2\n"
    first = Fix("rename a", Safety.SAFE, (TextEdit("f", 1, 1, 1, 2, "A"),))
    clash = Fix("rename a again", Safety.SAFE, (TextEdit("f", 1, 1, 1, 2, "Z"),))
    other = Fix("elsewhere", Safety.SAFE, (TextEdit("g", 1, 1, 1, 2, "Q"),))
    second = Fix("rename b", Safety.SAFE, (TextEdit("f", 2, 1, 2, 2, "B"),))
    new, taken, skipped = apply_fixes(text, "f", [first, clash, other, second])
    assert new == "A: 1\nB: 2\n"
    assert taken == [first, second] and skipped == [clash, other]


def _one_by_one(text: str, fixes: list[Fix]) -> tuple[str, list[Fix]]:
    """apply_fixes by its definition: each fix kept when all edits kept so far and its own apply."""
    chosen: list[TextEdit] = []
    taken = []
    for fix in fixes:
        try:
            apply_edits(text, chosen + list(fix.edits))
        except EditConflict:
            continue
        chosen += fix.edits
        taken.append(fix)
    return apply_edits(text, chosen), taken


_EDIT_TEXT = "ab\ncd\r\nef\rgh\n"


@st.composite
def _fixes(draw):
    fixes = []
    for n in range(draw(st.integers(0, 8))):
        edits = []
        for _ in range(draw(st.integers(0, 3))):
            start = draw(st.integers(0, len(_EDIT_TEXT)))
            end = draw(st.integers(start, min(start + 4, len(_EDIT_TEXT))))
            edits.append(edit_from_offsets("f", _EDIT_TEXT, start, end, draw(st.sampled_from(["", "X", "YZ"]))))
        if draw(st.booleans()):  # positions the text does not have
            edits.append(TextEdit("f", draw(st.integers(1, 6)), draw(st.integers(1, 4)), 6, 1, "Q"))
        fixes.append(Fix(f"fix {n}", Safety.SAFE, tuple(edits)))
    return fixes


@settings(max_examples=400, deadline=None)
@given(_fixes())
def test_apply_fixes_takes_the_fixes_that_fit_as_one_by_one_would(fixes):
    new, taken, skipped = apply_fixes(_EDIT_TEXT, "f", fixes)
    assert (new, taken) == _one_by_one(_EDIT_TEXT, fixes)
    assert [f for f in fixes if f not in taken] == skipped


def test_a_finding_carries_its_fix_in_json_but_not_in_equality():
    fix = Fix("rename `cout` to `count`", Safety.SAFE, (TextEdit("f", 2, 3, 2, 7, "count"),))
    base = Finding("DRA101", "unknown-field", Severity.ERROR, Category.SCHEMA, "m", Location("f", Position(2, 3)))
    fixed = Finding("DRA101", "unknown-field", Severity.ERROR, Category.SCHEMA, "m", Location("f", Position(2, 3)), fix=fix)
    assert base == fixed
    assert "fix" not in base.to_dict()
    assert fixed.to_dict()["fix"] == {"title": "rename `cout` to `count`", "safety": "safe", "edits": [
        {"file": "f", "start": {"line": 2, "column": 3}, "end": {"line": 2, "column": 7}, "new_text": "count"}]}


@st.composite
def _text_and_spans(draw):
    text = draw(st.text(alphabet=st.sampled_from("ab\u00e9\n\r \t:-#\u4e2d"), max_size=60))
    cuts = sorted(draw(st.lists(st.integers(0, len(text)), max_size=8)))
    if any(0 < c < len(text) and text[c - 1] == "\r" and text[c] == "\n" for c in cuts):
        cuts = [c for c in cuts if not (0 < c < len(text) and text[c - 1] == "\r" and text[c] == "\n")]
    pairs = list(zip(cuts[::2], cuts[1::2]))
    news = draw(st.lists(st.text(alphabet="xy\n", max_size=4), min_size=len(pairs), max_size=len(pairs)))
    return text, [(s, e, n) for (s, e), n in zip(pairs, news)]


@settings(max_examples=300, deadline=None)
@given(_text_and_spans())
def test_edits_from_offsets_apply_as_a_splice(case):
    text, spans = case
    starts = line_starts(text)
    edits = [edit_from_offsets("f", text, s, e, n, starts) for s, e, n in spans]
    expected, done = [], 0
    for s, e, n in spans:
        expected += [text[done:s], n]
        done = e
    expected.append(text[done:])
    assert apply_edits(text, edits) == "".join(expected)


def _rule_file(tmp_path, extra: str) -> str:
    path = tmp_path / "DRA999-some-rule.yaml"
    path.write_text("id: DRA999\nname: some-rule\ncategory: schema\nseverity: error\nsummary: s\nrationale: r\n"
                    "fix: f\n" + extra + "examples: []\n", encoding="utf-8")
    return path


def test_a_rule_declares_its_fix_and_its_safety(tmp_path):
    assert _load_rule(_rule_file(tmp_path, "autofix: unsafe\n")).autofix is Safety.UNSAFE
    assert _load_rule(_rule_file(tmp_path, "")).autofix is None
    with pytest.raises(CatalogError, match="safe or unsafe"):
        _load_rule(_rule_file(tmp_path, "autofix: maybe\n"))


def test_an_example_that_shows_a_fix_needs_a_rule_with_one(tmp_path):
    path = tmp_path / "DRA999-some-rule.yaml"
    path.write_text("id: DRA999\nname: some-rule\ncategory: schema\nseverity: error\nsummary: s\nrationale: r\n"
                    "fix: f\nexamples:\n- {title: t, verdict: bad, manifest: 'a: 1', fixed: 'a: 2'}\n", encoding="utf-8")
    with pytest.raises(CatalogError, match="declares no autofix"):
        _load_rule(path)


def test_the_catalog_loads_with_fix_declarations():
    assert all(rule.autofix in (None, Safety.SAFE, Safety.UNSAFE) for rule in load_catalog())
