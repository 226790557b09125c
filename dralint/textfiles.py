"""Read a file for editing and write it back whole or not at all (``migrate``, ``--fix``).

The text keeps its line ends; a UTF-8 byte-order mark is put back. A new text goes to a
temporary file beside the original, with the original's permissions, and replaces it by a
rename, so a crash or a full disk never leaves half a file. A symbolic link keeps pointing at
the file it named, which is the one rewritten.
"""
from __future__ import annotations

import codecs
import os
import shutil
import tempfile
from dataclasses import dataclass

from .fixes import split_lines
from .linediff import unified_lines
from .source.reader import ReadResult, decode_bytes, read_path
from .source.limits import MAX_FILE_BYTES


@dataclass(frozen=True)
class Editable:
    """A file's text as read (None when it cannot be edited, with ``problem`` saying why)."""

    path: str
    text: str | None
    problem: str = ""
    bom: bool = False
    unreadable: bool = False  # not even read (missing, binary, too large), as opposed to read but not rewritable

    def with_bom(self, text: str) -> str:
        """``text`` as this file holds it: with the byte-order mark it was read with (stdout, diffs)."""
        return "\ufeff" + text if self.bom else text


def read_editable(path: str) -> Editable:
    """The text of ``path``, or why it cannot be rewritten."""
    try:
        with open(path, "rb") as handle:
            data = handle.read(MAX_FILE_BYTES + 1)
    except OSError as error:
        return Editable(path, None, f"cannot read file: {error.strerror or error}", unreadable=True)
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return Editable(path, None, "UTF-16 files are not rewritten (save it as UTF-8 first)")
    return _decoded(path, decode_bytes(data, path))


def read_stdin() -> Editable:
    """Standard input for editing (its new text goes to standard output, with its byte-order mark)."""
    return _decoded("-", read_path("-"))


def _decoded(path: str, result: ReadResult) -> Editable:
    if result.text is None:
        return Editable(path, None, result.problem.message if result.problem else "cannot read", unreadable=True)
    return Editable(path, result.text, bom=result.bom)


def write_atomic(file: Editable, new_text: str) -> None:
    """Replace the file's content by ``new_text`` (temporary file, then rename); raises OSError."""
    target = os.path.realpath(file.path)
    folder = os.path.dirname(target) or "."
    fd, temporary = tempfile.mkstemp(prefix=f".{os.path.basename(target)}.", suffix=".dralint", dir=folder)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write((codecs.BOM_UTF8 if file.bom else b"") + new_text.encode("utf-8"))
            handle.flush()
            os.fsync(handle.fileno())
        shutil.copymode(target, temporary)
        os.replace(temporary, target)
    except BaseException:
        try:
            os.unlink(temporary)
        except OSError:  # already gone; the original error is the one to report
            pass
        raise


def unified_diff(name: str, old: str, new: str) -> str:
    """The change as a unified diff naming the file as given (``patch -p0`` applies it); '' when none."""
    out = []
    for line in unified_lines(split_lines(old), split_lines(new), name):
        out.append(line if line.endswith(("\n", "\r")) else line + "\n\\ No newline at end of file\n")
    return "".join(out)
