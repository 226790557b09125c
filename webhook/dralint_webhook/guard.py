"""Bounded work per review: a deadline below the webhook's timeout, and a ceiling on the worker's memory.

Judging is CPU-bound Python running in a worker's thread; nothing outside the thread can stop it
but the interpreter. A watchdog thread per worker process looks at the reviews in flight every
``interval``: a review past its deadline, or every review in flight while the process's resident
memory is over the ceiling, gets an exception raised in its thread
(``PyThreadState_SetAsyncExc``, the interpreter's own way of interrupting a thread). It arrives
within a few bytecodes wherever the review is (engine, CEL, allocator), is a ``BaseException`` so
that no ``except Exception`` in the engine turns it into a finding, and the request answers it
per the policy's ``onInternalError``. Code in C is not interrupted (a regular expression runs to
its end): none of dralint's is unbounded (RE2 is linear).

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
from typing import Iterator

_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


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
    """The reviews in flight in this process, and the watchdog that stops the ones over their bounds."""

    def __init__(self, max_rss: int = 0, interval: float = 0.02) -> None:
        self.max_rss = max_rss          # bytes; 0: no memory ceiling
        self.interval = interval
        self._lock = threading.Lock()
        self._entries: dict[int, _Entry] = {}
        self._watchdog: threading.Thread | None = None
        self._pid = 0
        self.fired = {"deadline": 0, "memory": 0}

    @contextmanager
    def review(self, deadline: float) -> Iterator[None]:
        """Run the body as a review that must end by ``deadline`` (``time.monotonic()``)."""
        self._ensure_watchdog()
        entry = _Entry(threading.get_ident(), deadline)
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
        over_memory = bool(self.max_rss) and bool(self._entries) and resident_bytes() > self.max_rss
        with self._lock:
            for entry in self._entries.values():
                if entry.done or entry.fired:
                    continue
                if now >= entry.deadline:
                    entry.fired = True
                    self.fired["deadline"] += 1
                    _raise_in(entry.thread, ReviewTimedOut)
                elif over_memory:
                    entry.fired = True
                    self.fired["memory"] += 1
                    _raise_in(entry.thread, ReviewOverMemory)
        if over_memory:
            gc.collect()
            _trim()


def _trim() -> None:
    """Give freed memory back to the system (glibc keeps it otherwise)."""
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass
