"""The line-based position index gives the exact index's ``locate`` answers, or None.

Every comparison runs the strict scan (:func:`block_positions._scan`), so a bug that would
raise shows up here instead of being turned into None as :func:`index_block` does.
"""
from __future__ import annotations

import dataclasses
import random
import subprocess
import sys
from pathlib import Path
from typing import Any, Iterator

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dralint.findings import Position
from dralint.source import block_positions, fastpath, load_file, load_text
from dralint.source.block_positions import index_block
from dralint.source.composer import index_chunk
from dralint.source.positions import NodeSpan, PositionIndex
from dralint.source.records import SourceDocument

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = sorted(p for p in (REPO / "examples").rglob("*") if p.suffix in (".yaml", ".yml"))
PROPERTIES = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def node_paths(value: Any, path: tuple = ()) -> Iterator[tuple]:
    yield path
    if isinstance(value, dict):
        for key, item in value.items():
            yield from node_paths(item, path + (key,))
    elif isinstance(value, list):
        for number, item in enumerate(value):
            yield from node_paths(item, path + (number,))


def strict_index(document: SourceDocument) -> PositionIndex | None:
    """Our index as the caller would set it up, None when unsure; anything else raised is a bug."""
    try:
        index = block_positions._scan(document.chunk.body, document.value)
    except block_positions._Unsure:
        return None
    index.line_offset = document.chunk.line_offset
    return index


def fast_read(document: SourceDocument) -> bool:
    body = document.chunk.body
    return fastpath._plain_enough(body) and fastpath.fast_values(body) is not None


def assert_same_locate(document: SourceDocument, ours: PositionIndex) -> None:
    """Same ``locate`` answers as the exact index for every node and some missing ones below them;
    and, beyond what ``locate`` needs, the same key, line and column in every span."""
    exact = index_chunk(document.chunk)
    paths = list(node_paths(document.value))
    assert ours.spans.keys() == set(paths)
    for path in paths:
        for probe in (path, path + ("nope",), path + (99, "nope")):
            assert ours.locate(probe, document.line) == exact.locate(probe, document.line), (
                probe, document.chunk.body)
        mine, theirs = ours.spans[path], exact.spans[path]
        assert (mine.key, mine.line, mine.column) == (theirs.key, theirs.line, theirs.column), (
            path, document.chunk.body)


def assert_path_locator_agrees(document: SourceDocument) -> bool:
    """The path locator gives the exact index's answer wherever it answers; whether it took the
    document. Only documents the fast reader took (no duplicate keys) are given to it."""
    if not fast_read(document):
        return False
    try:
        locator = block_positions.PathLocator(document.chunk.body)
    except ValueError:
        return False
    exact = index_chunk(document.chunk)
    for path in node_paths(document.value):
        for probe in (path, path + ("nope",), path + (99, "nope")):
            found = locator.locate(document.value, probe)
            if found is not None:
                assert Position(found[0] + document.chunk.line_offset + 1, found[1] + 1) == \
                    exact.locate(probe, document.line), (probe, document.chunk.body)
    return True


def compare_file(path: Path) -> tuple[int, int]:
    """(documents handled, documents plain enough for the fast reader) of one file, checking
    every handled one."""
    handled = taken = 0
    for document in load_file(str(path)).documents:
        if not fastpath._plain_enough(document.chunk.body):
            continue
        taken += 1
        assert_path_locator_agrees(document)
        ours = strict_index(document)
        if ours is not None:
            handled += 1
            assert_same_locate(document, ours)
    return handled, taken


def compare_text(text: str, fast_only: bool = True) -> list[PositionIndex | None]:
    """Our index for every document of ``text`` (compared with the exact one where not None)."""
    indexes = []
    for document in load_text(text, "case.yaml").documents:
        if fast_only and not fast_read(document):
            continue
        assert_path_locator_agrees(document)
        ours = strict_index(document)
        if ours is not None:
            assert_same_locate(document, ours)
        indexes.append(ours)
    return indexes


# -- real and generated files ------------------------------------------------------------------

def test_realworld_files_agree(shared: Path) -> None:
    files = sorted(p for p in (shared / "realworld").rglob("*") if p.suffix in (".yaml", ".yml"))
    assert files
    handled = taken = 0
    for path in files:
        counts = compare_file(path)
        handled, taken = handled + counts[0], taken + counts[1]
    # All 623 when written (the 35 others are not plain enough for the fast reader).
    assert handled >= 0.95 * taken, f"handled {handled} of {taken} documents"


def test_example_files_agree() -> None:
    assert EXAMPLES
    handled = taken = 0
    for path in EXAMPLES:
        counts = compare_file(path)
        handled, taken = handled + counts[0], taken + counts[1]
    assert handled == taken, f"handled {handled} of {taken} documents"


def test_generated_corpus_is_all_handled(shared: Path, tmp_path: Path) -> None:
    subprocess.run([sys.executable, str(shared / "bench" / "gen_corpus.py"), "--docs", "300", "--files", "3",
                    "--seed", "1", "--out", str(tmp_path)], check=True, capture_output=True)
    documents = 0
    for path in sorted(tmp_path.glob("*.yaml")):
        for document in load_file(str(path)).documents:
            ours = strict_index(document)
            assert ours is not None, document.chunk.body
            assert_same_locate(document, ours)
            documents += 1
    assert documents == 300


# -- hand-written cases --------------------------------------------------------------------------

HANDLED = {
    "comments at odd indentation": (
        "a: 1\n      # deep comment\n# shallow comment\nb:\n  c: 2\n   # odd\n  d: 3\n"),
    "comment after a key, then a mapping": "spec:   # the spec\n  # more\n  name: x\n  other: z\n",
    "block scalars holding list and key lines": (
        "a: |\n  - x\n  k: v\n    deeper: 1\nb: >-\n  - y\n\n  z: w\n"
        "c:\n- |+\n  - item\n\n- >\n  k: v\nd: 1\n"),
    "block scalar with a comment-like line": "script: |\n  # not a comment\n  echo hi\nnext: 1\n",
    "sequence at the key's indentation": "k:\n- a\n- b: 1\n  c:\n  - x\n  - w\nj: 3\n",
    "sequence indented below its key": "k:\n    - a\n    -   b: 1\n        c: 2\nj: 3\n",
    "nested sequences": "- - a\n  - b\n- - - x\n    - w\n  - z\n-   - deep\n",
    "quoted keys": "\"a: b\": 1\n'c: d': 2\n'it''s': 3\n\"#x\": 4\n'- y': 5\n\"\": 6\n",
    "spaces before the colon": "key  : 1\n\"q\"   : 2\n",
    "empty flow collections": "a: {}\nb: []\nc: { }\nd:\n- {}\n- []\n- [ ]  # empty\n",
    "document marker first": "---\n# comment\napiVersion: v1\nkind: Pod\n",
    "document marker with a comment": "--- # the pod\napiVersion: v1\n",
    "indented root mapping": "\n   # c\n  a: 1\n  b:\n    c: 2\n",
    "root sequence": "- a\n- b: 1\n-\n  - c\n",
    "root scalar": "# comment\nhello\n",
    "items on the next line": "-\n  a: 1\n- # comment\n  b: 2\n-\n  - c\n-\n  d\n",
    "deeply nested lists of maps": (
        "a:\n- b:\n  - c:\n    - d:\n      - e: 1\n        f:\n        - g: [x, 'y', \"z\"]\n      - h: 2\n"),
    "multi-line plain scalars": "a: one\n  two\n\n  three\nb:\n- four\n  five\nc:\n  six\n   seven\nd: 1\n",
    "flow mappings of scalars": (
        "model: {string: a100}\npcie: { string: 'pci0000:00' , \"int\": 3 }\nv: {version: 1.2.3}\n"),
    "flow mappings as items": "- {a: 1, b: x}\n- {}\n- - {c: d}\n",
    "flow lists of scalars": (
        "command: [\"bash\", \"-c\"]\nargs: [ a , 'b''c', -1, true, null ]\nx:\n- [1, 2]\n"),
    "a flow list on the next line": "add:\n  [\"IPC_LOCK\"]\nnext: 1\n",
    "explicit null item": "- null\n- x\n",
    "null values": "a:\nb: null\nc:   # nothing\nd: 1\n",
    "dotted and slashed keys": "gpu.example.com/model: x\nresource.kubernetes.io/x-y_z: 1\n",
    "plain scalars with indicators inside": "a: x#y\nb: http://h:80/p\nc: a-b\nd: -1\ne: '#'\n",
    "quoted values and empty strings": "a: \"x y\"\nb: ''\nc: \"\"   # empty\n",
    "no trailing newline": "a:\n  b: 1",
    "characters outside ASCII": "é😀: [\"é😀\", b]\nc: {é😀: 1, x: 2}\nd:\n- é😀\n",
}

BAILS = {
    "flow mapping holding a list": "a: {b: [1]}\n",
    "flow mapping without a space after ':'": "a: {\"b\":1}\n",
    "flow list holding a mapping": "a: [{b: 1}]\n",
    "nested flow list": "a: [[1], 2]\n",
    "flow list over two lines": "a: [1,\n  2]\nb: 3\n",
    "multi-line double-quoted scalar": "a: \"x\n  y\"\nb: 1\n",
    "multi-line single-quoted scalar": "- 'x\n  y'\n",
    "empty list item": "- \n- x\n",
    "content on the document marker line": "--- hello\n",
    "a block scalar on the document marker line": "--- |\n  text\n",
    "indentation digit": "a: |2\n   x\nb: 1\n",
    "null value over deeper lines": "a:\n  null\nb: 1\n",
}

EXACT_ONLY = {
    "anchor and alias": "a: &x 1\nb: *x\n",
    "tag": "a: !!str 1\n",
    "explicit key": "? a\n: 1\n",
    "end marker": "a: 1\n...\n",
    "directive": "%YAML 1.1\n---\na: 1\n",
    "tab": "a:\t1\n",
    "carriage return": "a: 1\r\nb: 2\r\n",
    "a line separator in a quoted scalar": "a: 'x\u2028y'\nb: 1\n",
    "a next-line character in a quoted scalar": "a: \"x\x85y\"\nb: 1\n",
    "backslash escape": "a: \"x\\ty\"\n",
    "duplicate key": "a: 1\nb: 2\na: 3\n",
    "duplicate key and value": "a: 1\na: 1\n",
    "a float": "a: 1.5\n",
    "a YAML 1.1 boolean": "a: yes\n",
    "a key read as a number": "0x10: a\n",
}


@pytest.mark.parametrize("text", HANDLED.values(), ids=HANDLED.keys())
def test_handled(text: str) -> None:
    indexes = compare_text(text, fast_only=False)
    assert indexes and all(index is not None for index in indexes)


@pytest.mark.parametrize("text", BAILS.values(), ids=BAILS.keys())
def test_bails(text: str) -> None:
    assert compare_text(text, fast_only=False) == [None]


@pytest.mark.parametrize("text", EXACT_ONLY.values(), ids=EXACT_ONLY.keys())
def test_bails_on_what_only_the_exact_reader_reads(text: str) -> None:
    assert compare_text(text, fast_only=False) == [None]


@pytest.mark.parametrize("value", [
    {"a": 1, "c": {"d": 2}},
    {"a": 1, "b": {"x": 2}},
    {"a": 1, "b": {"c": 2, "d": 3, "e": 4}},
    {"a": 1, "b": {"c": 2}},
    {"a": 1, "b": {"c": 2}, "f": 5},
    {"a": 2, "b": {"c": 2, "d": 3}},
    {"a": "x", "b": {"c": 2, "d": 3}},
    {"a": 1, "b": [2, 3]},
    {"a": 1, "b": {"c": 2, "d": None}},
], ids=["renamed", "renamed nested", "extra key", "missing key", "extra after", "other int", "string",
        "list", "null"])
def test_bails_when_the_value_disagrees(value: Any) -> None:
    assert index_block("a: 1\nb:\n  c: 2\n  d: 3\n", value) is None


@pytest.mark.parametrize("value", [["x"], ["x", "y", "z"], ["x", {"y": 1}], ["x", ["y"]], {"k": "x"}],
                         ids=["shorter", "longer", "mapping", "sequence", "not a list"])
def test_bails_when_a_list_disagrees(value: Any) -> None:
    assert index_block("- x\n- y\n", value) is None


def test_locate_answers_on_a_slice() -> None:
    text = ("---\napiVersion: resource.k8s.io/v1\nkind: ResourceSlice\nspec:\n  devices:\n"
            "  - name: gpu-0\n    attributes:\n      bad name:\n        string: x\n")
    document = load_text(text, "slice.yaml").documents[0]
    index = index_block(document.chunk.body, document.value)
    assert index is not None and index.body == document.chunk.body and index.line_offset == 0
    assert index.locate(("spec", "devices", 0, "attributes", "bad name"), document.line) == Position(8, 7)
    assert index.locate(("spec", "devices", 0), document.line) == Position(6, 5)
    assert index.locate(("spec", "devices", 3), document.line) == Position(5, 3)
    assert index.locate((), document.line) == Position(2, 1)


def test_spans_are_node_spans() -> None:
    span = block_positions._span((1, 2), 3, 4)
    expected = NodeSpan((1, 2), 3, 4, -1, -1, "", None)
    assert type(span) is NodeSpan and span == expected and hash(span) == hash(expected)
    assert repr(span) == repr(expected)
    with pytest.raises(dataclasses.FrozenInstanceError):
        span.line = 5  # type: ignore[misc]


def test_spans_have_no_offsets_so_scalar_positions_fall_back_to_locate() -> None:
    document = load_text("a:\n  b: |\n    text\n", "s.yaml").documents[0]
    index = index_block(document.chunk.body, document.value)
    span = index.spans[("a", "b")]
    assert (span.end_index, span.start_index, span.style, span.text) == (-1, -1, "", None)
    assert index.locate_in_scalar(("a", "b"), 2, document.line) == index.locate(("a", "b"), document.line)


def test_never_raises_on_values_that_do_not_fit() -> None:
    for body, value in [("", {}), ("a: 1\n", object()), ("a: 1\n", {1: 1}), ("- x\n", [float("nan")]),
                        ("---\n", None), ("a:\n", {"a": {"b": 1}}), ("- [x\n", [["x"]])]:
        assert index_block(body, value) is None


# -- generated values and texts ------------------------------------------------------------------

KEYS = st.one_of(
    st.from_regex(r"[a-zé][a-zA-Z0-9é😀]{0,8}", fullmatch=True),
    st.from_regex(r"[a-z]{1,5}(\.[a-z]{1,4}){1,2}/[a-z][-a-z0-9]{0,6}", fullmatch=True),
    st.sampled_from(["a: b", "#x", "- y", "true", "1", "it's", "q\"x", "", " sp", "a #b", "[x]", "k:"]),
)
SCALARS = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-1000, max_value=10**6),
    st.text(alphabet="abc xyz:#-'\"[]{},&*!|>?%@.\né😀", max_size=30),
    st.sampled_from(["device.driver == \"gpu.example.com\" &&\ndevice.attributes[\"x\"].y >= 2\n",
                     "line one\nline two", "ends with newlines\n\n", "", "- x", "k: v"]),
)
VALUES = st.recursive(
    SCALARS,
    lambda children: st.one_of(st.lists(children, max_size=4), st.dictionaries(KEYS, children, max_size=4)),
    max_leaves=20,
)


class _BlockDumper(yaml.SafeDumper):
    """Multi-line strings as literal block scalars, the way CEL expressions are written."""


class _IndentedSequenceDumper(_BlockDumper):
    """Sequences indented below their key (PyYAML writes them at the key's indentation)."""

    def increase_indent(self, flow: bool = False, indentless: bool = False) -> None:
        super().increase_indent(flow, False)


def _literal(dumper: yaml.SafeDumper, data: str) -> yaml.ScalarNode:
    style = "|" if "\n" in data else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", data, style=style)


_BlockDumper.add_representer(str, _literal)

DUMPS = [
    {"default_flow_style": False},
    {"default_flow_style": False, "indent": 4},
    {"default_flow_style": False, "width": 20},
    {"default_flow_style": None},
    {"default_flow_style": False, "Dumper": _BlockDumper},
    {"default_flow_style": False, "Dumper": _IndentedSequenceDumper, "indent": 4},
    {"default_flow_style": False, "Dumper": _IndentedSequenceDumper, "explicit_start": True},
]


def slice_like(expression: str) -> dict:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "spec": {
            "devices": [{"name": "gpu-0", "attributes": {"model": {"string": "a100"}, "index": {"int": 0}},
                         "tags": ["a", "b c"], "empty": {}, "none": None}],
            "selectors": [{"cel": {"expression": expression}}],
            "nested": [[1, [2, {"k": "v"}]], []],
        },
    }


@pytest.mark.parametrize("style", range(len(DUMPS)))
def test_every_dump_style_is_handled(style: int) -> None:
    options = dict(DUMPS[style])
    dumper = options.pop("Dumper", yaml.SafeDumper)
    # Multi-line strings only where the dumper writes them as block scalars (PyYAML's own
    # multi-line quoted scalars are left to the exact composer).
    multi_line = dumper is not yaml.SafeDumper
    expression = 'device.driver == "x"'
    if multi_line:
        expression += ' &&\ndevice.attributes["x"].ok\n'
    text = yaml.dump(slice_like(expression), Dumper=dumper, sort_keys=False, **options)
    indexes = compare_text(text)
    assert len(indexes) == 1 and indexes[0] is not None, text


@PROPERTIES
@given(VALUES, st.sampled_from(range(len(DUMPS))))
def test_dumped_values_agree(value: Any, style: int) -> None:
    options = dict(DUMPS[style])
    dumper = options.pop("Dumper", yaml.SafeDumper)
    text = yaml.dump(value, Dumper=dumper, sort_keys=False, allow_unicode=True, **options)
    compare_text(text)


def _mutate(text: str, rnd: random.Random) -> str:
    """Line-level edits that keep most of a manifest readable: re-indent, duplicate, drop, insert
    a line or a character (some of them ones libyaml reads as a line break or refuses)."""
    lines = text.split("\n")
    for _ in range(rnd.randint(1, 3)):
        at = rnd.randrange(len(lines))
        choice = rnd.random()
        if choice < 0.3:
            lines[at] = " " * rnd.randint(0, 6) + lines[at].lstrip(" ")
        elif choice < 0.45:
            lines.insert(rnd.randrange(len(lines) + 1), lines[at])
        elif choice < 0.6:
            del lines[at]
        elif choice < 0.8:
            where = rnd.randrange(len(lines[at]) + 1)
            lines[at] = lines[at][:where] + rnd.choice("-:#'\"[]{} \t\x85\u2028") + lines[at][where:]
        else:
            lines.insert(at, " " * rnd.randint(0, 6) + rnd.choice(["# c", "", "- x", "k: v", "[a]", "'q"]))
        if not lines:
            lines = [""]
    return "\n".join(lines)


MUTATION_SEEDS = [HANDLED[name] for name in (
    "sequence at the key's indentation", "nested sequences", "deeply nested lists of maps",
    "block scalars holding list and key lines", "multi-line plain scalars", "items on the next line")]


@PROPERTIES
@given(st.integers(min_value=0, max_value=2**32), st.sampled_from(range(len(MUTATION_SEEDS))))
def test_mutated_texts_agree_or_bail(seed: int, which: int) -> None:
    compare_text(_mutate(MUTATION_SEEDS[which], random.Random(seed)), fast_only=False)


@PROPERTIES
@given(st.text(alphabet="ab -:#|>'\"[]{},\n", max_size=60), VALUES)
def test_any_text_with_any_value_never_raises(text: str, value: Any) -> None:
    try:
        block_positions._scan(text, value)
    except block_positions._Unsure:
        pass


def test_documents_locate_as_the_exact_index_does(shared: Path) -> None:
    """Through ``SourceDocument.locate`` (path walker, block index or composer, whichever answers)."""
    walked = 0
    for path in sorted((shared / "realworld").rglob("*.yaml")) + EXAMPLES:
        for document in load_file(str(path)).documents:
            exact = index_chunk(document.chunk)
            walked += document.plain
            for probe in node_paths(document.value):
                assert document.locate(probe) == exact.locate(probe, document.line), (path, probe)
    assert walked > 500
