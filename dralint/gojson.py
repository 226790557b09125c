"""JSON read and written the way Go's ``encoding/json`` does it, so that whatever an API server sends is read.

The API server keeps a ``runtime.RawExtension`` (a claim's ``opaque.parameters``) as the bytes the
client sent, having only checked that Go's decoder takes them. So an admission request or a watch
event can carry JSON that common Python decoders refuse:

* nesting up to Go's limit of 10,000 levels (orjson stops at 1,024, orjson's encoder at 254);
* ``\\ud800``, a UTF-16 surrogate escape without its pair: Go reads it as U+FFFD;
* bytes that are not UTF-8 inside a string: Go reads each such byte as U+FFFD;
* integers beyond 64 bits (Go reads them into a float64, as orjson does).

:func:`loads` reads the common case with orjson (fast) and everything else with the standard
library's decoder, then puts U+FFFD where Go would. It refuses what Go refuses: broken syntax,
``NaN`` and ``Infinity``, nesting deeper than :data:`MAX_DEPTH` plus the envelopes the API server
wraps around an object. :func:`dumps` writes any value :func:`loads` returns.

Deep values are walked recursively by every reader (the standard decoder among them): a process
that reads them calls :func:`allow_deep_values` once before it starts its threads.
"""
from __future__ import annotations

import json
import re
import sys
import threading
from typing import Any

import orjson

MAX_DEPTH = 10_000
"""Go's ``encoding/json`` refuses a document nested deeper than this."""

ENVELOPE_DEPTH = 16
"""Levels an API server wraps around an object it sends: a watch event, a list, an AdmissionReview."""

RECURSION_LIMIT = 3 * (MAX_DEPTH + ENVELOPE_DEPTH)
"""Python frames a walk of the deepest value needs (a walk spends up to three frames per level)."""

THREAD_STACK_BYTES = 64 * 1024 * 1024
"""C stack of each thread: a level of C recursion (a decoder, ``==`` on dicts) takes about 200 bytes,
so this holds :data:`RECURSION_LIMIT` levels ten times over. Reserved, not resident, until used."""

_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")
_SURROGATES = re.compile("[\ud800-\udfff]")


class GoJSONError(ValueError):
    """Text that Go's ``encoding/json`` would refuse too; the message says where and why."""


def allow_deep_values() -> None:
    """Let this process read and walk values as deep as an API server can send (call before threads start).

    Raises the interpreter's recursion limit to :data:`RECURSION_LIMIT` and gives threads created
    afterwards :data:`THREAD_STACK_BYTES` of stack; never lowers either.
    """
    if sys.getrecursionlimit() < RECURSION_LIMIT:
        sys.setrecursionlimit(RECURSION_LIMIT)
    if threading.stack_size() < THREAD_STACK_BYTES:
        threading.stack_size(THREAD_STACK_BYTES)


def loads(data: bytes | str) -> Any:
    """The value of JSON ``data`` as Go's decoder reads it; raises :class:`GoJSONError` where Go would."""
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        pass
    text = data.decode("utf-8", "surrogateescape") if isinstance(data, (bytes, bytearray, memoryview)) else data
    try:
        value = json.loads(text, parse_constant=_refuse_constant)
    except RecursionError:
        if sys.getrecursionlimit() >= RECURSION_LIMIT:
            raise GoJSONError(_too_deep()) from None
        raise GoJSONError(f"JSON nested deeper than this process reads ({sys.getrecursionlimit()} levels; "
                          "it did not call allow_deep_values())") from None
    except ValueError as exc:     # json.JSONDecodeError, NaN, an integer of more than 4,300 digits
        raise GoJSONError(_cut(str(exc))) from None
    fix = bool(_SURROGATES.search(text) or _SURROGATE_ESCAPE.search(text))
    # Fewer brackets than levels allowed (strings' own brackets counted too): no walk needed for depth.
    deep = text.count("[") + text.count("{") > MAX_DEPTH + ENVELOPE_DEPTH
    return _checked(value, MAX_DEPTH + ENVELOPE_DEPTH if deep else 0, fix) if deep or fix else value


def dumps(value: Any) -> bytes:
    """Compact JSON of ``value`` (a value :func:`loads` returns, however deep), as UTF-8."""
    try:
        return orjson.dumps(value)
    except (orjson.JSONEncodeError, TypeError):
        pass
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return _SURROGATES.sub("\ufffd", text).encode("utf-8")


def _too_deep() -> str:
    return f"JSON nested deeper than {MAX_DEPTH + ENVELOPE_DEPTH} levels (Go's decoder stops at {MAX_DEPTH})"


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _cut(text: str, limit: int = 300) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _fix(text: str) -> str:
    return _SURROGATES.sub("\ufffd", text)


def _checked(value: Any, limit: int, fix: bool) -> Any:
    """``value`` in one iterative walk (any depth is safe): refused when it nests deeper than ``limit``
    (0: not looked at), and with every surrogate code point (a lone escape, a byte that was not
    UTF-8) replaced by U+FFFD when ``fix``."""
    if isinstance(value, str):
        return _fix(value) if fix else value
    if not isinstance(value, (dict, list)):
        return value
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if limit and depth > limit:
            raise GoJSONError(_too_deep())
        if isinstance(node, dict):
            if fix:
                for key in [k for k in node if _SURROGATES.search(k)]:
                    node[_fix(key)] = node.pop(key)
            items: Any = node.items()
        else:
            items = enumerate(node)
        for k, v in list(items) if fix else items:
            if isinstance(v, (dict, list)):
                stack.append((v, depth + 1))
            elif fix and isinstance(v, str) and _SURROGATES.search(v):
                node[k] = _fix(v)
    return value
