"""RE2 regular expressions (cel-go uses Go's RE2 engine): linear time, no backreferences.

Compiled patterns are kept in a bounded LRU cache, since selectors reuse a few literals.
"""
from __future__ import annotations

from functools import lru_cache

import re2

_OPTIONS = re2.Options()
_OPTIONS.log_errors = False  # invalid user patterns are expected; RE2 would log each to stderr


class RegexError(ValueError):
    """A pattern RE2 rejects."""


@lru_cache(maxsize=512)
def _compile(pattern: str) -> object:
    try:
        return re2.compile(pattern, _OPTIONS)
    except Exception as exc:  # re2 raises its own error type (re2.error / _re2.Error) by version
        detail = exc.args[0] if exc.args else exc
        if isinstance(detail, bytes):
            detail = detail.decode("utf-8", "replace")
        return RegexError(f"error parsing regexp: {detail}")


def compile_regex(pattern: str) -> object:
    """A compiled RE2 pattern; raises RegexError (cached, like the pattern itself)."""
    compiled = _compile(pattern)
    if isinstance(compiled, RegexError):
        raise compiled
    return compiled
