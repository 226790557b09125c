"""Cut a YAML stream into chunks at ``---`` lines, so one broken document cannot hide the others.

A ``---`` at the start of a line, followed by a space, a tab or the line's end, is always a
document marker for libyaml and goyaml (even inside a would-be quoted string it is an error,
never content), so cutting there never changes how the other documents parse.
"""
from __future__ import annotations

import re

from .positions import Chunk

# Searching for the newline first lets the regex engine skip ahead quickly.
_MARKER = re.compile(r"\n---(?=[ \t\r\n]|$)")
_DIRECTIVE_TAIL = re.compile(r"(?:^(?:%[^\n]*|[ \t]*(?:#[^\n]*)?)\r?\n)*\Z", re.MULTILINE)


def split_chunks(text: str) -> list[Chunk]:
    """Chunks of ``text`` in order, each starting at a marker (except possibly the first).

    Directive lines (``%YAML``...) just before a marker belong to the document that marker
    starts, so they move to the next chunk.
    """
    starts = [0] + [m.start() + 1 for m in _MARKER.finditer(text)]
    starts = [_pull_directives(text, start, previous)
              for previous, start in zip([0] + starts[:-1], starts)]
    bounds = list(zip(starts, starts[1:] + [len(text)]))
    chunks: list[Chunk] = []
    line = 0
    position = 0
    for start, end in bounds:
        if end <= start:
            continue
        line += text.count("\n", position, start)
        position = start
        chunks.append(Chunk(text, start, end, line))
    return chunks


def _pull_directives(text: str, start: int, previous: int) -> int:
    """Move ``start`` back over the directive (and blank/comment) lines that end the previous chunk."""
    if start == 0 or "%" not in text[previous:start]:
        return start
    tail = _DIRECTIVE_TAIL.search(text, previous, start)
    if tail is None:
        return start
    offset = tail.start()
    # Only the lines from the first directive on move; blank lines before it stay.
    for line in text[offset:start].splitlines(keepends=True):
        if line.startswith("%"):
            return offset
        offset += len(line)
    return start
