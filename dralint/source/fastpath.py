"""The fast reader: rapidyaml builds the tree and writes JSON in C++, orjson reads it back.

It is only used for a chunk of YAML where its answer is provably the one the exact reader
(:mod:`dralint.source.composer`) gives; otherwise it says None and the exact reader runs:

* no anchors, aliases, tags, directives, ``...`` markers, explicit ``?`` keys, reserved
  indicators (``@`` and backtick), tabs, carriage returns, backslashes or characters that libyaml
  refuses or treats as line breaks (rapidyaml is more lenient or differs there);
* no plain scalar that Kubernetes reads as anything but a string, except ``true``, ``false``,
  ``null`` (as a value) and plain decimal integers of at most 18 digits, which rapidyaml's JSON
  writes and orjson reads identically;
* rapidyaml parses the chunk, the JSON has no float, the values nest at most MAX_DEPTH deep,
  and the value has as many nodes as rapidyaml's tree (fewer means a duplicate key collapsed).

Equivalence with the exact reader is tested on real-world files and generated YAML.
"""
from __future__ import annotations

import contextlib
import os
import re
import threading
from typing import Any, Iterator

from dralint.source.limits import MAX_DEPTH
from dralint.source.scalars import resolve_plain

try:
    import orjson
    import ryml
except ImportError:  # the exact reader alone is correct, only slower
    ryml = None
    orjson = None

_ODD = re.compile("[\t\r\\\\\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff\ufeff\ufffe\uffff]")
_STRUCTURE = re.compile(
    r"^(?:%|\.\.\.(?:[ \t]|$))"
    r"|^[ \t]*(?:-[ \t]+)*[?:](?:[ \t]|$)"
    r"|(?:^[ \t]*(?:[-?:][ \t]+)*|---[ \t]+|[:,\[{][ \t]*)[&*!@`%]",
    re.MULTILINE,
)
_BEFORE = r"(?<![^\s\[{,])"
_WORD = re.compile(
    _BEFORE + r"(?:[yYnN]|yes|Yes|YES|no|No|NO|on|On|ON|off|Off|OFF|True|TRUE|False|FALSE|Null|NULL|~|<<"
    r"|null(?=[ \t]*:))(?=[\s,\]}:]|$)"
)
_NUMBERISH = re.compile(
    _BEFORE + r"(?!(?:0|-?[1-9][0-9]{0,17})(?:[\s,\]}]|:(?:\s|$)|$))[-+.0-9][-+.0-9A-Za-z_:]*"
)
# rapidyaml reports parse errors on the C stderr before raising; the exact reader reports
# them properly, so that output is silenced. The lock keeps the redirection to one thread.
_STDERR_LOCK = threading.Lock()


def available() -> bool:
    """Whether rapidyaml and orjson are installed."""
    return ryml is not None


def fast_values(body: str) -> list[Any] | None:
    """The documents of one chunk as Kubernetes reads them, or None when the exact reader must decide."""
    if ryml is None or not _plain_enough(body):
        return None
    with _quiet_stderr():
        return _emit_values(body)


def _emit_values(body: str) -> list[Any] | None:
    try:
        tree = ryml.parse_in_arena(body.encode("utf-8"))
    except Exception:  # any rapidyaml complaint: the exact reader will name the problem
        return None
    root = tree.root_id()
    if tree.is_stream(root):
        nodes = list(_children(tree, root))
        expected = tree.size() - 1
    elif tree.type_str(root) == "NOTYPE":
        return []
    else:
        nodes = [root]
        expected = tree.size()
    values: list[Any] = []
    counted = 0
    for node in nodes:
        try:
            value = orjson.loads(ryml.emit_json(tree, node))
        except Exception:  # deeper than rapidyaml emits, or not JSON: not ours to judge
            return None
        size = _count(value, 0)
        if size < 0:
            return None
        counted += size
        values.append(value)
    return values if counted == expected else None


def _plain_enough(body: str) -> bool:
    if _ODD.search(body) or _STRUCTURE.search(body) or _WORD.search(body):
        return False
    for match in _NUMBERISH.finditer(body):
        token = match.group()
        for candidate in (token, token.rstrip(":")):
            if candidate and not isinstance(resolve_plain(candidate), str):
                return False
    return True


def _children(tree: Any, node: int) -> Iterator[int]:
    child = tree.first_child(node)
    while child != ryml.NONE:
        yield child
        child = tree.next_sibling(child)


def _count(value: Any, depth: int) -> int:
    """Nodes in ``value``; -1 if it holds a float or nests past MAX_DEPTH."""
    if isinstance(value, dict):
        children = value.values()
    elif isinstance(value, list):
        children = value
    else:
        return -1 if isinstance(value, float) else 1
    if depth >= MAX_DEPTH:
        return -1
    total = 1
    for child in children:
        size = _count(child, depth + 1)
        if size < 0:
            return -1
        total += size
    return total


@contextlib.contextmanager
def _quiet_stderr() -> Iterator[None]:
    with _STDERR_LOCK:
        try:
            saved = os.dup(2)
        except OSError:  # no stderr to protect
            yield
            return
        try:
            with open(os.devnull, "wb") as sink:
                os.dup2(sink.fileno(), 2)
                yield
        finally:
            os.dup2(saved, 2)
            os.close(saved)
