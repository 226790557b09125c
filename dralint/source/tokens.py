"""Where the text a finding starts at ends: the YAML key or scalar there, or the rest of its line.

A finding is placed at a node's start (a mapping key, a list item, a document). What it covers
runs to the end of the token written there, measured on that one line of the user's text: the
engine fills each finding's end from it, and the editor measures findings that have none.
"""
from __future__ import annotations

import re

# The line breaks YAML and LSP both count (the specification allows exactly these three).
BREAK = re.compile(r"\r\n|\r|\n")
_COMMENT = re.compile(r"(^|[ \t])#")


def region_end(text: str, column: int) -> int:
    """End column (0-based, exclusive) of what a finding at ``column`` of line ``text`` covers: the
    key or scalar starting there, else (a list item, a flow indicator, a whole document) the rest
    of the line without its comment."""
    end = token_end(text, column)
    return end if end > column else line_end(text, column)


def line_end(text: str, column: int) -> int:
    """End column of the content of line ``text`` from ``column`` on, comment left out; one
    character past ``column`` on an empty rest when the line has one."""
    content = _strip_comment(text)
    end = max(len(content.rstrip()), column)
    if end == column:
        end = min(column + 1, len(text))
    return end


def token_end(text: str, column: int) -> int:
    """End column of the YAML key or scalar starting at ``column`` (``column`` when there is none)."""
    if column >= len(text):
        return column
    first = text[column]
    if first in "\"'":
        return _quoted_end(text, column)
    if first in "-?" and text[column + 1:column + 2] in ("", " ", "\t"):
        return column  # a block indicator: the caller covers the item's line
    if first in "[]{},#&*!|>%@`":
        return column
    i = column
    while i < len(text):
        c = text[i]
        if c == ":" and text[i + 1:i + 2] in ("", " ", "\t", ",", "]", "}"):
            break
        if c == "#" and i > column and text[i - 1] in " \t":
            break
        if c in ",]}" and _in_flow(text, column):
            break
        i += 1
    return len(text[:i].rstrip())


def _quoted_end(text: str, column: int) -> int:
    quote = text[column]
    i = column + 1
    while i < len(text):
        if quote == '"' and text[i] == "\\":
            i += 2
            continue
        if text[i] == quote:
            if quote == "'" and text[i + 1:i + 2] == "'":  # '' is an escaped quote
                i += 2
                continue
            return i + 1
        i += 1
    return len(text.rstrip())  # a quoted scalar folded over lines: its first line


def _in_flow(text: str, column: int) -> bool:
    return text[:column].count("[") + text[:column].count("{") > text[:column].count("]") + text[:column].count("}")


def _strip_comment(text: str) -> str:
    hit = _COMMENT.search(text)
    return text[:hit.start()] if hit else text
