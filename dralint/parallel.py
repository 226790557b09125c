"""``-j N``: the command's run spread over up to N processes, and a progress bar.

The workers are forked before anything is read. Each process reads a share of the files
(balanced by size; stdin stays in the main process) and the shares are exchanged through the
main process (``source.transfer``: values as orjson text), so that every process holds every
file, parsed in its own memory. Each then judges runs of objects against the index of all of
them, taking the next run not yet taken (a shared counter) until none is left, so rules that
look across objects see everything, and only findings travel back to the main process, which
also reports everything about the run as a whole (reading problems, objects not served,
feasibility, suppressions) and first builds the feasibility stage's fleet view (engine/run.py).

Why this way: forking judges after reading made every memory page they touched a
copy-on-write fault (13,000 to 22,000 per process on this project's 2-CPU machine, as slow as
judging twice), and pickled parsed files cost as much to send as to parse. Receiving a share
packed by ``source.transfer`` costs a fifth of reading it.

The output equals ``-j 1``'s byte for byte. A worker that fails has its share read, and the
objects it did not deliver judged, in the main process. Small inputs stay in one process (``BYTES_PER_WORKER``),
and at most ``MAX_PROCESSES`` take part: each holds the whole parsed input.
"""
from __future__ import annotations

import os
import pickle
from dataclasses import dataclass, replace
from typing import Any, Sequence, TextIO

from . import engine, source
from .engine import RunResult, Split
from .options import Options
from .findings import Finding
from .progress import ProgressBar, worth_showing
from .shared_counter import Counter, new_counter
from .source import SourceFile, transfer

# Judging a mebibyte of manifests takes about 70 ms, a worker about 20 ms to start and to build
# its index: below this much input per process, a worker costs more than it saves.
BYTES_PER_WORKER = 1024 * 1024
MAX_PROCESSES = 4


def lint_paths(paths: Sequence[str], options: Options, *, jobs: int = 1, progress: TextIO | None = None,
               cluster_files: Sequence[SourceFile] = ()) -> tuple[RunResult, list[SourceFile]]:
    """``engine.lint_paths`` in up to ``jobs`` processes (0: one per CPU); also returns the files.

    ``progress`` is the stream for a progress bar, drawn only when it is a terminal and the input
    is large. ``cluster_files`` are cluster state beside ``options.cluster``'s (listed live, not read).
    """
    # The feasibility stage forks its own processes once the fleet view is built (feasibility/shards.py).
    options = replace(options, jobs=min(effective_jobs(jobs), MAX_PROCESSES))
    planned = source.plan(list(paths) or ["."], options.reading)
    found, problems = planned.files, planned.problems
    bar = ProgressBar(progress, len(found)) if progress is not None and worth_showing(found, progress) else None
    read_cluster, old_files, context_problems = engine.read_context(options)
    cluster_files = list(cluster_files) + read_cluster
    sizes = [_size(path) for path in found]
    size = max(1, min(effective_jobs(jobs), MAX_PROCESSES, len(found), sum(sizes) // BYTES_PER_WORKER))
    if size > 1:
        import multiprocessing   # 15 ms of imports (sockets, pickling), paid by the runs that fork

        if "fork" not in multiprocessing.get_all_start_methods() or len(set(found)) != len(found):
            size = 1
    shares = _balanced_shares(sizes, size, stay=[i for i, path in enumerate(found) if path == "-"])
    counter = new_counter() if len(shares) > 1 else None  # the next run of objects to judge (engine.Split)
    workers = [_start(rank, shares, planned, options, cluster_files, old_files, counter)
               for rank in range(1, len(shares))]
    try:
        files = _exchange(planned, options.reading, shares, workers, bar)
        if bar:
            bar.update(len(found), "checking")
        split = Split(counter, lambda: _findings(workers)) if counter is not None else None
        result = engine.lint_files(files, options, cluster_files=cluster_files, old_files=old_files,
                                   discovery_problems=list(problems) + context_problems, split=split)
    finally:
        for worker in workers:
            worker.connection.close()
            worker.process.join()
        if bar:
            bar.close()
    return result, files


@dataclass
class _Worker:
    rank: int
    connection: Any
    process: Any
    packed: bytes | None = None  # its share as it sent it; None: it failed, and is done here


def _start(rank: int, shares: list[list[int]], planned: source.Plan, options: Options,
           cluster_files: list[Any], old_files: list[Any], counter: Counter | None) -> _Worker:
    import multiprocessing

    context = multiprocessing.get_context("fork")
    here, there = context.Pipe(duplex=True)
    process = context.Process(target=_worker, args=(there, rank, shares, planned, options, cluster_files,
                                                    old_files, counter))
    process.start()
    there.close()
    return _Worker(rank, here, process)


def _exchange(planned: source.Plan, reading: source.Reading, shares: list[list[int]], workers: list[_Worker],
              bar: ProgressBar | None) -> list[SourceFile]:
    """Every file: this process's share read here, the others received; and each worker is sent
    the shares it lacks."""
    paths = planned.files
    files = dict(zip(shares[0], _read(shares[0], planned, reading, bar)))
    for worker in workers:
        share = shares[worker.rank]
        try:
            worker.packed = worker.connection.recv_bytes()
            received = transfer.unpack(worker.packed)
        except (EOFError, OSError, pickle.UnpicklingError):
            received = []
        if len(received) != len(share):
            worker.packed, received = None, _read(share, planned, reading, None)
        files.update(zip(share, received))
        if bar:
            bar.update(len(files))
    alive = [w for w in workers if w.packed is not None]
    elsewhere = {i for w in alive for i in shares[w.rank]}
    here = [i for i in range(len(paths)) if i not in elsewhere]
    # Packed only for someone to send it to: a run read in one process would hold the copy for nothing.
    packed_here = transfer.pack([files[i] for i in here]) if alive else b""
    for worker in alive:
        try:
            worker.connection.send([(here, packed_here)] + [(shares[w.rank], w.packed) for w in alive
                                                            if w is not worker])
        except OSError:
            worker.packed = None
    return [files[i] for i in range(len(paths))]


def _worker(connection: Any, rank: int, shares: list[list[int]], planned: source.Plan,
            options: Options, cluster_files: list[Any], old_files: list[Any], counter: Counter) -> None:
    """Read a share, send it, receive the others, judge the runs of objects it takes, send the findings."""
    paths = planned.files
    own = _read(shares[rank], planned, options.reading, None)
    connection.send_bytes(transfer.pack(own))
    files = dict(zip(shares[rank], own))
    for share, packed in connection.recv():
        files.update(zip(share, transfer.unpack(packed)))
    connection.send(engine.judge_share([files[i] for i in range(len(paths))], options, counter,
                                       cluster_files=cluster_files, old_files=old_files))
    connection.close()


def _findings(workers: list[_Worker]) -> tuple[list[Finding], frozenset[int]]:
    """The workers' findings, and the runs of objects they judged (none of one that failed)."""
    findings: list[Finding] = []
    delivered: set[int] = set()
    for worker in workers:
        received = None
        if worker.packed is not None:
            try:
                received = worker.connection.recv()
            except (EOFError, OSError, pickle.UnpicklingError):
                received = None
        if isinstance(received, tuple) and len(received) == 2:
            findings.extend(received[0])
            delivered.update(received[1])
    return findings, frozenset(delivered)


def _read(share: Sequence[int], planned: source.Plan, reading: source.Reading,
          bar: ProgressBar | None) -> list[SourceFile]:
    files = []
    for n, i in enumerate(share, start=1):
        path = planned.files[i]
        files.append(source.load_file(path, reading.max_bytes, planned.skip.get(path, "")))
        if bar:
            bar.update(n)
    return files


def _balanced_shares(sizes: list[int], processes: int, stay: list[int]) -> list[list[int]]:
    """File indexes per process, largest first to the lightest share; ``stay`` (stdin) in the first."""
    shares: list[list[int]] = [list(stay)] + [[] for _ in range(processes - 1)]
    loads = [sum(sizes[i] for i in stay)] + [0] * (processes - 1)
    for i in sorted((i for i in range(len(sizes)) if i not in stay), key=lambda i: -sizes[i]):
        lightest = loads.index(min(loads))
        shares[lightest].append(i)
        loads[lightest] += sizes[i]
    return [sorted(share) for share in shares if share] or [[]]


def _size(path: str) -> int:
    try:
        return os.path.getsize(path) if path != "-" else 0
    except OSError:  # the reader reports it
        return 0


def effective_jobs(jobs: int) -> int:
    """``-j 0`` means one job per CPU."""
    return jobs if jobs > 0 else (os.cpu_count() or 1)
