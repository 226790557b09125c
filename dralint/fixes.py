"""A fix: edits of the text the user wrote, never a re-serialisation of the parsed document.

A finding may carry one :class:`Fix` (``Finding.fix``): a title, its safety, and the
:class:`TextEdit` s that make it. Positions follow the findings' convention: lines and columns
are 1-based, a column counts characters (Unicode code points) from the start of its line, and
the end is exclusive, so an insertion has ``start == end``. Lines end at ``\\n``, ``\\r\\n`` or
``\\r``. Every rule declares in its catalog entry whether it has a fix and how safe it is
(``autofix: safe|unsafe`` in ``rules/DRAnnn-*.yaml``), as ruff does:

- *safe*: the meaning the user wrote is certain and kept; ``dralint --fix`` applies it;
- *unsafe*: probably what the user meant, shown; applied only with ``--unsafe-fixes``.

A fix is never safer than its rule declares. This module is the record only; which findings get
a fix is decided in :mod:`dralint.fixers`.
"""
from __future__ import annotations

import bisect
import re
from dataclasses import dataclass
from enum import Enum
from typing import Any, Iterable

_BREAK = re.compile(r"\r\n|\r|\n")


class Safety(str, Enum):
    SAFE = "safe"
    UNSAFE = "unsafe"


@dataclass(frozen=True, order=True)
class TextEdit:
    """Replace the text from (start_line, start_column) up to (end_line, end_column) of ``file`` by ``new_text``."""

    file: str
    start_line: int
    start_column: int
    end_line: int
    end_column: int
    new_text: str

    def to_dict(self) -> dict[str, Any]:
        return {"file": self.file, "start": {"line": self.start_line, "column": self.start_column},
                "end": {"line": self.end_line, "column": self.end_column}, "new_text": self.new_text}


@dataclass(frozen=True)
class Fix:
    """One change that resolves one finding: all its edits are applied together or not at all."""

    title: str
    safety: Safety
    edits: tuple[TextEdit, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"title": self.title, "safety": self.safety.value, "edits": [e.to_dict() for e in self.edits]}


class EditConflict(ValueError):
    """Edits that overlap, or that point outside the text they are applied to."""


def line_starts(text: str) -> list[int]:
    """The character offset at which each line of ``text`` starts (lines end at \\n, \\r\\n or \\r)."""
    return [0] + [m.end() for m in _BREAK.finditer(text)]


def split_lines(text: str) -> list[str]:
    """``text`` cut into its lines, each with its line break, as :func:`line_starts` counts them.

    ``str.splitlines`` also cuts at U+0085, U+2028, form feeds and other characters that editors,
    LSP, ``patch`` and YAML 1.2 keep inside a line (a quoted YAML string may hold them).
    """
    starts = line_starts(text)
    ends = starts[1:] + [len(text)]
    return [text[start:end] for start, end in zip(starts, ends) if start < end]


def edit_from_offsets(file: str, text: str, start: int, end: int, new_text: str,
                      starts: list[int] | None = None) -> TextEdit:
    """The edit replacing ``text[start:end]`` (character offsets) by ``new_text``.

    ``starts`` (from :func:`line_starts` of the same text) saves recounting lines for many edits.
    """
    starts = starts if starts is not None else line_starts(text)
    (sl, sc), (el, ec) = _position(starts, start), _position(starts, end)
    return TextEdit(file, sl, sc, el, ec, new_text)


def _position(starts: list[int], offset: int) -> tuple[int, int]:
    lo, hi = 0, len(starts) - 1
    while lo < hi:  # the last line starting at or before offset
        mid = (lo + hi + 1) // 2
        if starts[mid] <= offset:
            lo = mid
        else:
            hi = mid - 1
    return lo + 1, offset - starts[lo] + 1


def _offset(text: str, starts: list[int], line: int, column: int) -> int:
    if not 1 <= line <= len(starts):
        raise EditConflict(f"line {line} is outside the text ({len(starts)} lines)")
    begin = starts[line - 1]
    end = starts[line] if line < len(starts) else len(text)
    length = len(text[begin:end].rstrip("\r\n"))
    if not 1 <= column <= length + 1:
        raise EditConflict(f"column {column} is outside line {line} ({length} characters)")
    return begin + column - 1


def apply_edits(text: str, edits: Iterable[TextEdit]) -> str:
    """``text`` with ``edits`` applied (all positions refer to ``text`` as given).

    Edits of one text must not overlap; two insertions at the same place keep their order.
    Raises :class:`EditConflict` otherwise, or when a position is outside the text.
    """
    starts = line_starts(text)
    return _spliced(text, starts, sorted(_spans(text, starts, edits, 0)))


# An edit as character offsets: (start, end, order among the edits applied together, new text).
_Span = tuple[int, int, int, str]


def _spans(text: str, starts: list[int], edits: Iterable[TextEdit], first: int) -> list[_Span]:
    spans = []
    for order, edit in enumerate(edits, first):
        start = _offset(text, starts, edit.start_line, edit.start_column)
        end = _offset(text, starts, edit.end_line, edit.end_column)
        if end < start:
            raise EditConflict(f"edit ends before it starts: {edit}")
        spans.append((start, end, order, edit.new_text))
    return spans


def _spliced(text: str, starts: list[int], spans: list[_Span]) -> str:
    """``text`` with sorted ``spans`` applied; :class:`EditConflict` when two overlap."""
    out: list[str] = []
    done = 0
    for start, end, _, new_text in spans:
        if start < done:
            raise EditConflict(f"edits overlap at line {_position(starts, start)[0]}")
        out.append(text[done:start])
        out.append(new_text)
        done = end
    out.append(text[done:])
    return "".join(out)


def _collides(chosen: list[_Span], span: _Span) -> bool:
    """Whether ``span`` overlaps one of ``chosen`` (sorted, none overlapping another).

    Sorted spans that do not overlap end in order, so only the neighbours ``span`` would sit
    between can overlap it: the whole check costs a binary search, whatever the number chosen.
    """
    at = bisect.bisect_left(chosen, span)
    return (at > 0 and span[0] < chosen[at - 1][1]) or (at < len(chosen) and chosen[at][0] < span[1])


def apply_fixes(text: str, file: str, fixes: Iterable[Fix]) -> tuple[str, list[Fix], list[Fix]]:
    """Apply as many of ``fixes`` to ``file``'s ``text`` as do not overlap an earlier one.

    Returns the new text, the fixes applied and the fixes skipped (they overlapped; a second pass
    over the new text may apply them). Edits of other files are not this text's: a fix that has
    any is skipped. Each fix is placed among the chosen ones by binary search, so a file with
    thousands of fixes is still read once.
    """
    starts = line_starts(text)
    taken: list[Fix] = []
    skipped: list[Fix] = []
    chosen: list[_Span] = []
    for fix in fixes:
        try:
            if any(e.file != file for e in fix.edits):
                raise EditConflict("an edit of another file")
            spans = sorted(_spans(text, starts, fix.edits, len(chosen)))
            for before, after in zip(spans, spans[1:]):
                if after[0] < before[1]:
                    raise EditConflict("the fix's own edits overlap")
            if any(_collides(chosen, span) for span in spans):
                raise EditConflict("overlaps a fix applied before")
        except EditConflict:
            skipped.append(fix)
            continue
        for span in spans:
            bisect.insort(chosen, span)
        taken.append(fix)
    return _spliced(text, starts, chosen), taken, skipped
