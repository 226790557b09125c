"""Edits of YAML text that change a few nodes and keep every other character as written.

Each operation returns :class:`Splice` s (character ranges and their new text) computed from a
:class:`~dralint.yamltext.layout.Layout`. Moved entries travel with their comments, quoting and
inner layout; only their indentation changes. Block style is edited line by line; a flow-style
mapping is rewritten only when it sits on one line (its entries keep their text, the separators
become ``", "``). Anything else raises :class:`EditRefused`, and the caller leaves the text alone.
"""
from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from typing import Iterable, Sequence

from ..fixes import TextEdit, edit_from_offsets, split_lines
from .layout import Layout, Node


class EditRefused(ValueError):
    """A change that cannot be written faithfully in this text's layout."""


@dataclass(frozen=True, order=True)
class Splice:
    """Replace ``text[start:end]`` by ``new``."""

    start: int
    end: int
    new: str


# Plain scalars that read back as the same string (a word, a DNS-like name, an API version).
_PLAIN = re.compile(r"[A-Za-z_][A-Za-z0-9_./-]*")
_NOT_STRINGS = frozenset({"true", "false", "yes", "no", "on", "off", "null", "y", "n", "~"})


def scalar_text(value: str, style: str) -> str:
    """``value`` written in the quoting ``style`` of the scalar it replaces ('' plain, quotes)."""
    if style == "'":
        return "'" + value.replace("'", "''") + "'"
    if style == '"' or not _PLAIN.fullmatch(value) or value.lower() in _NOT_STRINGS:
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return value


def replace_scalar(node: Node, value: str) -> Splice:
    """A scalar (or a key) with a new string value, in its own quoting style."""
    if node.kind != "scalar" or node.style not in ("", "'", '"') or node.props:
        raise EditRefused("the value is not a plain or quoted scalar")
    return Splice(node.start, node.end, scalar_text(value, node.style))


def indent_step(layout: Layout, root: Node | None) -> int:
    """How many spaces this document indents a nested mapping by (the most common step; 2 if none)."""
    steps: Counter[int] = Counter()
    for node in root.walk() if root is not None else ():
        if node.kind == "map" and not node.flow:
            for key, value in node.entries:
                if value.kind == "map" and not value.flow and value.entries and value.line > key.line:
                    steps[value.column - key.column] += 1
    positive = [(n, s) for s, n in steps.items() if s > 0]
    return max(positive)[1] if positive else 2


def segment(layout: Layout, mapping: Node, index: int) -> tuple[int, int]:
    """The text of one block-mapping entry: from its key (or the comment lines right above it) to
    the end of the line its value ends on. The first entry's comments above stay with its parent."""
    key, value = mapping.entries[index]
    end = layout.line_end(layout.content_end(value))
    if not layout.starts_line(key.start):
        return key.start, end
    line = layout.line_of(key.start)
    if index:
        floor = layout.line_end(layout.content_end(mapping.entries[index - 1][1]))
        while line > 0 and layout.line_starts[line - 1] >= floor and \
                layout.text[layout.line_starts[line - 1]:layout.line_starts[line]].strip().startswith("#"):
            line -= 1
    return layout.line_starts[line], end


def _indent(text: str, step: int) -> str:
    """Every non-empty line of ``text`` moved right by ``step`` spaces (block scalars keep their content)."""
    pad = " " * step
    return "".join(pad + line if line.strip("\r\n") else line for line in split_lines(text))


def _dedent(text: str, step: int) -> str:
    """Every line moved left by up to ``step`` spaces."""
    out = []
    for line in split_lines(text):
        spaces = len(line) - len(line.lstrip(" "))
        out.append(line[min(spaces, step):])
    return "".join(out)


def _ended(piece: str, newline: str) -> str:
    return piece if piece.endswith(("\n", "\r")) else piece + newline


def _key_text(mapping: Node, name: str) -> str:
    """A new key, quoted as the mapping's other keys are when they are all quoted alike (JSON)."""
    styles = {key.style for key, _ in mapping.entries}
    return scalar_text(name, styles.pop() if len(styles) == 1 else "")


def _block_entries(layout: Layout, mapping: Node) -> int:
    if mapping.kind != "map" or mapping.props:
        raise EditRefused("not a plain mapping")
    columns = {key.column for key, _ in mapping.entries}
    if len(columns) > 1 or any(key.kind != "scalar" or key.props for key, _ in mapping.entries):
        raise EditRefused("the mapping's keys are not laid out one per line")
    explicit = next((key for key, _ in mapping.entries if _explicit(layout, key)), None)
    if explicit is not None:
        # An entry's text would start at its key, after the `?`: moved, it would lose its indicator.
        raise EditRefused(f"`{explicit.value}` at line {explicit.line + 1} is an explicit key (`? {explicit.value}`); "
                          f"write it as `{explicit.value}: …`")
    return columns.pop() if columns else mapping.column


def _explicit(layout: Layout, key: Node) -> bool:
    """Whether a block mapping's key was written after `?`: an implicit key's `:` follows it on its line."""
    return not layout.text[key.end:layout.line_end(key.end)].lstrip(" \t").startswith(":")


def _null(node: Node) -> bool:
    """An empty value (``basic:``, ``basic: ~``): the API server reads it as an absent one."""
    return node.kind == "scalar" and node.style == "" and not node.props and node.value in ("", "~", "null", "Null",
                                                                                              "NULL")


def _flow_pieces(layout: Layout, mapping: Node) -> list[str]:
    if layout.line_of(mapping.start) != layout.line_of(max(mapping.end - 1, mapping.start)):
        raise EditRefused("a flow-style mapping written across lines")
    return [layout.text[key.start:value.end] for key, value in mapping.entries]


def wrap_entries(layout: Layout, mapping: Node, keys: Iterable[str | None], wrapper: str, step: int) -> list[Splice]:
    """Move the entries ``keys`` of ``mapping`` into a new mapping under ``wrapper``, placed where
    the first of them was (``count: 1`` → ``exactly: {count: 1}``, in the text's own style)."""
    wanted = set(keys)
    indexes = [i for i, (key, _) in enumerate(mapping.entries) if key.value in wanted]
    if not indexes:
        return []
    if mapping.entry(wrapper) is not None:
        raise EditRefused(f"`{wrapper}` is already there")
    head = _key_text(mapping, wrapper)
    if mapping.flow:
        pieces = _flow_pieces(layout, mapping)
        inner = ", ".join(pieces[i] for i in indexes)
        out = [f"{head}: {{{inner}}}" if i == indexes[0] else p for i, p in enumerate(pieces)
               if i == indexes[0] or i not in indexes]
        return [Splice(mapping.start, mapping.end, "{" + ", ".join(out) + "}")]
    column = _block_entries(layout, mapping)
    newline = layout.newline()
    ranges: list[list[int]] = []  # [start, end, last index]: neighbours move together with the blank lines between
    for i in indexes:
        start, end = segment(layout, mapping, i)
        if ranges and ranges[-1][2] == i - 1 and not layout.text[ranges[-1][1]:start].strip():
            ranges[-1][1:] = [end, i]
        else:
            ranges.append([start, end, i])
    first_start, first_end, _ = ranges[0]
    first = layout.text[first_start:first_end]
    if layout.starts_line(first_start):
        new = " " * column + head + ":" + newline + _indent(first, step)
    else:  # the first key shares its line with a list dash: the wrapper takes its place
        lines = split_lines(first)
        new = head + ":" + newline + " " * (column + step) + lines[0] + _indent("".join(lines[1:]), step)
    splices = []
    for start, end, _ in ranges[1:]:
        new = _ended(new, newline) + _indent(layout.text[start:end], step)
        splices.append(Splice(start, end, ""))
    if first.endswith(("\n", "\r")) or len(ranges) > 1:
        new = _ended(new, newline)
    else:
        new = new.rstrip("\r\n")  # the entry ended the text without a line break
    splices.append(Splice(first_start, first_end, new))
    return sorted(splices)


def hoist_entry(layout: Layout, mapping: Node, key_name: str) -> list[Splice]:
    """Replace entry ``key_name`` (a mapping) of ``mapping`` by that mapping's own entries
    (``basic: {attributes: …}`` → ``attributes: …``)."""
    pair = mapping.entry(key_name)
    if pair is None:
        return []
    key, inner = pair
    index = next(i for i, (k, _) in enumerate(mapping.entries) if k is key)
    if _null(inner):  # nothing to hoist: the entry goes
        return delete_entry(layout, mapping, key_name) if mapping.flow else _delete_alone(layout, mapping, index)
    if inner.kind != "map" or inner.props:
        raise EditRefused(f"`{key_name}` at line {key.line + 1} is not a mapping")
    clash = sorted({k.value for k, _ in inner.entries} & {k.value for k, _ in mapping.entries if k is not key}, key=str)
    if clash:
        raise EditRefused(f"`{key_name}` holds {', '.join(f'`{c}`' for c in clash)}, which is also set beside it")
    if mapping.flow:
        if not inner.flow:
            raise EditRefused("a block mapping inside a flow mapping")
        pieces = _flow_pieces(layout, mapping)
        inner_pieces = _flow_pieces(layout, inner)
        out = pieces[:index] + inner_pieces + pieces[index + 1:]
        return [Splice(mapping.start, mapping.end, "{" + ", ".join(out) + "}")]
    column = _block_entries(layout, mapping)
    newline = layout.newline()
    start, end = segment(layout, mapping, index)
    mid_line = not layout.starts_line(start)
    above = "" if mid_line else layout.text[start:layout.line_start(key.start)]
    if not inner.entries:
        return _delete_alone(layout, mapping, index)
    key_line_end = layout.line_end(key.end)
    if inner.flow:
        if layout.line_of(inner.start) != layout.line_of(key.start):
            raise EditRefused(f"`{key_name}` has a flow mapping on a line of its own")
        comment = layout.text[inner.end:key_line_end].strip()
        body = "".join(" " * column + piece + newline for piece in _flow_pieces(layout, inner))
    else:
        if inner.line == key.line:
            raise EditRefused(f"`{key_name}` starts its mapping on the key's line")
        comment = layout.text[key.end:key_line_end].strip().removeprefix(":").strip()
        body = _dedent(layout.text[key_line_end:end], inner.column - column)
    if comment and not comment.startswith("#"):
        raise EditRefused(f"unexpected text after `{key_name}:`")
    if comment:
        body = " " * column + comment + newline + body
    if mid_line:  # the key shared its line with a list dash: the first hoisted line takes its place
        body = body[min(column, len(body) - len(body.lstrip(" "))):]
    if not layout.text[start:end].endswith(("\n", "\r")):
        body = body.rstrip("\r\n")
    return [Splice(start, end, above + body)]


def _delete_alone(layout: Layout, mapping: Node, index: int) -> list[Splice]:
    """Entry ``index`` of a block mapping removed, unless nothing would be left of its list item."""
    _block_entries(layout, mapping)
    key = mapping.entries[index][0]
    if len(mapping.entries) == 1 and not layout.starts_line(key.start):
        raise EditRefused(f"`{key.value}` is empty and alone in its list item")
    return [_delete(layout, mapping, index)]


def _delete(layout: Layout, mapping: Node, index: int) -> Splice:
    start, end = segment(layout, mapping, index)
    if start == mapping.entries[index][0].start and not layout.starts_line(start):
        # The entry shares its line with a list dash: the next entry moves up to take its place.
        following = mapping.entries[index + 1][0].start
        return Splice(start, following, "")
    return Splice(start, end, "")


def delete_entry(layout: Layout, mapping: Node, key_name: str) -> list[Splice]:
    """Remove entry ``key_name`` of ``mapping`` with its comments (``--force``: a field with no equivalent)."""
    index = next((i for i, (k, _) in enumerate(mapping.entries) if k.value == key_name), None)
    if index is None:
        return []
    if mapping.flow:
        pieces = _flow_pieces(layout, mapping)
        return [Splice(mapping.start, mapping.end, "{" + ", ".join(p for i, p in enumerate(pieces) if i != index) + "}")]
    return _delete_alone(layout, mapping, index)


def wrap_value(layout: Layout, mapping: Node, key_name: str, inner_key: str, step: int) -> list[Splice]:
    """Turn ``key: value`` into ``key: {inner_key: value}`` (block style below block keys)."""
    pair = mapping.entry(key_name)
    if pair is None:
        return []
    key, value = pair
    if value.kind != "scalar" or value.style not in ("", "'", '"'):
        raise EditRefused(f"`{key_name}` is not a plain or quoted scalar")
    written = layout.text[value.start:value.end]
    if mapping.flow or layout.line_of(value.start) != layout.line_of(value.end):
        return [Splice(value.start, value.end, "{" + _key_text(mapping, inner_key) + ": " + written + "}")]
    head = _key_text(mapping, inner_key)
    return [Splice(key.end, value.end, ":" + layout.newline() + " " * (key.column + step) + head + ": " + written)]


def apply_splices(text: str, splices: Sequence[Splice]) -> str:
    """``text`` with non-overlapping ``splices`` applied; :class:`EditRefused` when two overlap."""
    out, done = [], 0
    for splice in sorted(splices):
        if splice.start < done:
            raise EditRefused("two changes touch the same text")
        out += [text[done:splice.start], splice.new]
        done = splice.end
    out.append(text[done:])
    return "".join(out)


def text_edits(file: str, layout: Layout, splices: Iterable[Splice]) -> tuple[TextEdit, ...]:
    """The splices as :class:`~dralint.fixes.TextEdit` s (lines and columns, like findings)."""
    return tuple(edit_from_offsets(file, layout.text, s.start, s.end, s.new, layout.line_starts)
                 for s in sorted(splices))
