"""Bounded work per review: a deadline below the webhook's timeout, and a ceiling on the worker's memory.

Judging is CPU-bound Python running in a worker's thread; nothing outside the thread can stop it
but the interpreter. A watchdog thread per worker process looks at the reviews in flight every
``interval``: a review past its deadline gets an exception raised in its thread
(``PyThreadState_SetAsyncExc``, the interpreter's own way of interrupting a thread). It arrives
within a few bytecodes wherever the review is (engine, CEL, allocator), is a ``BaseException`` so
that no ``except Exception`` in the engine turns it into a finding, and the request answers it
per the policy's ``onInternalError``. Code in C is not interrupted (a regular expression runs to
its end): none of dralint's is unbounded (RE2 is linear).

Memory goes back before any review is stopped for it. From ``DROP_AT`` of the ceiling on, the
caches are dropped (``relieve``: the engine's and the webhook's, all worked out again on demand),
the garbage collected and freed memory returned to the system, so that a review's passing needs
find room below the ceiling; they are dropped again each time the memory grows further
(``DROP_STEP``: freed memory is reused without growing the process, and caches refilling it need
no drop). Over the ceiling itself they are dropped at every look, and only a worker still over it
after that stops the reviews in flight, as above. While a cache is in use (reviews hold the fleet
view; a thread waits for it and drops them), reviews are not stopped for memory for up to
``CACHE_WAIT_SECONDS``. A worker that stays over its ceiling (``RETIRE_AFTER_SECONDS``) asks to be
retired (``retire``: the webhook stops it gracefully, one worker of the replica at a time, and
gunicorn starts a fresh one).

Registration and delivery share a lock, and a review that ends clears any exception still pending
for its thread, so an exception never escapes the review it was meant for.
"""
from __future__ import annotations

import ctypes
import gc
import os
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Callable, Iterator

_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096
# The caches are dropped from this share of the ceiling on: the rest is room for reviews in flight.
DROP_AT = 0.9
# Between DROP_AT and the ceiling, dropped again when the memory grew by this share of the ceiling.
DROP_STEP = 1 / 64
# Over the ceiling, a full garbage collection runs at most this often unless the dropped caches held
# a good part of it (a collection of a large heap takes a tenth of a second; the watchdog looks every 20 ms).
COLLECT_SECONDS = 1.0
# A cache in use (reviews hold the fleet view) is waited for this long before reviews are stopped.
CACHE_WAIT_SECONDS = 1.2
# Over the ceiling this long after the caches were dropped: the worker asks to be retired.
RETIRE_AFTER_SECONDS = 2.0


@dataclass(frozen=True)
class Dropped:
    """What ``relieve`` did: the bytes the dropped caches held (estimated), and whether every cache
    was dropped (False: one was in use, and is tried again at the next look)."""

    freed: int
    complete: bool = True


class ReviewAborted(BaseException):
    """A review stopped by the guard; the subclass says why."""

    reason = "aborted"


class ReviewTimedOut(ReviewAborted):
    reason = "not judged within the webhook's deadline"


class ReviewOverMemory(ReviewAborted):
    reason = "stopped: the worker's memory went over its ceiling"


@dataclass
class _Entry:
    thread: int
    deadline: float
    memory: bool = True         # stopped over the memory ceiling too
    done: bool = False
    fired: bool = False


def resident_bytes() -> int:
    """This process's resident memory (Linux ``/proc/self/statm``; 0 where there is none)."""
    try:
        with open("/proc/self/statm", "rb") as fh:
            return int(fh.read().split()[1]) * _PAGE
    except (OSError, ValueError, IndexError):
        return 0


def _raise_in(thread: int, exc: type[BaseException] | None) -> None:
    ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(thread), ctypes.py_object(exc) if exc else None)


class Guard:
    """The reviews in flight in this process, and the watchdog that stops the ones over their bounds.

    ``relieve``: drops the caches when the memory is over ``max_rss``; ``retire``: asks for this
    worker to be retired gracefully, True once that has begun (False: not now, asked again later).
    ``rss``: reads the resident memory (tests give their own)."""

    def __init__(self, max_rss: int = 0, interval: float = 0.02, *, relieve: Callable[[], Dropped] | None = None,
                 retire: Callable[[], bool] | None = None, rss: Callable[[], int] = resident_bytes) -> None:
        self.max_rss = max_rss          # bytes; 0: no memory ceiling
        self.interval = interval
        self._relieve = relieve
        self._retire = retire
        self._rss = rss
        self._lock = threading.Lock()
        self._entries: dict[int, _Entry] = {}
        self._watchdog: threading.Thread | None = None
        self._pid = 0
        self.fired = {"deadline": 0, "memory": 0}
        self._collected_at = float("-inf")
        self._dropped_at: int | None = None        # the memory after the last drop below the ceiling
        self._waiting_since: float | None = None   # over the ceiling with a cache in use since
        self._over_since: float | None = None      # over the ceiling after dropping everything since
        self._retry_at = float("-inf")             # when to ask for retirement again
        self.retiring = False

    @contextmanager
    def review(self, deadline: float, *, memory: bool = True) -> Iterator[None]:
        """Run the body as a review that must end by ``deadline`` (``time.monotonic()``) and, with
        ``memory``, be stopped when the worker stays over its memory ceiling."""
        self._ensure_watchdog()
        entry = _Entry(threading.get_ident(), deadline, memory)
        with self._lock:
            self._entries[entry.thread] = entry
        try:
            yield
        finally:
            with self._lock:
                entry.done = True
                self._entries.pop(entry.thread, None)
                if entry.fired:
                    _raise_in(entry.thread, None)   # an exception not yet delivered is dropped

    def _ensure_watchdog(self) -> None:
        # One watchdog per process: gunicorn forks workers after the app is built, threads do not survive.
        if self._pid != os.getpid():
            with self._lock:
                if self._pid != os.getpid():
                    self._pid = os.getpid()
                    self._watchdog = threading.Thread(target=self._watch, name="review-guard", daemon=True)
                    self._watchdog.start()

    def _watch(self) -> None:
        while True:
            time.sleep(self.interval)
            try:
                self.check()
            except Exception:  # the watchdog must outlive any surprise; the next round tries again
                continue

    def check(self, now: float | None = None) -> None:
        """One round of the watchdog (tests call it directly)."""
        now = time.monotonic() if now is None else now
        over_memory = self._still_over(now)
        with self._lock:
            for entry in self._entries.values():
                if entry.done or entry.fired:
                    continue
                if now >= entry.deadline:
                    entry.fired = True
                    self.fired["deadline"] += 1
                    _raise_in(entry.thread, ReviewTimedOut)
                elif over_memory and entry.memory:
                    entry.fired = True
                    self.fired["memory"] += 1
                    _raise_in(entry.thread, ReviewOverMemory)

    def _still_over(self, now: float) -> bool:
        """Whether the memory is over the ceiling once everything that can be given back was: the
        caches dropped, the garbage collected and freed memory returned. Drops them early (from
        ``DROP_AT`` of the ceiling on); asks for retirement when the memory stays over."""
        if not self.max_rss:
            return False
        rss = self._rss()
        if rss <= DROP_AT * self.max_rss:
            self._dropped_at = self._waiting_since = self._over_since = None
            return False
        if rss <= self.max_rss:
            self._waiting_since = self._over_since = None
            if self._dropped_at is None or rss > self._dropped_at + DROP_STEP * self.max_rss:
                self._relieve_and_collect(now, always=True)
                self._dropped_at = self._rss()
            return False
        dropped = self._relieve_and_collect(now, always=False)
        if self._rss() <= self.max_rss:
            self._waiting_since = self._over_since = None
            return False
        if not dropped.complete:
            self._waiting_since = now if self._waiting_since is None else self._waiting_since
            if now - self._waiting_since < CACHE_WAIT_SECONDS:
                return False        # a cache still to drop: not yet
        self._over_since = now if self._over_since is None else self._over_since
        if (self._retire is not None and not self.retiring and now - self._over_since >= RETIRE_AFTER_SECONDS
                and now >= self._retry_at):
            self.retiring = self._retire()
            self._retry_at = now + RETIRE_AFTER_SECONDS
        return True

    def _relieve_and_collect(self, now: float, always: bool) -> Dropped:
        """Drop the caches, then collect the garbage and return freed memory to the system: when
        ``always``, when the caches held a good part of the ceiling (``DROP_STEP``), else at most
        every ``COLLECT_SECONDS`` (over the ceiling the caches are dropped at every look, and a
        collection of a large heap holds every thread for a tenth of a second)."""
        dropped = self._relieve() if self._relieve is not None else Dropped(0)
        if always or dropped.freed >= DROP_STEP * self.max_rss or now - self._collected_at >= COLLECT_SECONDS:
            gc.collect()
            _trim()
            self._collected_at = now
        return dropped


def _trim() -> None:
    """Give freed memory back to the system (glibc keeps it otherwise)."""
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass
