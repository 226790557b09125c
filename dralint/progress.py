"""A progress bar on stderr for long runs: only on a terminal, only when the input is large."""
from __future__ import annotations

import os
from typing import Sequence, TextIO

# "Large": enough files or bytes that a silent terminal would look stuck for a few seconds.
MIN_FILES = 50
MIN_BYTES = 4 * 1024 * 1024
WIDTH = 30


def worth_showing(paths: Sequence[str], stream: TextIO) -> bool:
    """Whether a run over ``paths`` should draw a bar on ``stream``."""
    if not stream.isatty() or os.environ.get("TERM") == "dumb":
        return False
    if len(paths) >= MIN_FILES:
        return True
    total = 0
    for path in paths:
        try:
            total += os.path.getsize(path)
        except OSError:  # stdin, or a file that vanished: the reader reports it
            continue
    return total >= MIN_BYTES


class ProgressBar:
    """``[#####.....]  37/100 files  reading`` redrawn in place; erased when closed."""

    def __init__(self, stream: TextIO, total: int) -> None:
        self.stream = stream
        self.total = max(total, 1)

    def update(self, done: int, stage: str = "reading") -> None:
        """Redraw with ``done`` of the total items finished."""
        filled = WIDTH * min(done, self.total) // self.total
        bar = "#" * filled + "." * (WIDTH - filled)
        self.stream.write(f"\r[{bar}] {done:>{len(str(self.total))}}/{self.total} files  {stage}\033[K")
        self.stream.flush()

    def close(self) -> None:
        """Erase the bar so the report starts on a clean line."""
        self.stream.write("\r\033[K")
        self.stream.flush()
