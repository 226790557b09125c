"""How the one watcher of a replica hands the cluster to its gunicorn workers: files in a folder.

``status.json`` is the watcher's heartbeat (written every second): per resource whether it is
synced, its position, counts and the last error, for ``/readyz`` and ``/metrics``.

The objects travel as a snapshot and a log of changes, so that a change costs what changed, not
the whole state:

* ``state``: every object, one line each (``resource<TAB>key<TAB>resourceVersion<TAB>JSON``) after
  a first line ``{"generation": G, "epoch": E}``. Written to a temporary file and renamed: a reader
  sees the old or the new file, never half of one.
* ``log.E``: the changes since snapshot ``E``, appended in batches. A batch is its changed objects
  (lines as above; an empty JSON for an object removed) and then a commit line
  ``#<TAB>generation<TAB>bytes<TAB>crc32`` of those lines. Records after the last commit line (a
  batch still being written, or cut short by a watcher that died) are never applied; a commit whose
  length or checksum does not match is refused.
* Compaction: when the log has grown past half the snapshot, the watcher starts epoch ``E+1``: it
  creates ``log.E+1``, appends the seal ``><TAB>E+1`` to ``log.E``, renames the new snapshot into
  place and removes the logs before ``E``. A worker that read ``log.E`` to its seal holds what the
  new snapshot holds and goes on in ``log.E+1`` without reading it; one that starts late, or fell
  behind by more than a compaction, or followed a log no watcher will seal (a new watcher process
  starts a new epoch), reads the snapshot and then its log.

The folder is the Pod's ``emptyDir`` under ``/tmp``, read by processes of the same Pod: nothing is
fsynced, since nothing here outlives the Pod.
"""
from __future__ import annotations

import os
import re
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, Iterable, Iterator, NoReturn

import orjson

STATE = "state"
STATUS = "status.json"
LOG_PREFIX = "log."
# The log is compacted into a new snapshot once it holds this share of the snapshot's size (and at least
# MIN_COMPACT_BYTES): a worker that starts late reads at most one and a half snapshots.
COMPACT_RATIO = 0.5
MIN_COMPACT_BYTES = 1 << 20
_LOG_NAME = re.compile(r"log\.(\d+)")

Change = tuple[str, str, str, Any]
"""(resource, key, resourceVersion, JSON bytes or None for an object removed), as the store drains them."""


def write_atomically(path: Path, chunks: Iterable[bytes]) -> int:
    """Write ``chunks`` to ``path`` through a temporary file and a rename; returns the bytes written."""
    tmp = path.with_name(path.name + f".{os.getpid()}.tmp")
    size = 0
    with open(tmp, "wb") as fh:
        for chunk in chunks:
            fh.write(chunk)
            size += len(chunk)
    os.replace(tmp, path)
    return size


def write_status(folder: Path, status: dict[str, Any]) -> None:
    write_atomically(folder / STATUS, [orjson.dumps(status)])


def read_status(folder: Path) -> dict[str, Any] | None:
    """The last heartbeat, or None when there is none (yet) or it cannot be read."""
    try:
        value = orjson.loads((folder / STATUS).read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return None
    return value if isinstance(value, dict) else None


def _line(resource: str, key: str, version: str, data: bytes | None) -> bytes:
    return b"%s\t%s\t%s\t%s\n" % (resource.encode(), key.encode(), version.encode(), data or b"")


def _log_path(folder: Path, epoch: int) -> Path:
    return folder / f"{LOG_PREFIX}{epoch}"


def _epochs(folder: Path) -> list[int]:
    """The epochs of the logs in ``folder``."""
    try:
        names = os.listdir(folder)
    except OSError:
        return []
    return sorted(int(m.group(1)) for m in map(_LOG_NAME.fullmatch, names) if m)


class Publisher:
    """The watcher's side: snapshots, and batches appended to the current snapshot's log.

    Epochs and generations go on from what the folder holds, so that a watcher started again (after a
    crash, or over its memory ceiling) never publishes a number the workers have already seen.
    """

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        head = read_header(folder)
        self.epoch = max([head[1] if head else 0] + _epochs(folder))
        self.generation = head[0] if head else 0
        if head is not None:
            self.generation = max(self.generation, _last_commit(_log_path(folder, head[1])))
        self._log: BinaryIO | None = None
        self._log_bytes = 0
        self._snapshot_bytes = 0

    def snapshot(self, rows: Iterable[Change]) -> None:
        """Publish every object as a new base. The log of this watcher's previous snapshot is sealed into
        it (the caller guarantees that the rows are that snapshot with every batch appended since); the
        first snapshot of a watcher is a new state, with a generation of its own."""
        epoch = self.epoch + 1
        log = open(_log_path(self.folder, epoch), "wb")
        sealed = self._log is not None
        if self._log is None:
            self.generation += 1
        else:
            _append(self._log, b">\t%d\n" % epoch)
            self._log.close()
        head = orjson.dumps({"generation": self.generation, "epoch": epoch}) + b"\n"
        self._snapshot_bytes = write_atomically(self.folder / STATE, _snapshot_lines(head, rows))
        for old in _epochs(self.folder):
            # The sealed log stays for the workers still reading it; older ones (and a dead watcher's) go.
            if old < epoch - (1 if sealed else 0):
                _remove(_log_path(self.folder, old))
        self.epoch, self._log, self._log_bytes = epoch, log, 0

    def append(self, changes: list[Change]) -> None:
        """One batch of changes, as the next generation (a snapshot must have been published first)."""
        if self._log is None:
            raise RuntimeError("a batch before the first snapshot")
        self.generation += 1
        body = b"".join(_line(*change) for change in changes)
        record = body + b"#\t%d\t%d\t%d\n" % (self.generation, len(body), zlib.crc32(body))
        _append(self._log, record)
        self._log_bytes += len(record)

    def compaction_due(self) -> bool:
        """Whether the log has grown enough to be folded into a new snapshot."""
        return self._log_bytes > max(MIN_COMPACT_BYTES, COMPACT_RATIO * self._snapshot_bytes)

    def close(self) -> None:
        if self._log is not None:
            self._log.close()
            self._log = None


def _snapshot_lines(head: bytes, rows: Iterable[Change]) -> Iterator[bytes]:
    yield head
    for row in rows:
        yield _line(*row)


def _append(log: BinaryIO, data: bytes) -> None:
    # A reader may see a prefix of the record (a write in progress, or a watcher killed in the middle of
    # it): its last line, the commit or the seal, says when it is whole.
    log.write(data)
    log.flush()


def _remove(path: Path) -> None:
    try:
        path.unlink()
    except FileNotFoundError:
        pass


def read_header(folder: Path) -> tuple[int, int] | None:
    """(generation, epoch) of the snapshot, or None when there is none or its first line is damaged."""
    try:
        with open(folder / STATE, "rb") as fh:
            return _header(fh.readline())
    except OSError:
        return None


def _header(line: bytes) -> tuple[int, int] | None:
    try:
        head = orjson.loads(line)
        return int(head["generation"]), int(head["epoch"])
    except (orjson.JSONDecodeError, KeyError, TypeError, ValueError):
        return None


def _last_commit(path: Path) -> int:
    """The generation of the last batch committed to the log at ``path`` (0 for none)."""
    try:
        data = path.read_bytes()
    except OSError:
        return 0
    last = 0
    for line in data.split(b"\n"):
        fields = line.split(b"\t")
        if fields[0] == b"#" and len(fields) == 4 and fields[1].isdigit():
            last = max(last, int(fields[1]))
    return last


@dataclass(frozen=True)
class Row:
    """One object of the published state; ``data`` empty for an object removed."""

    resource: str
    key: str
    version: str
    data: bytes      # the object's JSON, parsed only when needed


@dataclass(frozen=True)
class Update:
    """What a worker finds new: with ``full``, the whole state (``rows`` every object); without, the
    objects changed since the last update (the last of each, removals with empty ``data``)."""

    full: bool
    generation: int
    rows: list[Row]


class DamagedLog(Exception):
    """A committed batch whose bytes do not match its commit line (never written so by a watcher)."""


class Follower:
    """A worker's side: the snapshot once, then the log, batch by batch; the snapshot again when needed."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.epoch = 0                  # the epoch whose log is being read; 0: none (read the snapshot)
        self.generation = 0             # the generation of the last batch applied
        self._log: BinaryIO | None = None
        self._pending = b""             # bytes after the last commit read: a batch not complete yet
        self._identity: tuple[int, int] | None = None
        self._newest = 0                # the epoch of the newest snapshot seen
        self._damaged = 0               # the epoch of a damaged log: wait for a newer snapshot

    def poll(self) -> Update | None:
        """What is new since the last call (None: nothing). Raises :class:`DamagedLog` when a committed
        batch does not match its commit line; the snapshot is read again once a newer one is published."""
        self._look_at_snapshot()
        rows = self._read_log({}) if self.epoch else None
        if self.epoch and self.epoch >= self._newest:
            return Update(False, self.generation, list(rows.values())) if rows is not None else None
        # No snapshot read yet, a log no watcher will seal (a new watcher started a new epoch), or one
        # compacted away before this worker reached its end: the newest snapshot and its log.
        return self._load() if self._newest > self._damaged else None

    def rewind(self) -> None:
        """Read the whole state again at the next :meth:`poll` (what the last one returned was not applied)."""
        self.close()
        self.epoch = 0

    def close(self) -> None:
        if self._log is not None:
            self._log.close()
            self._log = None

    def _look_at_snapshot(self) -> None:
        # Before the log: a watcher seals the old log before it renames a newer snapshot into place, so the
        # seal of a snapshot seen here is in the log read next.
        try:
            st = os.stat(self.folder / STATE)
        except OSError:
            return
        if (st.st_ino, st.st_mtime_ns) != self._identity:
            head = read_header(self.folder)
            if head is not None:
                self._identity = (st.st_ino, st.st_mtime_ns)
                self._newest = max(self._newest, head[1])

    def _load(self) -> Update | None:
        """The snapshot and its log. A compaction between the two reads (the log gone) starts over."""
        for _ in range(3):
            try:
                with open(self.folder / STATE, "rb") as fh:
                    head = _header(fh.readline())
                    if head is None:
                        return None
                    log = open(_log_path(self.folder, head[1]), "rb")
                    body = fh.read()
            except FileNotFoundError:
                continue
            rows: dict[tuple[str, str], Row] = {}
            for line in body.split(b"\n"):
                row = _row(line) if line else None
                if row is not None:
                    rows[(row.resource, row.key)] = row
            self.close()
            self._log, self._pending = log, b""
            self.generation, self.epoch = head
            self._newest = max(self._newest, self.epoch)
            self._read_log(rows)
            return Update(True, self.generation, [row for row in rows.values() if row.data])
        return None

    def _read_log(self, rows: dict[tuple[str, str], Row]) -> dict[tuple[str, str], Row] | None:
        """Apply the committed batches after the position to ``rows``, following seals into the next
        epochs; None when there was none."""
        found = False
        while self._log is not None:
            data = self._pending + self._log.read()
            batch: list[Row] = []
            start = cursor = 0            # where the batch being read begins; where the next line does
            next_epoch = 0
            while (end := data.find(b"\n", cursor)) >= 0:
                line = data[cursor:end]
                if line.startswith(b"#\t"):
                    self._commit(line, data[start:cursor], batch, rows)
                    found, batch, start = True, [], end + 1
                elif line.startswith(b">\t"):
                    next_epoch, start = int(line[2:]), end + 1
                    break
                else:
                    row = _row(line)
                    if row is None:
                        self._damage(f"a line of log.{self.epoch} is not an object")
                    batch.append(row)
                cursor = end + 1
            # Records after the last commit stay for the next read: the rest of their batch is still to come.
            self._pending = data[start:]
            if not next_epoch:
                break
            self.close()
            self.epoch, self._pending = next_epoch, b""
            try:
                self._log = open(_log_path(self.folder, next_epoch), "rb")
            except FileNotFoundError:
                self.epoch = 0           # compacted away meanwhile: the snapshot again
        return rows if found else None

    def _commit(self, line: bytes, body: bytes, batch: list[Row], rows: dict[tuple[str, str], Row]) -> None:
        try:
            generation, length, crc = (int(part) for part in line.split(b"\t")[1:4])
        except ValueError:
            self._damage(f"a commit line of log.{self.epoch} is damaged")
        if length != len(body) or crc != zlib.crc32(body):
            self._damage(f"a batch of log.{self.epoch} does not match its commit line")
        for row in batch:
            rows[(row.resource, row.key)] = row
        self.generation = generation

    def _damage(self, message: str) -> NoReturn:
        self._damaged = max(self._newest, self.epoch)
        self.close()
        self.epoch = 0
        raise DamagedLog(message)


def _row(line: bytes) -> Row | None:
    parts = line.split(b"\t", 3)
    if len(parts) != 4:
        return None
    return Row(parts[0].decode(), parts[1].decode(), parts[2].decode(), parts[3])
