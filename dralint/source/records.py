"""The records the source stage hands on: files, documents and problems."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from ..findings import Position
from ..paths import FieldPath
from .block_positions import PathLocator, index_block
from .positions import Chunk, PositionIndex
from .tokens import BREAK, region_end

UNKNOWN = Position(0, 0)


@dataclass(frozen=True)
class SourceProblem:
    """Something that stopped a file or a document from being read as Kubernetes reads it.

    ``kind`` is one of 'unreadable', 'binary', 'syntax', 'duplicate-key', 'too-large',
    'too-deep', 'alias-limit'. Lines and columns are 1-based; 0 means unknown.
    """

    kind: str
    message: str
    file: str
    line: int
    column: int
    document: int | None = None
    path: FieldPath | None = None


@dataclass(eq=False)
class SourceDocument:
    """One YAML document: its value as Kubernetes reads it, and a way back to file positions.

    Positions are computed on first use (re-reading only this document with a position-tracking
    parser) and kept on the document, so clean documents never pay for them.
    """

    file: str
    index: int
    line: int
    value: Any
    chunk: Chunk | None = field(default=None, repr=False)
    plain: bool = field(default=False, repr=False)
    """Read by the fast reader, alone in its chunk: plain block YAML without duplicate keys."""
    items: tuple[int, ...] = field(default=(), repr=False)
    """A large List read item by item (itemwise.py): where in the chunk's body each item starts,
    and where the last ends. Positions inside an item are then found in that item's text alone."""
    _positions: "PositionIndex | None" = field(default=None, init=False, repr=False)
    _item_documents: dict[int, "SourceDocument"] = field(default_factory=dict, init=False, repr=False)
    _exact: "PositionIndex | None" = field(default=None, init=False, repr=False)
    # False: tried, and the walker would be unsure of this document (see path_locator).
    _locator: "PathLocator | Literal[False] | None" = field(default=None, init=False, repr=False)
    _line_starts: list[int] | None = field(default=None, init=False, repr=False)

    def positions(self) -> "PositionIndex | None":
        """Where this document's nodes start (for :meth:`locate`), computed once; None for objects
        without a file.

        Plain block YAML is indexed from its lines and value, a few times faster than re-reading
        it; anything else, or anything that scan is unsure of, is re-read by the exact composer.
        """
        if self._positions is None and self.chunk is not None:
            fast = index_block(self.chunk.body, self.value) if self.chunk.sub_index == 0 else None
            if fast is not None:
                fast.line_offset = self.chunk.line_offset
            self._positions = fast or self.exact_positions()
        return self._positions

    def exact_positions(self) -> "PositionIndex | None":
        """The composer's full index, with each scalar's text and style (for :meth:`locate_in_scalar`)."""
        if self._exact is None and self.chunk is not None:
            from .composer import index_chunk  # PyYAML is loaded only when a position needs it

            self._exact = index_chunk(self.chunk)
        return self._exact

    def _in_item(self, path: FieldPath) -> tuple["SourceDocument", FieldPath] | None:
        """The item of a List read item by item that ``path`` lies in, as a document of its own
        text (a one-item sequence), and the path in it; None for other documents and paths."""
        parts = tuple(path)
        if not self.items or self.chunk is None or len(parts) < 2 or parts[0] != "items":
            return None
        number = parts[1]
        if not isinstance(number, int) or not 0 <= number < len(self.items) - 1:
            return None
        item = self._item_documents.get(number)
        if item is None:
            chunk = self.chunk
            start, end = chunk.start + self.items[number], chunk.start + self.items[number + 1]
            offset = chunk.line_offset + chunk.text.count("\n", chunk.start, start)
            item = SourceDocument(self.file, self.index, offset + 1, [self.value["items"][number]],
                                  Chunk(chunk.text, start, end, offset), plain=self.plain)
            self._item_documents[number] = item
        return item, FieldPath((0,) + parts[2:])

    def locate(self, path: FieldPath) -> Position:
        """Position of the deepest node on ``path`` that exists.

        A mapping entry gives the position of its key, a list item the item's start; an
        empty path gives the document's start. Unknown (0, 0) for objects without a file.
        """
        inside = self._in_item(path)
        if inside is not None:
            return inside[0].locate(inside[1])
        if self._positions is None and self.chunk is not None and self.plain:
            # Most documents with a finding have one or two: walking the lines on their paths is
            # cheaper than indexing every node.
            locator = self.path_locator()
            found = locator.locate(self.value, tuple(path)) if locator is not None else None
            if found is not None:
                return Position(found[0] + self.chunk.line_offset + 1, found[1] + 1)
        index = self.positions()
        if index is None:
            return UNKNOWN
        return index.locate(tuple(path), self.line)

    def end_of(self, start: Position) -> Position:
        """Where what a finding at ``start`` covers ends (exclusive; :func:`tokens.region_end`),
        measured on that line of this document's text; unknown when the line is not in it."""
        if self.chunk is None or start.line <= 0:
            return UNKNOWN
        number = start.line - 1 - self.chunk.line_offset
        text = self._locator.line(number) if self._locator else self._line(number)
        if text is None:
            return UNKNOWN
        column = max(start.column - 1, 0)
        end = region_end(text, min(column, len(text)))
        return Position(start.line, max(end, column) + 1)

    def _line(self, number: int) -> str | None:
        """Line ``number`` (0-based) of this document's text without its break, None past its end."""
        assert self.chunk is not None
        body = self.chunk.body
        if self._line_starts is None:
            self._line_starts = [0] + [m.end() for m in BREAK.finditer(body)]
        starts = self._line_starts
        if not 0 <= number < len(starts):
            return None
        return body[starts[number]:starts[number + 1] if number + 1 < len(starts) else len(body)].rstrip("\r\n")

    def path_locator(self) -> "PathLocator | None":
        """The line walker for this document's paths (built once), or None when it would be unsure."""
        if self._locator is None and self.chunk is not None:
            try:
                self._locator = PathLocator(self.chunk.body)
            except ValueError:
                self._locator = False
        return self._locator or None

    def scalar_source(self, path: FieldPath) -> tuple[str, str] | None:
        """The scalar at ``path`` as written, and its style ('' plain, quotes, '|', '>'), or None."""
        inside = self._in_item(path)
        if inside is not None:
            return inside[0].scalar_source(inside[1])
        index = self.exact_positions()
        span = index.spans.get(tuple(path)) if index is not None else None
        if span is None or span.text is None:
            return None
        return span.text, span.style

    def locate_in_scalar(self, path: FieldPath, offset: int) -> Position:
        """File position of character ``offset`` of the string at ``path``.

        Follows literal and folded block scalars, plain multi-line scalars and quoted strings
        with escapes; falls back to the scalar's start (or :meth:`locate`) when the offset or
        the node cannot be mapped.
        """
        inside = self._in_item(path)
        if inside is not None:
            return inside[0].locate_in_scalar(inside[1], offset)
        index = self.exact_positions()
        if index is None:
            return UNKNOWN
        return index.locate_in_scalar(tuple(path), offset, self.line)


@dataclass
class SourceFile:
    """Everything read from one file: its non-empty documents and its problems."""

    name: str
    documents: list[SourceDocument]
    problems: list[SourceProblem]
    skipped: str = ""
    """Why the file holds no manifests though it was found ("helm-template", "kustomize-patch"...)."""
