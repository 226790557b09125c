"""The regions an editor underlines: each finding's own, or inside a CEL expression the whole
sub-expression its node starts (``device.attributes["gpu.example.com"].memory``, not just its ``.``).

Findings carry where they start and end (:class:`~dralint.findings.Location`); this module keeps
them inside the text shown and widens the CEL ones. Pure functions over text and the source
stage's records; no LSP types (``translate`` maps these spans to LSP ranges).
"""
from __future__ import annotations

import bisect
from dataclasses import dataclass
from typing import Sequence

from ..cel import ast as A
from ..cel.lexer import LexError, Token, tokenize
from ..cel.parser import ParseError, parse
from ..findings import Finding
from ..source.positions import SCALAR_STYLES, PositionIndex
from ..source.records import SourceDocument
from ..source.scalar_map import map_scalar
from ..source.tokens import BREAK, line_end, region_end

_OPEN, _CLOSE = frozenset({"(", "[", "[?", "{"}), frozenset({")", "]", "}"})
# The suffix of a finding's field that holds a CEL expression (selectors of every kind).
_CEL_FIELD = "cel.expression"
# Index and optional-field calls continue a member chain as ``.field`` does.
_MEMBER_CALLS = ("_[_]", "_[?_]", "_?._")


@dataclass(frozen=True, order=True)
class Point:
    """0-based line and character (code point) column."""

    line: int
    column: int


@dataclass(frozen=True)
class Span:
    """A region of a text, end exclusive."""

    start: Point
    end: Point


class Lines:
    """A text's lines as LSP counts them, for converting offsets and positions both ways."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.starts = [0] + [m.end() for m in BREAK.finditer(text)]

    def __len__(self) -> int:
        return len(self.starts)

    def line(self, number: int) -> str:
        """Line ``number`` without its break ("" beyond the end)."""
        if not 0 <= number < len(self.starts):
            return ""
        end = self.starts[number + 1] if number + 1 < len(self.starts) else len(self.text)
        return self.text[self.starts[number]:end].rstrip("\r\n")

    def point(self, offset: int) -> Point:
        """The position of character ``offset`` (clamped to the text)."""
        offset = max(0, min(offset, len(self.text)))
        number = bisect.bisect_right(self.starts, offset) - 1
        return Point(number, min(offset - self.starts[number], len(self.line(number))))

    def offset(self, point: Point) -> int:
        """The character offset of ``point`` (clamped to its line and to the text)."""
        if point.line >= len(self.starts):
            return len(self.text)
        number = max(point.line, 0)
        return self.starts[number] + max(0, min(point.column, len(self.line(number))))

    def clamp(self, point: Point) -> Point:
        """``point`` moved inside the text (a finding may name a place an edit has removed)."""
        return self.point(self.offset(point))


class DocumentsByOffset:
    """The parsed documents of a text, found by a character offset in it in logarithmic time: a
    file of 10,000 objects has as many findings, each looked up (a scan made that quadratic)."""

    def __init__(self, documents: Sequence[SourceDocument]) -> None:
        # sorted() is stable: documents a chunk holds together keep their order.
        chunked = sorted(((d, d.chunk) for d in documents if d.chunk is not None), key=lambda dc: dc[1].start)
        self._starts = [chunk.start for _, chunk in chunked]
        self._ends = [chunk.end for _, chunk in chunked]
        self._documents = [d for d, _ in chunked]

    def at(self, offset: int) -> list[SourceDocument]:
        """The documents whose text holds character ``offset``, in order: one, or those a chunk
        holds together (after ``...`` markers), or none."""
        hi = bisect.bisect_right(self._starts, offset)
        lo = bisect.bisect_left(self._starts, self._starts[hi - 1]) if hi else hi
        return [d for d, end in zip(self._documents[lo:hi], self._ends[lo:hi]) if offset < end]


def finding_span(finding: Finding, lines: Lines, documents: Sequence[SourceDocument] | DocumentsByOffset) -> Span:
    """The region to underline for ``finding`` in the text of ``lines``.

    ``documents`` are the parsed documents of that text (to follow a CEL expression through YAML
    quoting and folding; a caller placing many findings makes :class:`DocumentsByOffset` once); a
    finding without a position covers the first line.
    """
    if finding.line <= 0:
        return Span(Point(0, 0), Point(0, line_end(lines.line(0), 0)))
    start = lines.clamp(Point(finding.line - 1, max(finding.column - 1, 0)))
    if finding.field.endswith(_CEL_FIELD):
        located = documents if isinstance(documents, DocumentsByOffset) else DocumentsByOffset(documents)
        inside = _cel_span(lines, located, lines.offset(start))
        if inside is not None:
            return inside
    end = finding.location.end
    if end.line > 0:
        return visible(Span(start, lines.clamp(Point(end.line - 1, end.column - 1))), lines)
    # A finding the engine held no text for (an input error): measured on the text shown.
    return visible(Span(start, Point(start.line, region_end(lines.line(start.line), start.column))), lines)


def visible(span: Span, lines: Lines) -> Span:
    """``span``, or the last line with content when ``span`` is empty and nothing but blank lines
    follows it: a finding placed past the text's end (its line counted otherwise, or kept from a
    longer text), an error at the end of the text. Editors show nothing for an empty range there."""
    if span.start != span.end or lines.line(span.start.line)[span.start.column:].strip() \
            or any(lines.line(n).strip() for n in range(span.start.line + 1, len(lines))):
        return span
    for number in range(min(span.start.line, len(lines) - 1), -1, -1):
        text = lines.line(number)
        if text.strip():
            return Span(Point(number, len(text) - len(text.lstrip())), Point(number, len(text.rstrip())))
    return span  # a blank text: there is nothing to show


# -- CEL ----------------------------------------------------------------------------------------


def _cel_span(lines: Lines, documents: DocumentsByOffset, offset: int) -> Span | None:
    """The sub-expression at file offset ``offset`` of a CEL string scalar, or None if it is not in one."""
    for doc in documents.at(offset):
        chunk = doc.chunk
        assert chunk is not None  # DocumentsByOffset holds documents with text only
        index = doc.exact_positions()
        found = _scalar_at(index, offset - chunk.start) if index is not None else None
        if found is None:
            continue
        text, raw_start, raw_offsets = found
        relative = offset - chunk.start - raw_start
        k = bisect.bisect_left(raw_offsets, relative)
        if k >= len(raw_offsets) or raw_offsets[k] != relative:
            return None
        lo, hi = expression_extent(text, k)
        base = chunk.start + raw_start
        return Span(lines.point(base + raw_offsets[lo]), lines.point(base + raw_offsets[hi - 1] + 1))
    return None


def _scalar_at(index: PositionIndex, body_offset: int) -> tuple[str, int, list[int]] | None:
    """(decoded text, start in the chunk, chunk offset of each character) of the string scalar
    holding ``body_offset``, when its characters can be mapped back to the source."""
    for span in index.spans.values():
        if span.text is None or span.style not in SCALAR_STYLES or not span.start_index <= body_offset < span.end_index:
            continue
        mapped = map_scalar(index.body[span.start_index:span.end_index], span.style, span.text)
        if mapped is None or not mapped[1]:
            return None
        return span.text, span.start_index, mapped[1]
    return None


def expression_extent(expression: str, offset: int) -> tuple[int, int]:
    """[start, end) of the CEL sub-expression that a finding at character ``offset`` points at.

    cel-go (and our checks) place an issue at the token of the node it concerns: the ``.`` of a
    field selection, the ``[`` of an index, the operator of a comparison. The extent is that node
    with its operands, widened to the whole member chain it is part of
    (``device.attributes["d"].name``). Where the expression does not parse, it is the token at
    ``offset``. Always a non-empty range inside the expression (for a non-empty expression).
    """
    n = len(expression)
    if n == 0:
        return 0, 0
    offset = max(0, min(offset, n - 1))
    try:
        tokens = [t for t in tokenize(expression) if t.kind != "eof"]
        root = parse(expression).root
    except (LexError, ParseError, RecursionError):
        return _token_at(expression, offset)
    spans, parents = _node_spans(root, tokens)
    at = [e for e in spans if e.offset == offset]
    if not at:
        containing = [e for e, (lo, hi) in spans.items() if lo <= offset < hi]
        if not containing:
            return _token_at(expression, offset)
        node = min(containing, key=lambda e: spans[e][1] - spans[e][0])
    else:
        node = max(at, key=lambda e: spans[e][1] - spans[e][0])
    node = _chain_top(node, parents)
    lo, hi = spans[node]
    return (lo, hi) if lo < hi else _token_at(expression, offset)


def _token_at(expression: str, offset: int) -> tuple[int, int]:
    try:
        tokens = tokenize(expression[offset:])
    except LexError as exc:
        tokens = tokenize(expression[offset:offset + exc.offset]) if exc.offset > 0 else []
    if tokens and tokens[0].start == 0:
        return offset, offset + len(tokens[0].text)
    return offset, offset + 1


def _chain_top(node: A.Expr, parents: dict[A.Expr, A.Expr]) -> A.Expr:
    """The outermost selection or index whose operand chain starts with ``node``."""
    while True:
        parent = parents.get(node)
        if isinstance(parent, A.Select) and not parent.test_only and parent.operand is node:
            node = parent
        elif isinstance(parent, A.Call) and parent.function in _MEMBER_CALLS and parent.args and parent.args[0] is node:
            node = parent
        else:
            return node


def _node_spans(root: A.Expr, tokens: Sequence[Token]) -> tuple[dict[A.Expr, tuple[int, int]], dict[A.Expr, A.Expr]]:
    """[start, end) of every node (its own token, its operands and the brackets they open), and each node's parent."""
    table = _Tokens(tokens)
    order = A.walk(root)
    parents = {child: e for e in order for child in A.children(e)}
    spans: dict[A.Expr, tuple[int, int]] = {}
    for e in reversed(order):  # children before parents, without recursion
        lo, hi = table.own_extent(e)
        for child in A.children(e):
            c_lo, c_hi = spans[child]
            lo, hi = min(lo, c_lo), max(hi, c_hi)
        spans[e] = (lo, table.balanced_end(lo, hi))
    return spans, parents


class _Tokens:
    """An expression's tokens with their starts and matching brackets."""

    def __init__(self, tokens: Sequence[Token]) -> None:
        self.tokens = tokens
        self.starts = [t.start for t in tokens]
        self.index = {t.start: i for i, t in enumerate(tokens)}
        self.match: dict[int, int] = {}
        stack: list[int] = []
        for i, t in enumerate(tokens):
            if t.kind == "op" and t.text in _OPEN:
                stack.append(i)
            elif t.kind == "op" and t.text in _CLOSE and stack:
                self.match[stack.pop()] = i

    def end(self, i: int) -> int:
        return self.tokens[i].start + len(self.tokens[i].text)

    def own_extent(self, e: A.Expr) -> tuple[int, int]:
        i = self.index.get(e.offset)
        if i is None:  # a node placed between tokens (not made by our parser): one character
            return e.offset, e.offset + 1
        end = self.end(i)
        if i + 1 < len(self.tokens):
            text, following = self.tokens[i].text, self.tokens[i + 1]
            if isinstance(e, A.Select) and not e.test_only and text == ".":
                end = self.end(i + 1)  # the field name after the dot
            elif self.tokens[i].kind == "ident" and following.text == "(":
                end = following.start + 1  # a global call or macro: its arguments follow
        return self.tokens[i].start, end

    def balanced_end(self, lo: int, hi: int) -> int:
        """``hi`` moved past the closing brackets of the brackets opened in [lo, hi)."""
        i = bisect.bisect_left(self.starts, lo)
        while i < len(self.tokens) and self.tokens[i].start < hi:
            t = self.tokens[i]
            if t.kind == "op" and t.text in _CLOSE:
                return hi  # it closes a bracket opened before lo: the node ends before it
            close = self.match.get(i)
            if close is not None:  # skip the bracketed group whole
                hi = max(hi, self.end(close))
                i = close
            i += 1
        return hi
