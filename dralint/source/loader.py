"""Files, stdin and text into :class:`SourceFile` records: the source stage's entry points."""
from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from ..paths import FieldPath
from . import fastpath, itemwise
from .jsonc import blank_comments
from .limits import MAX_FILE_BYTES
from .positions import Chunk
from .reader import decode_bytes, read_path, too_large
from .records import SourceDocument, SourceFile, SourceProblem
from .sharing import DeviceEntries
from .splitter import split_chunks
from .templates import HELM_TEMPLATE, is_template

if TYPE_CHECKING:
    from .composer import ComposedProblem

_SURROGATE = re.compile("[\ud800-\udfff]")


def load_file(path: str, max_bytes: int = MAX_FILE_BYTES, skip: str = "") -> SourceFile:
    """Read and parse one file; ``-`` reads stdin (named ``<stdin>``). Never raises.

    ``skip`` says why the file is no manifest (``discover.Plan.skip``): it is then not read. A Go
    template (templates.py) is read but kept as a skipped file; a ``.json`` file that YAML cannot
    read is read again as JSON with comments (jsonc.py).
    """
    if skip:
        return SourceFile(path, [], [], skipped=skip)
    result = read_path(path, max_bytes)
    if result.text is None:
        return SourceFile(result.name, [], [result.problem] if result.problem else [])
    loaded = _load(result.text, result.name)
    if is_template(path, result.text, loaded):
        return SourceFile(result.name, [], [], skipped=HELM_TEMPLATE)
    if path.lower().endswith(".json") and any(p.kind == "syntax" for p in loaded.problems):
        blanked = blank_comments(result.text)
        again = _load(blanked, result.name) if blanked is not None else None
        if again is not None and not any(p.kind == "syntax" for p in again.problems):
            return again
    return loaded


def load_text(text: str | bytes, name: str, max_bytes: int = MAX_FILE_BYTES) -> SourceFile:
    """Parse YAML or JSON given as text (or bytes, decoded as a file would be). Never raises."""
    if isinstance(text, (bytes, bytearray, memoryview)):
        result = decode_bytes(bytes(text), name, max_bytes)
        if result.text is None:
            return SourceFile(name, [], [result.problem] if result.problem else [])
        return _load(result.text, name)
    if len(text) > max_bytes:
        return SourceFile(name, [], [too_large(name, max_bytes)])
    if "\x00" in text or _SURROGATE.search(text):
        # Text no file could hold: report it as a file's bytes would be reported.
        result = decode_bytes(text.encode("utf-8", "surrogatepass"), name)
        return SourceFile(name, [], [result.problem] if result.problem else [])
    return _load(text[1:] if text.startswith("\ufeff") else text, name)


def document_from_value(value: Any, name: str) -> SourceDocument:
    """Wrap an object that arrived already decoded (webhook JSON): positions are unknown (0, 0)."""
    return SourceDocument(file=name, index=0, line=0, value=value)


def _load(text: str, name: str) -> SourceFile:
    loaded = SourceFile(name, [], [])
    counter = _Counter()
    chunks = split_chunks(text)
    # One rapidyaml pass over a whole file is fastest, but its tree takes about twelve times the
    # text: a large file is read a document at a time, and a large List an item batch at a time.
    whole = fastpath.fast_file(text, chunks) if len(text) < itemwise.BIG else None
    entries = DeviceEntries()
    for number, chunk in enumerate(chunks):
        listed = itemwise.list_values(chunk.body) if whole is None else None
        values, items = listed if listed is not None else (
            whole[number] if whole is not None else fastpath.fast_values(chunk.body), ())
        if values is None:
            _load_exact(chunk, loaded, counter)
            continue
        line = first_content_line(chunk)
        present = [v for v in values if v is not None]
        for sub, value in enumerate(present):
            entries.share(value)
            loaded.documents.append(SourceDocument(
                name, counter.take(), line, value,
                Chunk(chunk.text, chunk.start, chunk.end, chunk.line_offset, sub), plain=len(present) == 1,
                items=items))
    return loaded


class _Counter:
    """Numbers the non-empty documents of a file, loaded or not, in order."""

    def __init__(self) -> None:
        self.next = 0

    def take(self) -> int:
        self.next += 1
        return self.next - 1


def _load_exact(chunk: Chunk, loaded: SourceFile, counter: _Counter) -> None:
    from .composer import DocumentComposer  # PyYAML (libyaml) loads on the first chunk the fast reader declines

    composed, error = DocumentComposer().compose(chunk.body, chunk.line_offset)
    sub = 0
    for document in composed:
        if document.usable and document.value is None and not document.problems:
            continue
        index = counter.take()
        loaded.problems.extend(_problem(p, chunk, loaded.name, index) for p in document.problems)
        if not document.usable or document.value is None:
            continue
        loaded.documents.append(SourceDocument(
            loaded.name, index, document.line + chunk.line_offset + 1, document.value,
            Chunk(chunk.text, chunk.start, chunk.end, chunk.line_offset, sub)))
        sub += 1
    if error is not None:
        loaded.problems.append(_problem(error, chunk, loaded.name, counter.take()))


def _problem(problem: ComposedProblem, chunk: Chunk, name: str, index: int) -> SourceProblem:
    return SourceProblem(
        problem.kind, problem.message, name,
        problem.line + chunk.line_offset + 1, problem.column + 1, index,
        FieldPath(problem.path) if problem.path is not None else None)


def first_content_line(chunk: Chunk) -> int:
    """1-based line of the first node of a chunk that holds one document (the fast reader's case)."""
    text, position, number = chunk.text, chunk.start, 0
    while position < chunk.end:
        end = text.find("\n", position, chunk.end)
        end = chunk.end if end < 0 else end
        line = text[position + 3:end] if number == 0 and text.startswith("---", position) else text[position:end]
        stripped = line.strip(" ")
        if stripped and not stripped.startswith("#"):
            return chunk.line_offset + number + 1
        position, number = end + 1, number + 1
    return chunk.line_offset + 1
