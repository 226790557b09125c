"""``-j N``: the command's run, with the objects judged in N processes and a progress bar.

Reading stays in this process (on a large run it is a tenth of the time), then the engine judges
shares of the objects in forked workers that inherit the whole index, so cross-object rules see
everything, and only findings travel back; the output equals a serial run's (sorted the same).
Feasibility, which needs all claims at once, runs once, here.
"""
from __future__ import annotations

import os
from dataclasses import replace
from typing import Sequence, TextIO

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
        files = load_files(found, bar)
        cluster_files, old_files, context_problems = engine.read_context(options)
        if bar:
            bar.update(len(found), "checking")
        result = engine.lint_files(files, replace(options, jobs=effective_jobs(jobs)), cluster_files=cluster_files,
                                   old_files=old_files, discovery_problems=list(problems) + context_problems)
    finally:
        if bar:
            bar.close()
    return result, files


def load_files(paths: Sequence[str], bar: ProgressBar | None = None) -> list[SourceFile]:
    """The files of ``paths`` read in the order given, moving the progress bar."""
    files = []
    for done, path in enumerate(paths, start=1):
        files.append(source.load_file(path))
        if bar:
            bar.update(done)
    return files


def effective_jobs(jobs: int) -> int:
    """``-j 0`` means one job per CPU."""
    return jobs if jobs > 0 else (os.cpu_count() or 1)
