"""Parts of JSON text that does not decode as a whole: a list page's items, an object's name.

The API server only sends what its own decoder reads, so this is for the unexpected (a proxy, a
hostile server): one item that cannot be read must cost only itself. :func:`split_items` finds
each item of a list page's ``items`` with a scanner that knows strings (a bracket inside a string
is text), so the other items are decoded one by one; :func:`identity` reads the namespace, name
and resourceVersion of an object (or of a watch event's object) from its text, for the log line
that names what was skipped. Both are best effort: text broken in its brackets defeats them.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Iterator

from dralint import gojson

# A whole string (escapes included: an escaped quote does not end it), or one structural character.
# Numbers, literals and anything else between them are skipped over.
_TOKEN = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{},:]', re.S)
_SPACE = re.compile(rb"[ \t\r\n]*")
_NAME_MAX = 300


def members(data: bytes, start: int) -> Iterator[tuple[str | None, int, int]]:
    """(key, begin, end) of each direct member of the object or array that opens at ``data[start]``.

    ``data[begin:end]`` is the member's value, with the whitespace around it; ``key`` is None in an
    array (or for a key that is not a string). A container that never closes yields its last member
    up to the end of ``data``, then raises ``ValueError``.
    """
    in_object = data[start:start + 1] == b"{"
    depth, key, begin, last_string = 0, None, start + 1, b""
    for match in _TOKEN.finditer(data, start):
        token = match.group()
        if token in (b"{", b"["):
            depth += 1
        elif token in (b"}", b"]"):
            depth -= 1
            if depth == 0:
                if data[begin:match.start()].strip():   # an empty container has no member
                    yield key, begin, match.start()
                return
        elif depth == 1:
            if token == b",":
                yield key, begin, match.start()
                key, begin = None, match.end()
            elif token == b":" and in_object:
                key, begin = _string(last_string), match.end()
            elif token[:1] == b'"':
                last_string = token
    if depth > 0 and data[begin:].strip():
        yield key, begin, len(data)
    raise ValueError("the JSON text ends inside an object or array")


def split_items(page: bytes) -> tuple[Any, list[bytes]]:
    """(the page with an empty ``items``, decoded; the text of each item) of a list page.

    Raises ``ValueError`` (:class:`~dralint.gojson.GoJSONError` included) when the page is not an
    object with an ``items`` array or the rest of it does not decode.
    """
    start = _after_space(page, 0)
    if page[start:start + 1] != b"{":
        raise ValueError("the page is not a JSON object")
    for key, begin, end in members(page, start):
        if key != "items":
            continue
        at = _after_space(page, begin)
        if page[at:at + 1] != b"[":
            raise ValueError("the page's items are not an array")
        items = [page[b:e].strip() for _, b, e in members(page, at)]
        return gojson.loads(page[:begin] + b"[]" + page[end:]), items
    raise ValueError("the page has no items")


@dataclass(frozen=True)
class Identity:
    """Who an object is, as far as its text tells (empty strings for what it does not)."""

    namespace: str = ""
    name: str = ""
    resource_version: str = ""

    def __str__(self) -> str:
        name = self.name or "(no name found)"
        return f"{self.namespace}/{name}" if self.namespace else name


def identity(text: bytes) -> Identity:
    """The namespace, name and resourceVersion in ``metadata`` of the object (or the watch event's
    ``object``) that ``text`` holds, read without decoding the rest."""
    fields = _fields(text, 0)
    if "object" in fields:
        fields = _fields(text, fields["object"])
    meta = _fields(text, fields["metadata"]) if "metadata" in fields else {}

    def value(name: str) -> str:
        if name not in meta:
            return ""
        at = meta[name]
        match = _TOKEN.match(text, at)
        found = _string(match.group()) if match and text[at:at + 1] == b'"' else None
        return (found or "")[:_NAME_MAX]

    return Identity(value("namespace"), value("name"), value("resourceVersion"))


def _fields(text: bytes, at: int) -> dict[str, int]:
    """Where the value of each key of the object at ``at`` (after whitespace) starts; as many as
    can be found when the object is broken further on."""
    at = _after_space(text, at)
    found: dict[str, int] = {}
    if text[at:at + 1] != b"{":
        return found
    try:
        for key, begin, _ in members(text, at):
            if key is not None:
                found.setdefault(key, _after_space(text, begin))
    except ValueError:   # the object never closes: what came before still names it
        pass
    return found


def _after_space(data: bytes, at: int) -> int:
    """The index of the first byte at or after ``at`` that is not JSON whitespace."""
    return _SPACE.match(data, at).end()   # type: ignore[union-attr]  # it matches the empty string too


def _string(token: bytes) -> str | None:
    """The text of a JSON string token, None when it is not one."""
    try:
        value = json.loads(token)
    except ValueError:
        return None
    return value if isinstance(value, str) else None
