"""A large ``kind: List`` (``kubectl get … -o yaml``) read item by item, in proportionate memory.

rapidyaml's tree of a whole document takes about twelve times the text (a 15 MB cluster dump:
180 MB, on top of the values). A dump is one document, a mapping whose ``items`` is a block
sequence; its items are cut apart at their ``-`` lines and read by the fast reader a batch at a
time, so that only one batch's tree is alive at once. The cut is only made where it cannot
change the value: every batch must be read by the fast reader (plain YAML, no aliases, no
duplicate keys, every scalar closed within its batch) as a sequence of exactly its items, and
the rest of the document (``apiVersion``, ``kind``, ``metadata``) with ``items: []``; otherwise
the caller reads the document whole.
"""
from __future__ import annotations

import re
from typing import Any

from . import fastpath

BIG = 2 * 1024 * 1024
"""Documents smaller than this are read whole: their tree is small, and one pass is faster."""
BATCH = 512 * 1024
"""About this many characters of items per batch: a tree of a few MB, few enough calls."""
_ITEMS = re.compile(r"^items:[ \t]*(?:#[^\n]*)?\n", re.MULTILINE)
_CONTENT = re.compile(r"^( *)([^ \n#])", re.MULTILINE)


def list_values(body: str) -> tuple[list[Any], tuple[int, ...]] | None:
    """The one document of ``body`` (a large List) as the fast reader reads it whole, and where
    its items start in ``body`` (and the sequence ends); None when it is not read this way."""
    if len(body) < BIG or not fastpath.AVAILABLE:
        return None
    items = _ITEMS.search(body)
    if items is None:
        return None
    first = _CONTENT.search(body, items.end())
    if first is None or first.group(2) != "-":
        return None
    indent = len(first.group(1))
    starts, end = _item_starts(body, first.start(), indent)
    if not starts:
        return None
    rest = fastpath.fast_values(body[:items.start()] + "items: []\n" + body[end:])
    if rest is None or len(rest) != 1 or not isinstance(rest[0], dict) or rest[0].get("items") != []:
        return None
    collected: list[Any] = []
    for batch_start, batch_end, count in _batches(starts, end):
        values = fastpath.fast_values(body[batch_start:batch_end])
        if values is None or len(values) != 1 or not isinstance(values[0], list) or len(values[0]) != count:
            return None
        collected.extend(values[0])
    rest[0]["items"] = collected
    return rest, tuple(starts) + (end,)


def _item_starts(body: str, position: int, indent: int) -> tuple[list[int], int]:
    """Offsets of the lines that start an item (``-`` at ``indent``), and where the sequence ends:
    at the first line with content that is shallower, or as deep but no item."""
    starts: list[int] = []
    # Only the lines whose content starts within the first ``indent + 1`` columns: the regex
    # engine skips the deeper ones (almost all) without a Python step each.
    for match in re.compile(rf"^( {{0,{indent}}})([^ \n#])", re.MULTILINE).finditer(body, position):
        if len(match.group(1)) == indent and match.group(2) == "-" and body.startswith(("- ", "-\n"), match.start(2)):
            starts.append(match.start())
            continue
        return starts, match.start()
    return starts, len(body)


def _batches(starts: list[int], end: int) -> list[tuple[int, int, int]]:
    """(start, end, number of items) of runs of whole items of about :data:`BATCH` characters."""
    bounds = starts + [end]
    batches: list[tuple[int, int, int]] = []
    first = 0
    for i in range(1, len(bounds)):
        if bounds[i] - bounds[first] >= BATCH or i == len(bounds) - 1:
            batches.append((bounds[first], bounds[i], i - first))
            first = i
    return batches
