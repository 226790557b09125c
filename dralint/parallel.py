"""``-j N``: read and pre-judge files in N worker processes, then judge the whole input here.

Cross-object rules (references, feasibility) need every object at once, so the verdict is always
one ``engine.lint_files`` call over all files, in this process, exactly as a serial run makes it:
the output is the serial output by construction, in the same order.

What the workers take off this process is the per-file work, the bulk of a large run: reading and
parsing each file, and judging it alone once. That lone judgement's findings are thrown away; it
is run for the caches it fills on the file's documents (the file:line:column index of every
document with a finding, which costs a second parse), which travel back with the parsed file and
spare the final judgement that work.
"""
from __future__ import annotations

import os
from concurrent.futures import ProcessPoolExecutor
from dataclasses import replace
from itertools import repeat
from typing import Sequence, TextIO

from . import engine, source
from .engine import Options, RunResult
from .progress import ProgressBar, worth_showing
from .source import SourceFile

STDIN = "-"
BATCHES_PER_WORKER = 4  # enough to balance uneven files and move the progress bar


def lint_paths(paths: Sequence[str], options: Options, *, jobs: int = 1,
               progress: TextIO | None = None) -> tuple[RunResult, list[SourceFile]]:
    """``engine.lint_paths`` with the linted files read in ``jobs`` processes; also returns the files.

    ``progress`` is the stream for a progress bar, drawn only when it is a terminal and the input
    is large.
    """
    found, problems = source.discover(list(paths) or ["."])
    bar = ProgressBar(progress, len(found)) if progress is not None and worth_showing(found, progress) else None
    try:
        files = load_files(found, options, jobs, bar)
        cluster_found, cluster_problems = source.discover(list(options.cluster)) if options.cluster else ([], [])
        old_found, old_problems = source.discover([options.old]) if options.old else ([], [])
        if bar:
            bar.update(len(found), "checking")
        result = engine.lint_files(files, options, cluster_files=[source.load_file(p) for p in cluster_found],
                                   old_files=[source.load_file(p) for p in old_found],
                                   discovery_problems=problems + old_problems + cluster_problems)
    finally:
        if bar:
            bar.close()
    return result, files


def load_files(paths: Sequence[str], options: Options, jobs: int, bar: ProgressBar | None = None) -> list[SourceFile]:
    """The files of ``paths`` read (and, with several jobs, pre-judged), in the order given."""
    workers = min(effective_jobs(jobs), sum(p != STDIN for p in paths))
    if workers <= 1:
        files = []
        for done, path in enumerate(paths, start=1):
            files.append(source.load_file(path))
            if bar:
                bar.update(done)
        return files
    # stdin belongs to this process; everything else goes to the pool, a few batches per worker:
    # a judgement has a fixed cost per call, so a batch is judged in one call, not file by file.
    pooled = [p for p in paths if p != STDIN]
    size = max(1, -(-len(pooled) // (workers * BATCHES_PER_WORKER)))
    batches = [pooled[i:i + size] for i in range(0, len(pooled), size)]
    loaded: dict[str, SourceFile] = {}
    with ProcessPoolExecutor(max_workers=workers) as pool:
        # map() yields in the order of the batches, whichever worker finishes first.
        for batch, files in zip(batches, pool.map(_prepare, batches, repeat(options)), strict=True):
            loaded.update(zip(batch, files, strict=True))
            if bar:
                bar.update(len(loaded))
    return [loaded[p] if p != STDIN else source.load_file(p) for p in paths]


def effective_jobs(jobs: int) -> int:
    """``-j 0`` means one job per CPU."""
    return jobs if jobs > 0 else (os.cpu_count() or 1)


def _prepare(paths: list[str], options: Options) -> list[SourceFile]:
    """Worker: read a batch of files and judge them, to fill their documents' caches (findings discarded)."""
    loaded = [source.load_file(path) for path in paths]
    # Feasibility is decided on the whole input only; a zero time budget stops this partial
    # search at once instead of allocating claims against a part of the slices for nothing.
    engine.lint_files(loaded, replace(options, max_seconds=0.0))
    return loaded
