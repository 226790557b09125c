"""JSON with comments (``tsconfig.json``, VS Code settings): read as JSON, not reported as broken YAML.

Comments (``//`` and ``/* */``) and trailing commas are blanked to spaces, so every value keeps
its line and column; the result is then read like any file. Only ``.json`` files that YAML cannot
read get this second look.
"""
from __future__ import annotations

import re

_MARKERS = re.compile(r'"|//|/\*|,')
_CLOSER = re.compile(r"\s*[}\]]")
_BLANKS = re.compile(r"\s*")


def blank_comments(text: str) -> str | None:
    """``text`` with comments and trailing commas replaced by spaces (line breaks kept), or None
    when it has neither (or a comment is never closed)."""
    out = list(text)
    changed = False
    position = 0
    while (match := _MARKERS.search(text, position)) is not None:
        start, token = match.start(), match.group()
        if token == '"':
            position = _string_end(text, start + 1)
            continue
        if token == ",":
            position = start + 1
            if _closes_after(text, position):
                out[start] = " "
                changed = True
            continue
        end = text.find("\n", start) if token == "//" else text.find("*/", start + 2)
        if end < 0:
            if token == "/*":
                return None
            end = len(text)
        elif token == "/*":
            end += 2
        for i in range(start, end):
            if out[i] != "\n":
                out[i] = " "
        changed = True
        position = end
    return "".join(out) if changed else None


def _string_end(text: str, position: int) -> int:
    """The index after the string that starts before ``position`` (escapes followed)."""
    while position < len(text):
        char = text[position]
        if char == "\\":
            position += 2
            continue
        if char in '"\n':
            return position + 1
        position += 1
    return position


def _closes_after(text: str, position: int) -> bool:
    """Whether only blanks and comments lie between ``position`` and a closing bracket."""
    while True:
        closer = _CLOSER.match(text, position)
        if closer is not None:
            return True
        blanks = _BLANKS.match(text, position)
        assert blanks is not None  # \s* matches everywhere
        position = blanks.end()
        if text.startswith("//", position):
            end = text.find("\n", position)
            position = len(text) if end < 0 else end
        elif text.startswith("/*", position):
            end = text.find("*/", position + 2)
            if end < 0:
                return False
            position = end + 2
        else:
            return False
