"""Work that the workers of a replica take turns at: one at a time, through a lock file.

Re-reading a large cluster state from files costs a worker seconds of CPU, and every worker does
it for itself. Done by all at once, they compete for the replica's cores and every review waits;
taken in turns, one worker at a time is slower to serve the new state while the others answer at
full speed. The lock is an ``flock`` on a file of the replica's run folder: the kernel releases it
however its holder ends.
"""
from __future__ import annotations

import fcntl
import os
from contextlib import contextmanager
from typing import Iterator


@contextmanager
def turn(lock_file: str | None) -> Iterator[None]:
    """Run the body while holding ``lock_file`` (waiting for it first); None: no turns, run at once."""
    if lock_file is None:
        yield
        return
    fd = os.open(lock_file, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)    # closing releases the lock
