"""RE2 regular expressions (cel-go uses Go's RE2 engine): linear time, no backreferences.

We drive google-re2's pybind class directly on UTF-8 bytes: its Python ``search`` wrapper maps
every offset back to characters and costs ~15 µs a call, ten times the match itself. Compiled
patterns are kept in a cache bounded by bytes, since selectors reuse a few literals.
"""
from __future__ import annotations

import re2
from re2 import _re2

from ..bounded_cache import bounded_cache

_OPTIONS = re2.Options()
_OPTIONS.log_errors = False  # invalid user patterns are expected; RE2 would log each to stderr
_UNANCHORED = _re2.RE2.Anchor.UNANCHORED


class RegexError(ValueError):
    """A pattern RE2 rejects; the text is Go's ``regexp.Compile`` error (see :func:`go_error`)."""


# RE2's error codes (re2/regexp.cc) as Go's regexp/syntax words them: the two parsers are one
# design and find the same error at the same place, only the names differ.
_GO_CODES = {
    "missing ]": "missing closing ]",
    "missing )": "missing closing )",
    "bad repetition operator": "invalid nested repetition operator",
    "no argument for repetition operator": "missing argument to repetition operator",
    "invalid repetition size": "invalid repeat count",
    "invalid named capture group": "invalid named capture",
    "invalid perl operator": "invalid or unsupported Perl syntax",
}


def go_error(detail: str) -> str:
    """RE2's ``code: arg`` message as Go's ``*syntax.Error`` prints it
    (``error parsing regexp: missing closing ]: `[```)."""
    if detail.startswith("trailing \\"):
        return "error parsing regexp: trailing backslash at end of expression: ``"
    code, sep, arg = detail.partition(": ")
    if not sep:
        return f"error parsing regexp: {_GO_CODES.get(detail, detail)}"
    return f"error parsing regexp: {_GO_CODES.get(code, code)}: `{arg}`"


class Pattern:
    """A compiled RE2 pattern with the three operations CEL needs."""

    __slots__ = ("_re",)

    def __init__(self, compiled: object) -> None:
        self._re = compiled

    def _first(self, data: bytes, pos: int) -> tuple[int, int] | None:
        span = self._re.Match(_UNANCHORED, data, pos, len(data))[0]  # type: ignore[attr-defined]
        return None if span[0] < 0 else span

    def search(self, text: str) -> bool:
        """Whether the pattern matches anywhere in ``text`` (CEL ``matches``)."""
        return self._first(text.encode("utf-8", "surrogatepass"), 0) is not None

    def find(self, text: str) -> str | None:
        data = text.encode("utf-8", "surrogatepass")
        span = self._first(data, 0)
        return None if span is None else data[span[0]:span[1]].decode("utf-8", "replace")

    def find_all(self, text: str, limit: int) -> list[str]:
        data = text.encode("utf-8", "surrogatepass")
        out: list[str] = []
        pos = 0
        while pos <= len(data) and (limit < 0 or len(out) < limit):
            span = self._first(data, pos)
            if span is None:
                break
            out.append(data[span[0]:span[1]].decode("utf-8", "replace"))
            if span[1] == span[0]:
                # An empty match: step over one whole UTF-8 character to make progress.
                nxt = span[1] + 1
                while nxt < len(data) and (data[nxt] & 0xC0) == 0x80:
                    nxt += 1
                pos = nxt
            else:
                pos = span[1]
        return out


# A compiled program takes up to ~50 bytes per byte of its pattern (measured: counted repetitions
# of 10 KB patterns). RE2's lazily built DFA comes on top, within RE2's own max_mem per program.
REGEX_CACHE_BYTES = 16 << 20


@bounded_cache(REGEX_CACHE_BYTES, lambda pattern: 64 * len(pattern) + 4096)
def _compile(pattern: str) -> Pattern | RegexError:
    compiled = _re2.RE2(pattern.encode("utf-8", "surrogatepass"), _OPTIONS)
    if not compiled.ok():
        detail = compiled.error()
        if isinstance(detail, bytes):
            detail = detail.decode("utf-8", "replace")
        return RegexError(go_error(detail))
    return Pattern(compiled)


def compile_regex(pattern: str) -> Pattern:
    """A compiled RE2 pattern; raises RegexError (cached, like the pattern itself)."""
    compiled = _compile(pattern)
    if isinstance(compiled, RegexError):
        raise compiled
    return compiled
