"""How the one watcher of a replica hands the cluster to its gunicorn workers: files in a folder.

``status.json`` is the watcher's heartbeat (written every second): per resource whether it is
synced, its position, counts and the last error, for ``/readyz`` and ``/metrics``.
``state`` holds every object, one line each, ``resource<TAB>key<TAB>resourceVersion<TAB>JSON``,
after a first line with the generation; it is rewritten when the state changed (at most every
``interval``). Both are written to a temporary file and renamed, so a reader sees the old or the
new file, never half of one. A worker reads the lines and parses the JSON only of objects whose
resourceVersion it has not seen: a change of a few objects costs a few parses, not a full reload.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Iterator

import orjson

STATE = "state"
STATUS = "status.json"


def write_atomically(path: Path, chunks: Iterable[bytes]) -> None:
    """Write ``chunks`` to ``path`` through a temporary file and a rename."""
    tmp = path.with_name(path.name + f".{os.getpid()}.tmp")
    with open(tmp, "wb") as fh:
        for chunk in chunks:
            fh.write(chunk)
    os.replace(tmp, path)


def write_state(folder: Path, generation: int, rows: Iterable[tuple[str, str, str, bytes]]) -> None:
    def chunks() -> Iterator[bytes]:
        yield orjson.dumps({"generation": generation}) + b"\n"
        for resource, key, version, data in rows:
            yield b"%s\t%s\t%s\t%s\n" % (resource.encode(), key.encode(), version.encode(), data)
    write_atomically(folder / STATE, chunks())


def write_status(folder: Path, status: dict[str, Any]) -> None:
    write_atomically(folder / STATUS, [orjson.dumps(status)])


def read_status(folder: Path) -> dict[str, Any] | None:
    """The last heartbeat, or None when there is none (yet) or it cannot be read."""
    try:
        value = orjson.loads((folder / STATUS).read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return None
    return value if isinstance(value, dict) else None


@dataclass(frozen=True)
class Row:
    resource: str
    key: str
    version: str
    data: bytes      # the object's JSON, parsed only when needed


def read_state(folder: Path) -> tuple[int, list[Row]] | None:
    """(generation, rows) of the state file, or None when there is none or it is damaged."""
    try:
        raw = (folder / STATE).read_bytes()
    except OSError:
        return None
    head, _, body = raw.partition(b"\n")
    try:
        generation = orjson.loads(head)["generation"]
    except (orjson.JSONDecodeError, KeyError, TypeError):
        return None
    rows = []
    for line in body.split(b"\n"):
        if not line:
            continue
        parts = line.split(b"\t", 3)
        if len(parts) != 4:
            return None
        rows.append(Row(parts[0].decode(), parts[1].decode(), parts[2].decode(), parts[3]))
    return int(generation), rows


def state_identity(folder: Path) -> tuple[int, int, int] | None:
    """(inode, size, mtime) of the state file: a new file after each write (rename)."""
    try:
        st = os.stat(folder / STATE)
    except OSError:
        return None
    return st.st_ino, st.st_size, st.st_mtime_ns
