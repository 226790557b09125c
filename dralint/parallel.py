"""``-j N``: the command's run, with files read and objects judged in N processes, and a progress bar.

Two parallel phases, both with forked workers:

* reading: each worker parses a share of the files and sends the parsed files back (pickled); this
  process reads a share too. Reading is about a third of a large run, and unpickling costs a fifth
  of parsing.
* judging: the engine gives workers shares of the objects; they inherit the whole index, so
  cross-object rules see everything, and only findings travel back.

Feasibility, which needs all claims at once, runs once, here. The output equals a serial run's,
byte for byte; a worker that fails has its share done here. Small inputs stay in one process,
where a worker would cost more than it saves.
"""
from __future__ import annotations

import multiprocessing
import os
from dataclasses import replace
from typing import Any, Sequence, TextIO

from . import engine, source
from .engine import Options, RunResult
from .progress import ProgressBar, worth_showing
from .source import SourceFile


def lint_paths(paths: Sequence[str], options: Options, *, jobs: int = 1,
               progress: TextIO | None = None) -> tuple[RunResult, list[SourceFile]]:
    """``engine.lint_paths`` with the objects judged in ``jobs`` processes; also returns the files.

    ``progress`` is the stream for a progress bar, drawn only when it is a terminal and the input
    is large.
    """
    found, problems = source.discover(list(paths) or ["."])
    bar = ProgressBar(progress, len(found)) if progress is not None and worth_showing(found, progress) else None
    try:
        files = load_files(found, bar, effective_jobs(jobs))
        cluster_files, old_files, context_problems = engine.read_context(options)
        if bar:
            bar.update(len(found), "checking")
        result = engine.lint_files(files, replace(options, jobs=effective_jobs(jobs)), cluster_files=cluster_files,
                                   old_files=old_files, discovery_problems=list(problems) + context_problems)
    finally:
        if bar:
            bar.close()
    return result, files


# Below this much text per process, forking a reader costs more than it saves (a worker starts in
# about 10 ms; a mebibyte takes about 70 ms to parse).
READ_BYTES_PER_WORKER = 1024 * 1024


def load_files(paths: Sequence[str], bar: ProgressBar | None = None, jobs: int = 1) -> list[SourceFile]:
    """The files of ``paths`` read in the order given, in up to ``jobs`` processes."""
    sizes = [_size(path) for path in paths]
    workers = min(jobs, len(paths), sum(sizes) // READ_BYTES_PER_WORKER)
    if workers <= 1 or "fork" not in multiprocessing.get_all_start_methods():
        return _read_share(list(range(len(paths))), paths, bar, 0)
    shares = _balanced_shares(sizes, workers, stay=[i for i, p in enumerate(paths) if p == "-"])
    context = multiprocessing.get_context("fork")
    running = []
    for share in shares[1:]:
        receive, send = context.Pipe(duplex=False)
        process = context.Process(target=_read_in_worker, args=(send, share, paths))
        process.start()
        send.close()
        running.append((share, receive, process))
    files: dict[int, SourceFile] = dict(zip(shares[0], _read_share(shares[0], paths, bar, 0)))
    for share, receive, process in running:
        try:
            received: Any = receive.recv()
        except (EOFError, OSError):
            received = None
        process.join()
        if not isinstance(received, list) or len(received) != len(share):
            received = _read_share(share, paths, None, 0)
        files.update(zip(share, received))
        if bar:
            bar.update(len(files))
    return [files[i] for i in range(len(paths))]


def _read_share(share: list[int], paths: Sequence[str], bar: ProgressBar | None, done: int) -> list[SourceFile]:
    files = []
    for n, i in enumerate(share, start=done + 1):
        files.append(source.load_file(paths[i]))
        if bar:
            bar.update(n)
    return files


def _read_in_worker(send: Any, share: list[int], paths: Sequence[str]) -> None:
    """Worker: parse a share of the files and send them back."""
    send.send(_read_share(share, paths, None, 0))
    send.close()


def _balanced_shares(sizes: list[int], workers: int, stay: list[int]) -> list[list[int]]:
    """File indexes per process, largest first to the lightest share; ``stay`` (stdin) in the first."""
    shares: list[list[int]] = [list(stay)] + [[] for _ in range(workers - 1)]
    loads = [sum(sizes[i] for i in stay)] + [0] * (workers - 1)
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
