"""YAML's readings that surprise: unquoted ``on``, ``no``, ``y`` are booleans, ``12.10`` is 12.1.

Kubernetes reads YAML 1.1 (goyaml.v2): where the API wants a string, such a value fails decoding
("expected string, found boolean true"). The hint names the text as written and what it became,
and how to keep it: quote it.
"""
from __future__ import annotations

from typing import Any

from ..paths import FieldPath
from .records import SourceDocument


def quote_hint(document: SourceDocument, path: FieldPath, value: Any) -> str:
    """``; unquoted, `on` is …: quote it ("on") …`` for a plain scalar that YAML read as no string,
    or "" (quoted, a string already, or not found in the file)."""
    if isinstance(value, str) or isinstance(value, (dict, list)):
        return ""
    found = document.scalar_source(path)
    if found is None or found[1] != "":
        return ""
    text = found[0]
    if isinstance(value, bool):
        became = f"YAML 1.1 (which Kubernetes reads) makes unquoted `{text}` the boolean {str(value).lower()}"
    elif value is None:
        became = f"unquoted, `{text or '(empty)'}` is null"
    elif str(value) != text:
        became = f"unquoted, `{text}` is the number {value}"
    else:
        became = f"unquoted, `{text}` is a number"
    return f"; {became}: quote it (\"{text}\") to keep the text"
