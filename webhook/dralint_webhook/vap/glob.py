"""DeviceClass glob patterns as RE2 regular expressions for CEL's ``matches``.

The webhook matches with Python's ``fnmatch.fnmatchcase``: ``*``, ``?``, ``[seq]`` and ``[!seq]``,
a ``[`` without its ``]`` taken literally, and ranges written backwards (``[z-a]``) dropped. CEL's
``matches`` is RE2 and searches rather than matches whole strings, so the translation anchors the
pattern and escapes every punctuation character (RE2 accepts a backslash before any of them, and
inside a class a ``[`` would otherwise start a POSIX class).
"""
from __future__ import annotations

from typing import Iterable

# RE2 allows a backslash before punctuation only; everything else is written as itself.
_PUNCTUATION = frozenset(r"""!"#$%&'()*+,-./:;<=>?@[\]^_`{|}~""")


def regex_of(patterns: Iterable[str]) -> str:
    """One anchored RE2 expression matching a name iff ``fnmatchcase`` matches it with one of ``patterns``."""
    alternatives = "|".join(_translate(p) for p in patterns)
    return f"^(?s:{alternatives})$"


def _escape(ch: str) -> str:
    return "\\" + ch if ch in _PUNCTUATION else ch


def _translate(pattern: str) -> str:
    out: list[str] = []
    i, n = 0, len(pattern)
    while i < n:
        ch = pattern[i]
        i += 1
        if ch == "*":
            if not out or out[-1] != ".*":
                out.append(".*")
        elif ch == "?":
            out.append(".")
        elif ch == "[":
            end = _set_end(pattern, i)
            if end is None:
                out.append(_escape("["))
            else:
                out.append(_set(pattern[i:end]))
                i = end + 1
        else:
            out.append(_escape(ch))
    return "(?:" + "".join(out) + ")"


def _set_end(pattern: str, i: int) -> int | None:
    """Where the ``]`` closing a set that starts at ``i`` is (fnmatch's rules), or None."""
    j = i
    if j < len(pattern) and pattern[j] == "!":
        j += 1
    if j < len(pattern) and pattern[j] == "]":
        j += 1
    while j < len(pattern) and pattern[j] != "]":
        j += 1
    return j if j < len(pattern) else None


def _set(body: str) -> str:
    """A set's RE2 class; ``body`` is what stands between the brackets."""
    negate = body.startswith("!")
    members = body[1:] if negate else body
    items = _set_items(members)
    if not items:
        return "." if negate else "[^\\x00-\\x{10FFFF}]"
    rendered = "".join(_escape(lo) if lo == hi else f"{_escape(lo)}-{_escape(hi)}" for lo, hi in items)
    return f"[{'^' if negate else ''}{rendered}]"


def _set_items(members: str) -> list[tuple[str, str]]:
    """The set's characters and ranges, as fnmatch reads them: ``a-z`` a range (dropped when
    backwards), a ``-`` first or last itself."""
    items: list[tuple[str, str]] = []
    k = 0
    while k < len(members):
        if k + 2 < len(members) and members[k + 1] == "-":
            lo, hi = members[k], members[k + 2]
            if lo <= hi:
                items.append((lo, hi))
            k += 3
        else:
            items.append((members[k], members[k]))
            k += 1
    return items
