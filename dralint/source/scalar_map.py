"""Map characters of a decoded YAML string back to the source text it came from.

Each function re-reads the raw source of one scalar the way libyaml does (line folding,
escapes, block indentation and chomping) and returns, for every character of the decoded
string, its offset in the raw text. Callers check that the decoded string equals the value
the parser produced, and fall back to the scalar's start when it does not.
"""
from __future__ import annotations

import re

_ESCAPES = {
    "0": "\0", "a": "\a", "b": "\b", "t": "\t", "\t": "\t", "n": "\n", "v": "\v", "f": "\f",
    "r": "\r", "e": "\x1b", " ": " ", '"': '"', "/": "/", "\\": "\\", "N": "\x85",
    "_": "\xa0", "L": "\u2028", "P": "\u2029",
}
_HEX_LENGTH = {"x": 2, "u": 4, "U": 8}
_PROPERTIES = re.compile(r"(?:[&!][^ \t\r\n]*[ \t\r\n]+)*")
_BLOCK_HEADER = re.compile(r"[|>]([-+]?)([1-9]?)([-+]?)[^\n]*\n?")


def map_scalar(raw: str, style: str, value: str) -> tuple[int, list[int]] | None:
    """(offset of the scalar's text in ``raw``, source offset of each decoded character).

    ``raw`` runs from the node's start (anchors and tags included) to its end; ``style`` is
    libyaml's ('' plain, ``'``, ``"``, ``|``, ``>``). None when the mapping does not reproduce
    ``value`` exactly.
    """
    skip = _PROPERTIES.match(raw)
    base = skip.end() if skip else 0
    text = raw[base:]
    if style in ("", None):
        result = _flow(text, 0, len(text), quoted=None)
    elif style in ("'", '"') and len(text) >= 2 and text[0] == style:
        result = _flow(text, 1, len(text) - 1, quoted=style)
    elif style in ("|", ">"):
        result = _block(text, style == "|", value)
    else:
        return None
    if result is None or result[0] != value:
        return None
    return base, [base + offset for offset in result[1]]


def _is_break(text: str, i: int) -> int:
    """Length of the line break at ``i`` (0 if none)."""
    if text.startswith("\r\n", i):
        return 2
    return 1 if i < len(text) and text[i] in "\r\n" else 0


def _flow(text: str, start: int, end: int, quoted: str | None) -> tuple[str, list[int]] | None:
    """Plain and quoted scalars: libyaml's blank and line-break folding, with escapes for '\"'."""
    out: list[str] = []
    offsets: list[int] = []
    i = start
    while i < end:
        leading_blanks = False
        # Non-blank characters.
        while i < end and text[i] not in " \t" and not _is_break(text, i):
            ch = text[i]
            if quoted == "'" and text.startswith("''", i):
                out.append("'"); offsets.append(i); i += 2
                continue
            if quoted == '"' and ch == "\\":
                width = _is_break(text, i + 1)
                if width:
                    i += 1 + width
                    leading_blanks = True
                    break
                decoded = _escape(text, i, end)
                if decoded is None:
                    return None
                char, length = decoded
                out.append(char); offsets.append(i); i += length
                continue
            out.append(ch); offsets.append(i); i += 1
        # Blanks and line breaks, then fold them.
        whitespace: list[tuple[str, int]] = []
        leading_break: list[tuple[str, int]] = []
        trailing: list[tuple[str, int]] = []
        while i < end and (text[i] in " \t" or _is_break(text, i)):
            if text[i] in " \t":
                if not leading_blanks:
                    whitespace.append((text[i], i))
                i += 1
            else:
                width = _is_break(text, i)
                if not leading_blanks:
                    whitespace.clear()
                    leading_break = [("\n", i)]
                    leading_blanks = True
                else:
                    trailing.append(("\n", i))
                i += width
        if i >= end and quoted is None:
            break
        pieces: list[tuple[str, int]]
        if leading_blanks:
            if leading_break:
                pieces = trailing if trailing else [(" ", leading_break[0][1])]
            else:
                pieces = trailing
        else:
            pieces = whitespace
        for char, offset in pieces:
            out.append(char); offsets.append(offset)
    return "".join(out), offsets


def _escape(text: str, i: int, end: int) -> tuple[str, int] | None:
    """The character of the escape at ``text[i]`` (a backslash) and the escape's length."""
    if i + 1 >= end:
        return None
    code = text[i + 1]
    if code in _ESCAPES:
        return _ESCAPES[code], 2
    length = _HEX_LENGTH.get(code)
    if length is None:
        return None
    digits = text[i + 2:i + 2 + length]
    if len(digits) != length or not all(c in "0123456789abcdefABCDEF" for c in digits):
        return None
    try:
        return chr(int(digits, 16)), 2 + length
    except (ValueError, OverflowError):
        return None


def _block(text: str, literal: bool, value: str) -> tuple[str, list[int]] | None:
    """Literal and folded block scalars: try the detected indentation, then the others."""
    header = _BLOCK_HEADER.match(text)
    if header is None:
        return None
    chomp = header.group(1) or header.group(3)
    body_start = header.end()
    candidates = [_auto_indent(text, body_start)] + list(range(1, 41))
    for indent in dict.fromkeys(candidates):
        result = _block_with_indent(text, body_start, indent, literal, chomp)
        if result[0] == value:
            return result
    return None


def _auto_indent(text: str, i: int) -> int:
    """libyaml's detection: the deepest leading blank line or the first content line's indentation."""
    deepest = 0
    while i < len(text):
        spaces = 0
        while i + spaces < len(text) and text[i + spaces] == " ":
            spaces += 1
        j = i + spaces
        width = _is_break(text, j)
        if not width:
            return max(deepest, spaces, 1)
        deepest = max(deepest, spaces)
        i = j + width
    return max(deepest, 1)


def _block_with_indent(text: str, i: int, indent: int, literal: bool, chomp: str) -> tuple[str, list[int]]:
    out: list[str] = []
    offsets: list[int] = []
    leading_break: list[tuple[str, int]] = []
    trailing: list[tuple[str, int]] = []
    leading_blank = False
    i = _block_breaks(text, i, indent, trailing)
    while i < len(text) and _column(text, i) == indent:
        trailing_blank = text[i] in " \t"
        if not literal and leading_break and not leading_blank and not trailing_blank:
            if not trailing:
                out.append(" "); offsets.append(leading_break[0][1])
        else:
            for char, offset in leading_break:
                out.append(char); offsets.append(offset)
        leading_break = []
        for char, offset in trailing:
            out.append(char); offsets.append(offset)
        trailing = []
        leading_blank = text[i] in " \t"
        while i < len(text) and not _is_break(text, i):
            out.append(text[i]); offsets.append(i); i += 1
        if i < len(text):
            leading_break = [("\n", i)]
            i += _is_break(text, i)
        i = _block_breaks(text, i, indent, trailing)
    if chomp != "-":
        for char, offset in leading_break:
            out.append(char); offsets.append(offset)
    if chomp == "+":
        for char, offset in trailing:
            out.append(char); offsets.append(offset)
    return "".join(out), offsets


def _column(text: str, i: int) -> int:
    return i - (text.rfind("\n", 0, i) + 1)


def _block_breaks(text: str, i: int, indent: int, trailing: list[tuple[str, int]]) -> int:
    """Skip indentation and collect empty lines, stopping at the first content character."""
    while True:
        line_start = i
        while i < len(text) and text[i] == " " and i - line_start < indent:
            i += 1
        width = _is_break(text, i)
        if not width:
            return i
        trailing.append(("\n", i))
        i += width
