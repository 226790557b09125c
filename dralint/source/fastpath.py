"""The fast reader: rapidyaml builds the tree and writes JSON in C++, orjson reads it back.

It is only used for YAML where its answer is provably the one the exact reader
(:mod:`dralint.source.composer`) gives; otherwise it says None and the exact reader runs:

* no aliases, tags, directives, ``...`` markers, explicit ``?`` keys or empty keys, reserved
  indicators (``@``, backtick), flow indicators starting a block node, ``:`` before a flow
  indicator or as an empty flow key, block scalar headers
  libyaml refuses, ``.nan``/``.inf`` spellings, tabs, carriage returns, backslashes, or
  characters that libyaml refuses or treats as line breaks (rapidyaml is more lenient or
  differs there), and no key in rapidyaml's JSON that starts or ends with whitespace;
* no plain scalar that Kubernetes reads as anything but a string, except ``true``, ``false``,
  ``null`` (as a value) and plain decimal integers of at most 18 digits, which rapidyaml's JSON
  writes and orjson reads identically;
* rapidyaml parses and writes the text (it refuses to write more than 64 levels, below
  MAX_DEPTH), and the JSON it writes has as many keys as the values orjson reads from it
  (fewer means a duplicate key collapsed).

The checks run first on cheap whitespace-separated tokens; only text they flag (often just a
word like "on" in a comment) gets the precise, slower look. Equivalence with the exact reader
is tested on real-world files and generated YAML.
"""
from __future__ import annotations

import contextlib
import os
import re
import sys
import threading
from typing import Any, Iterator, Sequence

from ..bounded_cache import bounded_cache

from .positions import Chunk
from .scalars import resolve_plain

try:
    import orjson
    import ryml
except ImportError:  # the exact reader alone is correct, only slower
    ryml = None
    orjson = None  # type: ignore[assignment]
# Whether the fast reader can run at all (both libraries are an optional speed-up).
AVAILABLE = ryml is not None and orjson is not None

_ODD = re.compile("[\t\r\\\\\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff\ufeff\ufffe\uffff]")
# In ASCII text the odd characters are the controls (but line feed), DEL and backslash: deleting
# every other byte is ten times faster than searching with _ODD.
_ASCII_NOT_ODD = bytes(c for c in range(0x20, 0x7F) if c != 0x5C) + b"\n"
_LINE_START_MARKS = re.compile(r"^(?:%|\.\.\.(?:[ \t]|$))", re.MULTILINE)
# Node properties, reserved indicators and stray flow indicators, each then checked for a
# node position: properties anywhere a node starts, "]", "}" and "," where a block node starts
# (libyaml refuses them there, rapidyaml reads a plain scalar). The lookbehinds drop, in C, the
# ones that cannot be at a node start: mid-word, like the second "&" of "&&", or one space after
# a word, like the first (CEL is full of both); the loop in _plain_enough looks at the rest. (The
# lookbehinds come after the class, which keeps the regex engine's fast scan for it.)
_INDICATOR_CANDIDATE = re.compile(r"[&*!@`%\]},|>](?<![^ \t\n\[{,].)(?<![^-?:,\[{ \t\n] .)", re.DOTALL)
# Matched against the whole line before the indicator.
_NODE_PREFIX = re.compile(r"[ \t]*(?:[-?:][ \t]+)*|.*(?:---[ \t]|[:,\[{])[ \t]*")
_BLOCK_NODE_PREFIX = re.compile(r"[ \t]*(?:[-?:][ \t]+)*|.*(?:---|:)[ \t]+")
# What may follow "|" or ">" on a block scalar's header line (libyaml refuses anything else).
_BLOCK_HEADER_REST = re.compile(r"(?:[-+]?[1-9]?|[1-9][-+])(?:[ \t]+(?:#.*)?)?")
_NODE_START_BEFORE = frozenset(" \t\n[{,")
_LEADING_INDICATORS = re.compile(r"[ \t]*(?:-[ \t]+)*")
_FIRST_CONTENT_LINE = re.compile(r"^( *)\S", re.MULTILINE)
# A tag right after a flow collection ("{}!"): libyaml refuses it, rapidyaml reads an empty string.
_TAG_AFTER_FLOW = re.compile(r"[\]}][ \t]*!(?!=)")
# rapidyaml rewrites quoted ".NaN" / ".Inf" keys; leave any such text to the exact reader.
_SPECIAL_FLOAT = re.compile(r"\.(?:nan|NaN|NAN|inf|Inf|INF)")
# A key that starts or ends with a space, looked for in orjson's compact output: rapidyaml
# makes such keys out of some mis-indented lines that libyaml refuses.
_SPACED_KEYS = ('{" ', '," ', ' ":')
# A string that starts with ":" (an opening quote is always after one of "[{,:" in compact JSON)
# reads as the end of a key to the count below, and can hide a duplicate key from it.
_COLON_FIRST = re.compile(r'[\[{,:]":')
_NUMERIC_TOKEN = re.compile(r" ([-+.0-9][^ ]*)")
_EXPLICIT_KEY = re.compile(r"^[ \t]*(?:-[ \t]+)*[?:](?:[ \t]|$)", re.MULTILINE)
# Where libyaml refuses a ":" in flow context (before a flow indicator) and empty flow keys
# (two expressions: each alone lets the regex engine skip ahead faster than one alternation).
_FLOW_COLON = re.compile(r":[,\[\]{}?]")
_FLOW_EMPTY_KEY = re.compile(r"[\[{,][ \t]*[:?](?:[ \t,\]}]|$)", re.MULTILINE)
_RISKY_WORDS = (
    "y Y yes Yes YES n N no No NO on On ON off Off OFF True TRUE False FALSE Null NULL ~ <<".split()
)
_RISKY_TOKENS = frozenset(_RISKY_WORDS + [w + ":" for w in _RISKY_WORDS] + ["null:", "?", ":"])
_FLOW_TO_SPACE = str.maketrans({c: " " for c in ",[]{}"})
_SAFE_INT = re.compile(r"(?:0|-?[1-9][0-9]{0,17}):?")
_JSON_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?")
_BEFORE = r"(?<![^\s\[{,])"
_WORD = re.compile(
    _BEFORE + r"(?:[yYnN]|yes|Yes|YES|no|No|NO|on|On|ON|off|Off|OFF|True|TRUE|False|FALSE|Null|NULL|~|<<"
    r"|null(?=[ \t]*:))(?=[\s,\]}:]|$)"
)
_NUMBERISH = re.compile(_BEFORE + r"[-+.0-9][-+.0-9A-Za-z_:]*(?=[\s,\]}:]|$)")
_COMMENT_START = re.compile(r"(?:^|[ \t])#")
_COMMENTS_ONLY = re.compile(r"(?:[ \t]*(?:#[^\n]*)?\n)*[ \t]*(?:#[^\n]*)?")
# rapidyaml reports errors on the C stderr before raising; the exact reader reports them
# properly, so that output is silenced. The lock keeps the redirection to one thread.
_STDERR_LOCK = threading.Lock()


def available() -> bool:
    """Whether rapidyaml and orjson are installed."""
    return ryml is not None


def fast_file(text: str, chunks: Sequence[Chunk]) -> list[list[Any]] | None:
    """The documents of each chunk of a whole file in one rapidyaml pass, or None."""
    if ryml is None or not _plain_enough(text):
        return None
    values = _emit_values(text)
    if values is None:
        return None
    if len(values) == len(chunks):
        return [[v] for v in values]
    if len(values) == len(chunks) - 1 and _COMMENTS_ONLY.fullmatch(chunks[0].body):
        # The first chunk only holds comments (rapidyaml makes no document of it).
        return [[]] + [[v] for v in values]
    return None


def fast_values(body: str) -> list[Any] | None:
    """The documents of one chunk as Kubernetes reads them, or None."""
    if ryml is None or not _plain_enough(body):
        return None
    return _emit_values(body)


def _emit_values(body: str) -> list[Any] | None:
    with _quiet_stderr():
        try:
            encoded = body.encode("utf-8")
            tree = ryml.parse_in_arena(encoded)
            root = tree.root_id()
            if tree.type_str(root) == "NOTYPE":
                return []
            written = _json_text(tree, root, 2 * len(encoded) + 256)
        except Exception:  # any rapidyaml complaint (syntax, depth): the exact reader decides
            return None
    try:
        value = orjson.loads(written)
    except orjson.JSONDecodeError:  # rapidyaml wrote something that is not JSON: not ours to judge
        return None
    compact = orjson.dumps(value).decode("utf-8")
    if any(spaced in compact for spaced in _SPACED_KEYS) or _COLON_FIRST.search(compact):
        return None
    if _keys(written, ": ", body) != _keys(compact, ":", body):
        return None  # a duplicate key collapsed
    return value if tree.is_stream(root) else [value]


def _json_text(tree: Any, root: int, guess: int) -> str:
    """The JSON rapidyaml writes of ``tree``, into a buffer of ours: ``ryml.emit_json`` never frees the
    one it allocates (as much again as the JSON, each call: 31 MB over a 17 MiB file's documents)."""
    buffer = bytearray(guess)
    failed, size = ryml.emit_json_to_substr(tree, root, buffer)
    if failed:  # the guess was short: the size it needs is known now
        buffer = bytearray(size)
        failed, size = ryml.emit_json_to_substr(tree, root, buffer)
        if failed:
            raise ValueError("rapidyaml wrote more than it asked room for")
    return buffer[:size].decode("utf-8")


def _keys(json_text: str, separator: str, source: str) -> int:
    """Map keys in JSON text: every unescaped quote followed by the key separator.

    The source has no backslashes (see :func:`_plain_enough`), so a backslash before the
    quote can only escape that quote, inside a string, and only if the source has ``":``."""
    keys = json_text.count('"' + separator)
    if '":' in source:
        keys -= json_text.count('\\"' + separator)
    return keys


def _plain_enough(body: str) -> bool:
    if body.isascii():
        if body.encode("ascii").translate(None, _ASCII_NOT_ODD):
            return False
    elif _ODD.search(body):
        return False
    if ("%" in body or "..." in body) and _LINE_START_MARKS.search(body):
        return False
    if _SPECIAL_FLOAT.search(body) or _FLOW_COLON.search(body) or _FLOW_EMPTY_KEY.search(body) or (
            "!" in body and _TAG_AFTER_FLOW.search(body)):
        return False
    for match in _INDICATOR_CANDIDATE.finditer(body):
        at = match.start()
        if at and body[at - 1] not in _NODE_START_BEFORE:
            continue  # mid-word, like the second "&" of "&&" or the "]" of ["x"]
        line_start = body.rfind("\n", 0, at) + 1
        before = at - 1
        while before >= line_start and body[before] in " \t":
            before -= 1
        if before >= line_start and body[before] not in "-?:,[{":
            continue  # after a word, like the first "&" of "a && b": not where a node starts
        char = match.group()
        prefix = _BLOCK_NODE_PREFIX if char in "]},|>" else _NODE_PREFIX
        if not prefix.fullmatch(body, line_start, at):
            continue
        if char not in "|>" or not _block_scalar_is_plain(body, line_start, at):
            return False
    tokens = set(body.translate(_FLOW_TO_SPACE).split())
    suspect = not _RISKY_TOKENS.isdisjoint(tokens) or any(
        not _safe_int(token) and _risky_number(token)
        for token in _NUMERIC_TOKEN.findall(" " + " ".join(tokens)))
    return not suspect or _precisely_plain(body)


def _block_scalar_is_plain(body: str, line_start: int, at: int) -> bool:
    """A block scalar header libyaml accepts, with automatic indentation, whose first content
    line is indented deeper than its parent node (rapidyaml also takes shallower lines), in text
    that ends with a line break (at the very end without one, rapidyaml adds a final line break
    that libyaml's clipping leaves out)."""
    if not body.endswith("\n"):
        return False
    end = body.find("\n", at)
    end = len(body) if end < 0 else end
    if not _BLOCK_HEADER_REST.fullmatch(body, at + 1, end) or any(c.isdigit() for c in body[at:end]):
        return False
    prefix = body[line_start:at]
    leading = _LEADING_INDICATORS.match(prefix)
    assert leading is not None  # the pattern matches the empty string
    indicators = leading.end()
    # The parent is the key on the header line, else the last "-" (root: libyaml wants column 1).
    parent = indicators if prefix[indicators:] else max(prefix.rfind("-"), 0)
    content = _FIRST_CONTENT_LINE.search(body, end + 1)
    return content is None or len(content.group(1)) > parent


def _safe_int(token: str) -> bool:
    """A decimal integer rapidyaml writes and orjson reads as Kubernetes does (maybe a key)."""
    digits = token[:-1] if token.endswith(":") else token
    if digits.isdigit():  # the common case, without a regular expression
        return len(digits) <= 18 and (digits[0] != "0" or digits == "0") and digits.isascii()
    return bool(_SAFE_INT.fullmatch(token))


# The same few tokens ("1", "16Gi", "0.5") recur in every file; a token is as long as a line may be.
TOKEN_CACHE_BYTES = 1 << 20


@bounded_cache(TOKEN_CACHE_BYTES, lambda token: sys.getsizeof(token) + 100)
def _risky_number(token: str) -> bool:
    """Kubernetes reads it as a number, or rapidyaml might write it as a JSON float."""
    return any(t and (_JSON_NUMBER.fullmatch(t) or not isinstance(resolve_plain(t), str))
               for t in (token, token.rstrip(":")))


def _precisely_plain(body: str) -> bool:
    """The slow look at text whose tokens were suspicious: skip what is surely in a comment."""
    if _EXPLICIT_KEY.search(body):
        return False
    for match in _WORD.finditer(body):
        if not _in_comment(body, match.start()):
            return False
    for match in _NUMBERISH.finditer(body):
        number = match.group()
        if not _safe_int(number) and _risky_number(number) and not _in_comment(body, match.start()):
            return False
    return True


def _in_comment(body: str, at: int) -> bool:
    """Whether ``at`` surely lies in a comment: a ``#`` starts one earlier on the line, with no
    quote before it that could make that ``#`` part of a string."""
    line = body[body.rfind("\n", 0, at) + 1:at]
    comment = _COMMENT_START.search(line)
    return comment is not None and "'" not in line[:comment.start() + 1] and '"' not in line[:comment.start() + 1]



@contextlib.contextmanager
def _quiet_stderr() -> Iterator[None]:
    """Silence the process's stderr (fd 2) while rapidyaml runs."""
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
