"""A worker near its memory ceiling: its caches go first, and if that is not enough, the worker.

:func:`memory_guard` gives the webhook's :class:`~.guard.Guard` its two ways out (the guard says
when). :meth:`Relief.relieve` drops every cache the worker rebuilds on demand: the engine's memos of
caller data (``dralint.caches``) and the feasibility fleet view's (selector answers, counts, node
sets). A worker that stays over its ceiling after that retires (:meth:`Relief.retire`): it sends
itself SIGTERM, gunicorn's graceful stop (no new connections, what is in flight finished and
answered), and the master starts a fresh worker in its place. Two workers of a replica never
retire at once (:class:`Retirement`): the retiring one holds a lock on a file of the replica's run
folder until it exits (the kernel releases it however the process ends), and the next may only
retire ``RETIRE_SPACING_SECONDS`` after the last began, so that its replacement is serving first.
Both are logged and counted (``dralint_webhook_cache_drops_total``,
``dralint_webhook_worker_retirements_total``).
"""
from __future__ import annotations

import fcntl
import logging
import os
import signal
import time
from typing import Callable

from dralint import caches

from .cluster import ClusterState
from .guard import Dropped, Guard, resident_bytes
from .logs import LOGGER, log
from .metrics import Metrics

_log = logging.getLogger(LOGGER)
# After a worker of the replica began to retire, another may only this long after: the first one's
# drain (gunicorn's graceful timeout) and its replacement's start (its view of the cluster) come first.
RETIRE_SPACING_SECONDS = 30.0
# Drops come in runs while the memory stays high: one log line per this many seconds says how many.
LOG_SECONDS = 10.0


def memory_guard(max_rss: int, retire_lock: str | None, loaded_cluster: Callable[[], ClusterState | None],
                 metrics: Metrics) -> Guard:
    """The guard of a worker's reviews: its memory ceiling ``max_rss``, the caches dropped near it (the
    engine's and those of the cluster state ``loaded_cluster`` gives), and (with a lock file, in a
    server's workers) retirement."""
    relief = Relief(max_rss, loaded_cluster, metrics, Retirement(retire_lock) if retire_lock else None)
    return Guard(max_rss, relieve=relief.relieve, retire=relief.retire if relief.retirement else None)


class Relief:
    """What the guard of a worker calls: :meth:`relieve` and :meth:`retire`, logged and counted.

    It is handed the webhook's parts it needs rather than the webhook, which builds it."""

    def __init__(self, max_rss: int, loaded_cluster: Callable[[], ClusterState | None], metrics: Metrics,
                 retirement: "Retirement | None") -> None:
        self.max_rss = max_rss
        self.loaded_cluster = loaded_cluster
        self.metrics = metrics
        self.retirement = retirement
        self._logged_at = float("-inf")
        self._unlogged = (0, 0)         # drops and bytes freed since the last log line

    def relieve(self) -> Dropped:
        """Drop the engine's caches and the fleet view's. Not complete while reviews hold the fleet
        view: a thread waits for it, and the guard asks again."""
        freed = caches.drop_caches()
        state = self.loaded_cluster()
        fleet = state.fleet if state is not None else None
        dropped = fleet.drop_caches() if fleet is not None else 0
        freed += dropped or 0
        if freed:
            self.metrics.count("cache_drops")
            self._log_drop(freed)
        return Dropped(freed, dropped is not None)

    def _log_drop(self, freed: int) -> None:
        drops, total = self._unlogged[0] + 1, self._unlogged[1] + freed
        now = time.monotonic()
        if now - self._logged_at < LOG_SECONDS:
            self._unlogged = (drops, total)
            return
        self._logged_at, self._unlogged = now, (0, 0)
        log(_log, logging.WARNING, "memory near the ceiling: caches dropped", drops=drops, freed_bytes=total,
            resident_bytes=resident_bytes(), max_bytes=self.max_rss)

    def retire(self) -> bool:
        """Retire this worker, unless another worker of the replica is retiring."""
        assert self.retirement is not None
        if not self.retirement.begin():
            log(_log, logging.WARNING, "memory still over the ceiling after dropping caches; another worker is "
                "retiring, so this one keeps serving for now", resident_bytes=resident_bytes(),
                max_bytes=self.max_rss)
            return False
        self.metrics.count("retirements")
        log(_log, logging.ERROR, "memory still over the ceiling after dropping caches: worker retiring (it "
            "finishes what is in flight; gunicorn starts a fresh one)", resident_bytes=resident_bytes(),
            max_bytes=self.max_rss)
        self.retirement.stop()
        return True


class Retirement:
    """The replica's one-at-a-time retirement, through ``lock_file`` (in the run folder the workers
    share); ``stop`` ends this worker gracefully (SIGTERM to itself: gunicorn's stop)."""

    def __init__(self, lock_file: str, spacing: float = RETIRE_SPACING_SECONDS,
                 stop: Callable[[], None] = lambda: os.kill(os.getpid(), signal.SIGTERM)) -> None:
        self.lock_file = lock_file
        self.spacing = spacing
        self.stop = stop
        self._fd: int | None = None     # held until the process exits

    def begin(self) -> bool:
        """Take the replica's retirement: True when this worker may retire now (and keeps the lock
        until it exits), False while another worker holds it or retired less than ``spacing`` ago."""
        if self._fd is not None:
            return True
        fd = os.open(self.lock_file, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:     # another worker is retiring
            os.close(fd)
            return False
        now = time.monotonic()      # one clock for every process of the machine
        if now - _began(os.pread(fd, 64, 0)) < self.spacing:
            os.close(fd)            # closing releases the lock
            return False
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{now!r} {os.getpid()}\n".encode(), 0)   # exact: a rounded-up time would lie ahead
        self._fd = fd
        return True


def _began(text: bytes) -> float:
    """When the last retirement began, as its lock file says (-inf: none, or unreadable)."""
    try:
        return float(text.split()[0])
    except (IndexError, ValueError):
        return float("-inf")
