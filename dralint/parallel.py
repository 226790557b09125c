"""``-j N``: the command's run spread over up to N processes, and a progress bar.

The workers are forked before anything is read, and every process reads every file itself;
each then judges its own runs of objects against the index of all of them, so rules that look
across objects see everything, and only findings travel back to the main process. The main
process reports everything about the run as a whole (reading problems, objects not served,
feasibility, suppressions).

Why not read once and share: on this project's 2-CPU machine both ways of sharing cost as much
as they saved. Forking after reading makes every page a judge touches a copy-on-write fault
(13,000 to 22,000 faults per process, as slow as judging twice); sending parsed files between
processes costs a pickle and an unpickle of half the corpus each way. Reading everything twice
runs on the otherwise idle CPU, and each process's memory is its own.

The output equals ``-j 1``'s byte for byte; a worker that fails has its objects judged in the
main process. Small inputs stay in one process (``BYTES_PER_WORKER``), and at most
``MAX_PROCESSES`` read the same files: each holds the whole parsed input.
"""
from __future__ import annotations

import multiprocessing
import os
from typing import Any, Sequence, TextIO

from . import engine, source
from .engine import Options, RunResult, Split
from .findings import Finding
from .progress import ProgressBar, worth_showing
from .source import SourceFile

# Judging a mebibyte of manifests takes about 70 ms, a worker about 20 ms to start and to build
# its index: below this much input per process, a worker costs more than it saves.
BYTES_PER_WORKER = 1024 * 1024
MAX_PROCESSES = 4


def lint_paths(paths: Sequence[str], options: Options, *, jobs: int = 1,
               progress: TextIO | None = None) -> tuple[RunResult, list[SourceFile]]:
    """``engine.lint_paths`` in up to ``jobs`` processes (0: one per CPU); also returns the files.

    ``progress`` is the stream for a progress bar, drawn only when it is a terminal and the input
    is large.
    """
    found, problems = source.discover(list(paths) or ["."])
    bar = ProgressBar(progress, len(found)) if progress is not None and worth_showing(found, progress) else None
    cluster_files, old_files, context_problems = engine.read_context(options)
    # Standard input can be read once: here, before forking (the workers inherit it).
    stdin = {i: source.load_file(path) for i, path in enumerate(found) if path == "-"}
    size = min(effective_jobs(jobs), MAX_PROCESSES, max(1, sum(map(_size, found)) // BYTES_PER_WORKER))
    if "fork" not in multiprocessing.get_all_start_methods():
        size = 1
    workers = [_start(rank, size, found, stdin, options, cluster_files, old_files) for rank in range(1, size)]
    try:
        files = _read_all(found, stdin, bar)
        if bar:
            bar.update(len(found), "checking")
        split = Split(0, size, lambda: _findings(workers)) if workers else None
        result = engine.lint_files(files, options, cluster_files=cluster_files, old_files=old_files,
                                   discovery_problems=list(problems) + context_problems, split=split)
    finally:
        for _, connection, process in workers:
            connection.close()
            process.join()
        if bar:
            bar.close()
    return result, files


def _start(rank: int, size: int, paths: Sequence[str], stdin: dict[int, SourceFile], options: Options,
           cluster_files: list[Any], old_files: list[Any]) -> tuple[int, Any, Any]:
    context = multiprocessing.get_context("fork")
    here, there = context.Pipe(duplex=False)
    process = context.Process(target=_worker, args=(there, rank, size, paths, stdin, options, cluster_files,
                                                    old_files))
    process.start()
    there.close()
    return rank, here, process


def _worker(connection: Any, rank: int, size: int, paths: Sequence[str], stdin: dict[int, SourceFile],
            options: Options, cluster_files: list[Any], old_files: list[Any]) -> None:
    """Read every file, judge this rank's objects, send the findings."""
    files = _read_all(paths, stdin, None)
    connection.send(engine.judge_share(files, options, rank, size, cluster_files=cluster_files, old_files=old_files))
    connection.close()


def _findings(workers: list[tuple[int, Any, Any]]) -> tuple[list[Finding], frozenset[int]]:
    """The workers' findings, and the ranks of those that sent none (they failed)."""
    findings: list[Finding] = []
    failed: set[int] = set()
    for rank, connection, _ in workers:
        try:
            received = connection.recv()
        except (EOFError, OSError):
            received = None
        if isinstance(received, list):
            findings.extend(received)
        else:
            failed.add(rank)
    return findings, frozenset(failed)


def _read_all(paths: Sequence[str], stdin: dict[int, SourceFile], bar: ProgressBar | None) -> list[SourceFile]:
    files = []
    for i, path in enumerate(paths):
        files.append(stdin[i] if i in stdin else source.load_file(path))
        if bar:
            bar.update(i + 1)
    return files


def _size(path: str) -> int:
    try:
        return os.path.getsize(path) if path != "-" else 0
    except OSError:  # the reader reports it
        return 0


def effective_jobs(jobs: int) -> int:
    """``-j 0`` means one job per CPU."""
    return jobs if jobs > 0 else (os.cpu_count() or 1)
