"""Node positions of a plain block-style document from its lines, guided by its value.

:func:`dralint.source.composer.index_chunk` re-reads a document with the exact,
position-tracking composer, about a millisecond per hundred lines. Most documents the fast
reader takes are plain block YAML, where every node's place follows from indentation once the
value is known: a mapping's keys come in order at one indentation, a list's items as ``-``
entries at one indentation, and deeper lines continue the scalar before them. This module
walks the value and the lines together and gives the answers the exact index gives to
:meth:`PositionIndex.locate`, or None when the text holds anything it does not follow (the
caller then runs the exact composer):

* flow collections other than one-line ones holding only scalars (real manifests write
  ``command: ["bash", "-c"]``, ``requests: ["gpu"]`` and ``model: {string: a100}``), quoted
  scalars that do not close on their line (their continuation lines may sit at any
  indentation), backslashes in quotes;
* anchors, aliases, tags, explicit ``?`` keys, directives, ``...`` markers, tabs, line
  breaks other than newlines (libyaml also breaks lines at carriage returns, NEL, U+2028 and
  U+2029), content on the ``---`` line, block scalar headers with an indentation digit, plain keys or scalars
  starting with an indicator;
* empty list items (``-`` alone; an explicit ``null`` is fine), a null value followed by
  deeper lines, and any key, item count, scalar text or indentation that disagrees with the value.

Spans carry the exact index's ``key``, ``line`` and ``column`` (``locate`` only uses the key's
place for mapping entries) but no offsets, style or text, so
:meth:`PositionIndex.locate_in_scalar` falls back to ``locate``.
"""
from __future__ import annotations

import re
from typing import Any, cast

from .positions import NodeSpan, PositionIndex
from ..paths import Steps

# The indentation given to blank and comment lines: deeper than any real line, so every
# "skip the lines deeper than this node" loop also skips them.
_BLANK = 1 << 30
# Tabs, and the line breaks libyaml counts besides "\n" (lines here are split at "\n" only).
_ODD = re.compile("[\t\r\x85\u2028\u2029]")
# What may follow a node that ends on its line: spaces, then maybe a comment.
_TRAILER = re.compile(r" +#.*| *")
_BLOCK_HEADER = re.compile(r"[|>][-+]?(?: +#.*| *)")
# A plain scalar in a flow collection: no indicator or "- " at its start, and a ":" only
# when not followed by a space or flow indicator (else a pair), no "#" (maybe a comment).
_FLOW_PLAIN = re.compile(
    r"(?:[^ ,\[\]{}#'\"&*!|>%@`?:-]|-(?=[^ ,\[\]{}]))"
    r"(?:[^ ,\[\]{}#:]|:(?=[^ ,\[\]{}])| +(?=[^ ,\[\]{}#:]))*")
# Characters that cannot start a plain key or scalar we follow (quotes and block scalars are
# handled before this is consulted; "-" only in "- " or a lone "-").
_INDICATORS = frozenset("&*!%@`,[]{}#|>'\"?:")
# First characters that keep a plain scalar from being checked the short way: indicators, and
# "-" (only "- " is one: "-x" goes through the general check).
_SCALAR_STARTS = _INDICATORS | frozenset("- ")
_PLAIN_ENDS = (":", " ")
_SPAN_FIELDS = {"key": None, "line": 0, "column": 0, "end_index": -1, "start_index": -1, "style": "",
                "text": None}
_new = object.__new__
_set = object.__setattr__


class _Unsure(Exception):
    """The text holds something this reader does not follow, or disagrees with the value."""


def index_block(body: str, value: Any) -> PositionIndex | None:
    """The positions of the one document in chunk text ``body``, whose read value is ``value``.

    Gives a span for every node of ``value`` with the key, line and column the exact index
    (:func:`dralint.source.composer.index_chunk`) has, or None when unsure. ``line_offset``
    is left 0 for the caller to set. Never raises.
    """
    try:
        return _scan(body, value)
    except _Unsure:
        return None
    except Exception:  # noqa: BLE001 - a bug here must not stop the linter: the exact composer still answers
        return None


class PathLocator:
    """Answers :meth:`PositionIndex.locate` for one path at a time, scanning only along it.

    A finding needs the place of one node, and most documents with findings have one or two:
    walking the lines of the containers on the path (keys in order, ``-`` entries counted) costs
    a fraction of indexing every node. The siblings passed over are not read, so a document is
    only taken when no line could continue onto a shallower line: every quoted scalar and flow
    collection must close on the line that opens it.
    """

    def __init__(self, body: str) -> None:
        """Raises ValueError when the document holds anything the walk does not follow."""
        try:
            if _ODD.search(body) or "\n..." in body or "\n%" in body or body.startswith(("...", "%")):
                raise _Unsure("tabs, other line breaks, markers or directives")
            self._scanner = _Scanner(body)
            for k in _opener_lines(body):
                _check_closes(self._scanner.lines[k])
        except _Unsure as exc:
            raise ValueError(str(exc)) from None
        # Walked so far: path -> (line, column, locate's answer, value) at that node; and the
        # lines of the items of each list walked into.
        self._reached: dict[Steps, tuple[int, int, tuple[int, int], Any]] = {}
        self._items: dict[Steps, list[int]] = {}

    def line(self, number: int) -> str | None:
        """Line ``number`` (0-based) of the document's text, None past its end (the walk has them
        split already, and took no text with other line breaks than ``\\n``)."""
        lines = self._scanner.lines
        return lines[number] if 0 <= number < len(lines) else None

    def locate(self, value: Any, path: Steps) -> tuple[int, int] | None:
        """(line, column) that ``locate`` gives for ``path`` in the document whose value is
        ``value`` (the same on every call: walks are remembered), 0-based in the body; None when
        unsure. Never raises."""
        try:
            return self._walk(value, path)
        except _Unsure:
            return None
        except Exception:  # noqa: BLE001 - as index_block: the exact composer still answers
            return None

    def _walk(self, value: Any, path: Steps) -> tuple[int, int]:
        scanner = self._scanner
        lines, indents = scanner.lines, scanner.indents
        # Findings of one document share the start of their paths (spec.devices[3].attributes,
        # spec.devices[5].attributes): resume from the deepest node already walked to.
        depth = len(path)
        while depth and path[:depth] not in self._reached:
            depth -= 1
        if depth:
            k, column, place, value = self._reached[path[:depth]]
        else:
            k = scanner.next_content(0)
            if k == len(lines):
                raise _Unsure("no content")
            column = indents[k]
            place = (k, column)
        for d in range(depth, len(path)):
            segment = path[d]
            text = lines[k]
            if type(value) is dict and not isinstance(segment, int) and segment in value:
                if text[column] in "{[":
                    raise _Unsure("a flow mapping on the path")
                for number, (name, child) in enumerate(value.items()):
                    # The first key may follow a "- " on its line; the others start lines.
                    if k >= len(lines) or (number and indents[k] != column):
                        raise _Unsure("a key is not where the mapping's next key should be")
                    after = _key_end(lines[k], column, name)
                    if name == segment:
                        break
                    k = _skip_entry(lines, indents, k + 1, column)
                place = (k, column)
                value = child
                start = _skip_spaces(lines[k], after)
                if start < len(lines[k]) and lines[k][start] != "#":
                    column = start  # inline: a scalar or flow collection, entered only if the path goes on
                else:
                    k = scanner.next_content(k + 1)
                    if k == len(lines) or value is None:
                        raise _Unsure("an empty value on the path")
                    column = indents[k]
            elif type(value) is list and isinstance(segment, int) and 0 <= segment < len(value):
                if text[column] == "[":
                    raise _Unsure("a flow sequence on the path")
                k = self._item_line(path[:d], k, column, segment)
                value = value[segment]
                start = _skip_spaces(lines[k], column + 1)
                if start < len(lines[k]) and lines[k][start] != "#":
                    column = start
                else:
                    k = scanner.next_content(k + 1)
                    if k == len(lines) or value is None:
                        raise _Unsure("an empty list item on the path")
                    column = indents[k]
                place = (k, column)
            else:
                break
            self._reached[path[:d + 1]] = (k, column, place, value)
        return place

    def _item_line(self, list_path: Steps, first: int, column: int, number: int) -> int:
        """The line of the ``-`` of item ``number`` of the block list whose first ``-`` is at
        ``column`` of line ``first``; the items' lines found so far are kept per list."""
        scanner = self._scanner
        lines, indents = scanner.lines, scanner.indents
        found = self._items.setdefault(list_path, [])
        if not found:
            if not _is_entry(lines[first], column):
                raise _Unsure("a list that does not start with '- '")
            found.append(first)
        while len(found) <= number:
            k = scanner.skip_deeper(found[-1] + 1, column)
            if k >= len(lines) or indents[k] != column or not _is_entry(lines[k], column):
                raise _Unsure("a list item is not where the list's next item should be")
            found.append(k)
        return found[number]


# Lines that open a quoted scalar or a flow collection somewhere.
_OPENER = re.compile(r"[\"'\[{]")


def _opener_lines(body: str) -> list[int]:
    """Numbers of the lines holding a quote or an opening bracket."""
    found: list[int] = []
    line, last = 0, 0
    for match in _OPENER.finditer(body):
        line += body.count("\n", last, match.start())
        last = match.start()
        if not found or found[-1] != line:
            found.append(line)
    return found


def _check_closes(text: str) -> None:
    """Raise unless every quoted scalar and flow collection that starts a node on this line
    also ends on it (a quote or bracket inside a plain scalar is just a character)."""
    at = _skip_spaces(text, 0)
    while _is_entry(text, at):
        at = _skip_spaces(text, at + 1)
    for _ in range(2):  # a (maybe quoted) key, then its value
        if at >= len(text) or text[at] == "#":
            return
        first = text[at]
        if first in "\"'":
            close = _closing_quote(text, at)
            rest = _skip_spaces(text, close + 1)
            if text.startswith(":", rest):
                at = _skip_spaces(text, rest + 1)
                continue
            return
        if first in "[{":
            depth = 0
            for char in text[at:]:
                depth += (char in "[{") - (char in "]}")
            if depth:
                raise _Unsure("a flow collection that does not close on its line")
            return
        colon = text.find(": ", at)
        if colon < 0:
            return
        at = _skip_spaces(text, colon + 1)
    return


def _skip_entry(lines: list[str], indents: list[int], k: int, column: int) -> int:
    """The line after a mapping entry at ``column`` whose key is on line ``k - 1``: deeper lines
    continue it, and so do ``-`` items at the key's own column (Kubernetes style)."""
    while k < len(lines) and (indents[k] > column or (indents[k] == column and _is_entry(lines[k], column))):
        k += 1
    return k


def _scan(body: str, value: Any) -> PositionIndex:
    """:func:`index_block` that raises :class:`_Unsure` instead of giving None (and lets bugs out)."""
    if _ODD.search(body) or "\n..." in body or "\n%" in body or body.startswith(("...", "%")):
        raise _Unsure("tabs, other line breaks, markers or directives")
    scanner = _Scanner(body)
    start = scanner.next_content(0)
    if start == len(scanner.lines):
        raise _Unsure("no content")
    if scanner.node(value, (), start, scanner.indents[start], None, -1) != len(scanner.lines):
        raise _Unsure("content after the document's root collection")
    return PositionIndex(body=body, spans=scanner.spans)


def _span(key: tuple[int, int] | None, line: int, column: int) -> NodeSpan:
    """``NodeSpan(key, line, column, -1, -1, "", None)``, about three times as fast.

    A frozen dataclass's ``__init__`` sets each of its seven fields through
    ``object.__setattr__``, which costs more than the rest of the work on a node; filling the
    instance's ``__dict__`` at once makes the same object (test_spans_are_node_spans checks).
    """
    span = _new(NodeSpan)
    _set(span, "__dict__", dict(_SPAN_FIELDS, key=key, line=line, column=column))
    return span


class _Scanner:
    """One pass over a document's lines, in step with its value.

    Every walking method takes the line (``k``) and column where its node starts, and returns
    the first line after the node that is not deeper than the node's owner.
    """

    def __init__(self, body: str) -> None:
        self.lines = lines = body.split("\n")
        self.indents = [
            len(line) - len(rest) if (rest := line.lstrip(" ")) and rest[0] != "#" else _BLANK
            for line in lines]
        self.spans: dict[Steps, NodeSpan] = {}
        if lines[0].startswith("---") and lines[0][3:4] in ("", " "):
            if not _TRAILER.fullmatch(lines[0], 3):
                raise _Unsure("content on the --- line")
            self.indents[0] = _BLANK

    def next_content(self, k: int) -> int:
        """The first line from ``k`` on that is not blank or a comment."""
        indents = self.indents
        while k < len(indents) and indents[k] == _BLANK:
            k += 1
        return k

    def skip_deeper(self, k: int, indent: int) -> int:
        """The first line from ``k`` on that holds content indented at most ``indent``."""
        indents = self.indents
        while k < len(indents) and indents[k] > indent:
            k += 1
        return k

    def node(self, value: Any, path: Steps, k: int, column: int, key: tuple[int, int] | None,
             owner: int) -> int:
        """Record the node starting at ``column`` of line ``k`` and walk it.

        ``owner`` is the indentation of the collection holding it: the lines after a scalar
        that are deeper than that continue it.
        """
        self.spans[path] = _span(key, k, column)
        text = self.lines[k]
        kind = type(value)
        if kind is dict or kind is list:
            if text[column] == "{" or text[column] == "[":
                self.flow(value, path, text, k, column)
                return self.skip_deeper(k + 1, owner)
            if not value:
                raise _Unsure("an empty collection not written {} or []")
            if kind is dict:
                return self.mapping(value, path, k, column)
            return self.sequence(value, path, k, column)
        _check_scalar(value, text, column)
        return self.skip_deeper(k + 1, owner)

    def mapping(self, value: dict[Any, Any], path: Steps, k: int, column: int) -> int:
        """Walk a block mapping whose first key starts at ``column`` of line ``k``.

        Most nodes of a manifest are entries of block mappings, so the common ones (a word and
        a plain string, a key over a nested mapping) are handled here without further calls.
        """
        lines, indents, spans = self.lines, self.indents, self.spans
        count = len(lines)
        for number, (name, child) in enumerate(value.items()):
            if number and (k >= count or indents[k] != column):
                raise _Unsure(f"key {name!r} is not where the mapping's next key should be")
            text = lines[k]
            kind = type(child)
            if (kind is str and child and text.endswith(child) and text.startswith(name + ": ", column)
                    and len(text) - len(child) == column + len(name) + 2 and name.isidentifier()
                    and child[0] not in _SCALAR_STARTS and ": " not in child and " #" not in child
                    and not child.endswith(_PLAIN_ENDS)):
                # The most common entry, "name: text" with nothing else on the line (text that
                # reads as itself, plain), without the general parse.
                spans[path + (name,)] = _span((k, column), k, column + len(name) + 2)
                k += 1
                while k < count and indents[k] > column:
                    k += 1
                continue
            after = column + len(name) + 1
            if not (name.isidentifier() and text.startswith(name, column) and text.startswith(":", after - 1)
                    and (after == len(text) or text[after] == " ")):
                after = _key_end(text, column, name)
            start = after
            while start < len(text) and text[start] == " ":
                start += 1
            key = (k, column)
            if start == len(text) or text[start] == "#":
                below = k + 1
                while below < count and indents[below] == _BLANK:
                    below += 1
                if child is None:
                    # An empty value: libyaml puts the null right after the colon.
                    if below < count and indents[below] > column:
                        raise _Unsure("a null value followed by deeper lines")
                    spans[path + (name,)] = _span(key, k, after)
                    k = below
                elif kind is dict and child and below < count and indents[below] > column:
                    # The common nested mapping, without going through below() and node().
                    spans[path + (name,)] = _span(key, below, indents[below])
                    k = self.mapping(child, path + (name,), below, indents[below])
                else:
                    k = self.below(child, path + (name,), below, column, key)
            elif kind is dict or kind is list:
                if text[start] != "{" and text[start] != "[":
                    raise _Unsure("a block collection starting on its key's line")
                k = self.node(child, path + (name,), k, start, key, column)
            else:
                spans[path + (name,)] = _span(key, k, start)
                _check_scalar(child, text, start)
                k += 1
                while k < count and indents[k] > column:
                    k += 1
        if k < count and indents[k] >= column:
            raise _Unsure("the mapping has more keys than its value")
        return k

    def sequence(self, value: list[Any], path: Steps, k: int, column: int) -> int:
        """Walk a block sequence whose first ``-`` is at ``column`` of line ``k``."""
        lines, indents = self.lines, self.indents
        count = len(lines)
        for number, item in enumerate(value):
            if number and (k >= count or indents[k] != column):
                raise _Unsure("a list item is not where the list's next item should be")
            text = lines[k]
            if not _is_entry(text, column):
                raise _Unsure("a list item that does not start with '- '")
            start = column + 1
            while start < len(text) and text[start] == " ":
                start += 1
            if start == len(text) or text[start] == "#":
                k = self.below(item, path + (number,), self.next_content(k + 1), column, None)
            else:
                k = self.node(item, path + (number,), k, start, None, column)
        if k < count and (indents[k] > column or (indents[k] == column and _is_entry(lines[k], column))):
            raise _Unsure("the list has more items than its value")
        return k

    def below(self, child: Any, path: Steps, k: int, owner: int, key: tuple[int, int] | None) -> int:
        """Walk the value (not null) that starts at content line ``k``, after a key's ``:``
        (``key`` is the key's place) or an item's ``-`` (``key`` None) that ended their line in
        a collection indented ``owner``."""
        if child is None or k == len(self.lines):
            raise _Unsure("an empty list item, or a value missing at the end")
        indent = self.indents[k]
        # Kubernetes style: a key's block list may sit at the key's own indentation.
        indentless = key is not None and indent == owner and _is_entry(self.lines[k], indent)
        if indent <= owner and not indentless:
            raise _Unsure("a value on the next line not indented below its key or dash")
        return self.node(child, path, k, indent, key, owner)

    def flow(self, value: dict[Any, Any] | list[Any], path: Steps, text: str, k: int, column: int) -> None:
        """Record the entries of a flow collection of scalars that opens at ``column`` of line
        ``k`` and closes on it."""
        is_map = type(value) is dict
        if text[column] != ("{" if is_map else "["):
            raise _Unsure("a flow collection of the wrong kind")
        entries = cast("dict[Any, Any]", value).items() if is_map else enumerate(value)
        at = column + 1
        key = None
        for number, (name, child) in enumerate(entries):
            at = _skip_spaces(text, at)
            if number:
                if not text.startswith(",", at):
                    raise _Unsure("a flow collection with more entries than its value")
                at = _skip_spaces(text, at + 1)
            if is_map:
                key = (k, at)
                at = _skip_spaces(text, _flow_key_end(text, at, name))
            self.spans[path + (name,)] = _span(key, k, at)
            at = _flow_scalar_end(child, text, at)
        at = _skip_spaces(text, at)
        if not text.startswith("}" if is_map else "]", at) or not _TRAILER.fullmatch(text, at + 1):
            raise _Unsure("a flow collection that does not end with its value's last entry on its line")


def _skip_spaces(text: str, column: int) -> int:
    while column < len(text) and text[column] == " ":
        column += 1
    return column


def _is_entry(text: str, column: int) -> bool:
    """Whether a ``-`` block entry indicator is at ``column`` of the line."""
    return text.startswith("-", column) and (len(text) == column + 1 or text[column + 1] == " ")


def _key_end(text: str, column: int, name: str) -> int:
    """The column after the ``:`` of block mapping key ``name``, which must start at ``column``."""
    first = text[column]
    if first == '"' or first == "'":
        close = _closing_quote(text, column)
        found = _unquote(text[column + 1:close], first)
        colon = _skip_spaces(text, close + 1)
        if not text.startswith(":", colon):
            raise _Unsure("a quoted key without its ':'")
    else:
        if first in _INDICATORS or _is_entry(text, column):
            raise _Unsure(f"a key starting with {first!r}")
        colon = text.find(":", column)
        while colon >= 0 and colon + 1 < len(text) and text[colon + 1] != " ":
            colon = text.find(":", colon + 1)
        if colon < 0:
            raise _Unsure("no ':' after a key")
        found = text[column:colon].rstrip(" ")
        if " #" in found:
            raise _Unsure("a comment before a key's ':'")
    if found != name:
        raise _Unsure(f"found key {found!r} where the value has {name!r}")
    if colon + 1 < len(text) and text[colon + 1] != " ":
        raise _Unsure("a key's ':' not followed by a space")
    return colon + 1


def _flow_key_end(text: str, column: int, name: str) -> int:
    """The column after the ``: `` of flow mapping key ``name``, which must start at ``column``."""
    first = text[column:column + 1]
    if first == '"' or first == "'":
        close = _closing_quote(text, column)
        found = _unquote(text[column + 1:close], first)
        end = close + 1
    else:
        plain = _FLOW_PLAIN.match(text, column)
        if plain is None:
            raise _Unsure("a flow mapping key that is not a simple plain scalar")
        found, end = plain.group(), plain.end()
    colon = _skip_spaces(text, end)
    if found != name or not text.startswith(": ", colon):
        raise _Unsure(f"flow key {found!r} where the value has {name!r}, or not followed by ': '")
    return colon + 2


def _closing_quote(text: str, start: int) -> int:
    """The column of the quote closing the quoted scalar opened at ``start`` (on its line)."""
    quote = text[start]
    close = text.find(quote, start + 1)
    if quote == "'":
        while close >= 0 and text.startswith("''", close):
            close = text.find("'", close + 2)
    if close < 0:
        raise _Unsure("a quoted scalar that does not close on its line")
    return close


def _unquote(raw: str, quote: str) -> str:
    if quote == "'":
        return raw.replace("''", "'")
    if "\\" in raw:
        raise _Unsure("an escape in a double-quoted scalar")
    return raw


def _check_scalar(value: Any, text: str, column: int) -> None:
    """Check that the block-context scalar starting at ``column`` can be ``value``."""
    first = text[column]
    if first not in _SCALAR_STARTS or (first == "-" and not _is_entry(text, column)):
        # The first line of a plain scalar: its continuation lines fold onto it.
        end = text.find(" #", column)
        plain = (text[column:] if end < 0 else text[column:end]).rstrip(" ")
        if ": " in plain or plain.endswith(":") or not _plain_is(value, plain, False):
            raise _Unsure(f"plain scalar {plain!r} is not the value")
    elif first == "|" or first == ">":
        if type(value) is not str or not _BLOCK_HEADER.fullmatch(text, column):
            raise _Unsure("a block scalar with an unusual header, or not a string")
    elif first == '"' or first == "'":
        close = _closing_quote(text, column)
        if type(value) is not str or _unquote(text[column + 1:close], first) != value:
            raise _Unsure("a quoted scalar that differs from the value")
        if not _TRAILER.fullmatch(text, close + 1):
            raise _Unsure("text after a quoted scalar")
    else:
        raise _Unsure(f"a scalar starting with {first!r}")


def _flow_scalar_end(value: Any, text: str, column: int) -> int:
    """The column after the flow scalar starting at ``column``, which must be ``value``."""
    first = text[column:column + 1]
    if first == '"' or first == "'":
        close = _closing_quote(text, column)
        if type(value) is not str or _unquote(text[column + 1:close], first) != value:
            raise _Unsure("a quoted flow scalar that differs from the value")
        return close + 1
    plain = _FLOW_PLAIN.match(text, column)
    if plain is None or not _plain_is(value, plain.group(), True):
        raise _Unsure("a flow entry that is not a simple plain scalar, or not the value")
    return plain.end()


def _plain_is(value: Any, plain: str, whole: bool) -> bool:
    """Whether plain scalar text reads as ``value`` (or, not ``whole``, as its first line)."""
    if type(value) is str:
        return value == plain if whole else value.startswith(plain)
    if type(value) is bool:
        return plain == ("true" if value else "false")
    if value is None:
        return plain == "null"
    return type(value) is int and plain == str(value)
