"""Read a file or stdin into text, bounded, or say clearly why not."""
from __future__ import annotations

import codecs
import os
import sys
from dataclasses import dataclass
from typing import BinaryIO

from .limits import MAX_FILE_BYTES
from .records import SourceProblem

STDIN_NAME = "<stdin>"


@dataclass(frozen=True)
class ReadResult:
    """The decoded text of a file, or the problem that prevented reading it."""

    name: str
    text: str | None
    problem: SourceProblem | None
    bom: bool = False  # the text began with a UTF-8 byte-order mark, left out of ``text``


def read_path(path: str, max_bytes: int = MAX_FILE_BYTES) -> ReadResult:
    """Read ``path`` ("-" is stdin, named ``<stdin>``), at most ``max_bytes``."""
    if path == "-":
        stream = getattr(sys.stdin, "buffer", None)
        if stream is None:
            return _unreadable(STDIN_NAME, "no standard input")
        try:
            return decode_bytes(_read_bounded(stream, max_bytes), STDIN_NAME, max_bytes)
        except (OSError, ValueError) as error:
            return _unreadable(STDIN_NAME, str(error) or "standard input is closed")
    try:
        if os.path.isdir(path):
            return _unreadable(path, "is a directory")
        with open(path, "rb") as handle:
            data = _read_bounded(handle, max_bytes)
    except FileNotFoundError:
        return _unreadable(path, "no such file or directory")
    except PermissionError:
        return _unreadable(path, "permission denied")
    except OSError as error:
        return _unreadable(path, error.strerror or str(error))
    except ValueError as error:  # e.g. a NUL character in the path
        return _unreadable(path, str(error))
    return decode_bytes(data, path, max_bytes)


def _read_bounded(handle: BinaryIO, max_bytes: int) -> bytes:
    # One byte past the cap is enough to know the input is too large.
    return handle.read(max_bytes + 1)


def _unreadable(path: str, why: str) -> ReadResult:
    return ReadResult(path, None, SourceProblem("unreadable", f"cannot read file: {why}", path, 1, 1))


def too_large(name: str, max_bytes: int) -> SourceProblem:
    """The problem of an input over the size limit, saying how to raise it."""
    return SourceProblem("too-large", f"larger than the limit of {format_size(max_bytes)}; not read (raise the limit "
                                      "with --max-file-size, e.g. --max-file-size 64MiB, or max-file-size in "
                                      ".dralint.yaml)", name, 1, 1)


def format_size(size: int) -> str:
    """``16 MiB``, ``1.5 GiB``, ``512 bytes``."""
    for unit, factor in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if size >= factor:
            return f"{size / factor:.3g} {unit}"
    return f"{size} bytes"


def decode_bytes(data: bytes, name: str, max_bytes: int = MAX_FILE_BYTES) -> ReadResult:
    """Decode file bytes as YAML allows (UTF-8, or UTF-16 with a byte-order mark)."""
    if len(data) > max_bytes:
        return ReadResult(name, None, too_large(name, max_bytes))
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        try:
            return ReadResult(name, data.decode("utf-16"), None)
        except UnicodeDecodeError as error:
            return _binary(name, data, error.start, f"invalid UTF-16 ({error.reason})")
    nul = data.find(b"\x00")
    if nul >= 0:
        return _binary(name, data, nul, "binary file (contains NUL bytes); expected YAML or JSON text")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        return _binary(name, data, error.start, "not UTF-8 text; expected YAML or JSON")
    if text.startswith("\ufeff"):
        return ReadResult(name, text[1:], None, bom=True)
    return ReadResult(name, text, None)


def _binary(name: str, data: bytes, offset: int, message: str) -> ReadResult:
    before = data[:offset]
    line = before.count(b"\n") + 1
    column = offset - (before.rfind(b"\n") + 1) + 1
    return ReadResult(name, None, SourceProblem("binary", message, name, line, column))
