"""Where a document and each of its nodes are in its file: the chunk of text, and node spans built on demand."""
from __future__ import annotations

from dataclasses import dataclass, field

from ..findings import Position
from ..paths import Steps
from .scalar_map import map_scalar

SCALAR_STYLES = ("", "'", '"', "|", ">")


@dataclass(frozen=True)
class Chunk:
    """Where a document's text lives: ``text[start:end]`` of its file, starting at line ``line_offset`` (0-based)."""

    text: str
    start: int
    end: int
    line_offset: int
    sub_index: int = 0
    """Which document of this chunk (a chunk holds several only after ``...`` markers)."""

    @property
    def body(self) -> str:
        return self.text[self.start:self.end]


@dataclass(frozen=True)
class NodeSpan:
    """One node's place in its chunk (0-based lines and columns, character offsets)."""

    key: tuple[int, int] | None
    """(line, column) of the mapping key, for mapping entries."""
    line: int
    column: int
    end_index: int
    start_index: int
    style: str
    """libyaml's scalar style ('' plain, quotes, '|', '>'); '' for containers, '*' for aliases."""
    text: str | None = None
    """The scalar's decoded string, to check the offset map against."""


@dataclass
class PositionIndex:
    """Node spans of one document by path (plain tuples; :class:`FieldPath` looks up the same)."""

    body: str = ""
    line_offset: int = 0
    spans: dict[Steps, NodeSpan] = field(default_factory=dict)

    def add(self, path: Steps, span: NodeSpan) -> None:
        """Record ``span`` for ``path`` (a later duplicate key replaces the earlier one)."""
        self.spans[path] = span

    def _position(self, line: int, column: int) -> Position:
        return Position(line + self.line_offset + 1, column + 1)

    def locate(self, path: Steps, document_line: int) -> Position:
        """Key position of the deepest existing mapping entry on ``path`` (item start for list items)."""
        for depth in range(len(path), -1, -1):
            span = self.spans.get(path[:depth])
            if span is not None:
                if span.key is not None:
                    return self._position(*span.key)
                return self._position(span.line, span.column)
        return Position(document_line, 1)

    def locate_in_scalar(self, path: Steps, offset: int, document_line: int) -> Position:
        """File position of character ``offset`` of the string scalar at ``path``."""
        span = self.spans.get(path)
        if span is None or span.text is None or span.style not in SCALAR_STYLES or span.end_index < 0:
            return self.locate(path, document_line)
        start = self._position(span.line, span.column)
        raw = self.body[span.start_index:span.end_index]
        mapped = map_scalar(raw, span.style, span.text)
        if mapped is None or not 0 <= offset < len(mapped[1]):
            return start
        source = mapped[1][offset]
        newlines = raw.count("\n", 0, source)
        if newlines == 0:
            return self._position(span.line, span.column + source)
        return self._position(span.line + newlines, source - raw.rfind("\n", 0, source) - 1)
