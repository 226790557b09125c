"""Read a file or stdin into text, bounded, or say clearly why not."""
from __future__ import annotations

import codecs
import os
import sys
from dataclasses import dataclass
from typing import BinaryIO

from dralint.source.limits import MAX_FILE_BYTES
from dralint.source.records import SourceProblem

STDIN_NAME = "<stdin>"


@dataclass(frozen=True)
class ReadResult:
    """The decoded text of a file, or the problem that prevented reading it."""

    name: str
    text: str | None
    problem: SourceProblem | None


def read_path(path: str) -> ReadResult:
    """Read ``path`` ("-" is stdin, named ``<stdin>``), at most :data:`MAX_FILE_BYTES`."""
    if path == "-":
        stream = getattr(sys.stdin, "buffer", None)
        if stream is None:
            return _unreadable(STDIN_NAME, "no standard input")
        try:
            return decode_bytes(_read_bounded(stream), STDIN_NAME)
        except (OSError, ValueError) as error:
            return _unreadable(STDIN_NAME, str(error) or "standard input is closed")
    try:
        if os.path.isdir(path):
            return _unreadable(path, "is a directory")
        with open(path, "rb") as handle:
            data = _read_bounded(handle)
    except FileNotFoundError:
        return _unreadable(path, "no such file or directory")
    except PermissionError:
        return _unreadable(path, "permission denied")
    except OSError as error:
        return _unreadable(path, error.strerror or str(error))
    except ValueError as error:  # e.g. a NUL character in the path
        return _unreadable(path, str(error))
    return decode_bytes(data, path)


def _read_bounded(handle: BinaryIO) -> bytes:
    # One byte past the cap is enough to know the input is too large.
    return handle.read(MAX_FILE_BYTES + 1)


def _unreadable(path: str, why: str) -> ReadResult:
    return ReadResult(path, None, SourceProblem("unreadable", f"cannot read file: {why}", path, 0, 0))


def decode_bytes(data: bytes, name: str) -> ReadResult:
    """Decode file bytes as YAML allows (UTF-8, or UTF-16 with a byte-order mark)."""
    if len(data) > MAX_FILE_BYTES:
        return ReadResult(name, None, SourceProblem(
            "too-large", f"file is larger than {MAX_FILE_BYTES // (1024 * 1024)} MiB; not read", name, 0, 0))
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
        text = text[1:]
    return ReadResult(name, text, None)


def _binary(name: str, data: bytes, offset: int, message: str) -> ReadResult:
    before = data[:offset]
    line = before.count(b"\n") + 1
    column = offset - (before.rfind(b"\n") + 1) + 1
    return ReadResult(name, None, SourceProblem("binary", message, name, line, column))
