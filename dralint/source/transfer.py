"""Parsed files packed for another process (``-j`` sends each process's share to the others).

Pickling parsed files costs about as much as parsing them again. Documents the fast reader read
hold JSON values only (orjson built them), so their values travel as one orjson text per file,
which orjson writes and reads back, equal, several times faster; the records around them are a
few small tuples. A file with any other document (the exact reader's values can hold what JSON
cannot: NaN, large integers) travels pickled whole.
"""
from __future__ import annotations

import pickle
from typing import Any, Sequence, cast

from .positions import Chunk
from .records import SourceDocument, SourceFile

try:
    import orjson
except ImportError:  # everything travels pickled
    orjson = None  # type: ignore[assignment]


def pack(files: Sequence[SourceFile]) -> bytes:
    """``files`` as bytes for :func:`unpack`."""
    return pickle.dumps([_pack_file(f) for f in files], protocol=pickle.HIGHEST_PROTOCOL)


def unpack(data: bytes) -> list[SourceFile]:
    """The files :func:`pack` packed."""
    return [_unpack_file(record) for record in pickle.loads(data)]


def _pack_file(f: SourceFile) -> tuple[Any, ...]:
    documents = f.documents
    if orjson is None or not documents or not all(d.plain and d.chunk is not None for d in documents):
        return ("pickled", f)
    text = documents[0].chunk.text  # type: ignore[union-attr]
    if any(d.chunk.text is not text for d in documents):  # type: ignore[union-attr]
        return ("pickled", f)
    try:
        values = orjson.dumps([d.value for d in documents])
    except TypeError:
        return ("pickled", f)
    places = [(d.index, d.line, d.chunk.start, d.chunk.end, d.chunk.line_offset, d.chunk.sub_index,  # type: ignore[union-attr]
               d.items) for d in documents]
    return ("json", f.name, text, places, values, f.problems)


def _unpack_file(record: tuple[Any, ...]) -> SourceFile:
    if record[0] == "pickled":
        return cast(SourceFile, record[1])
    _, name, text, places, values, problems = record
    documents = [SourceDocument(name, index, line, value, Chunk(text, start, end, offset, sub), plain=True, items=items)
                 for (index, line, start, end, offset, sub, items), value in zip(places, orjson.loads(values))]
    return SourceFile(name, documents, problems)
