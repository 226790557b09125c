"""A value loaded from files and loaded again when the files change (no restart).

Used for the policy (a ConfigMap volume), the cluster state and the serving certificate (a Secret
volume that cert-manager rotates). Kubelet updates such volumes by swapping a symlink, so the
files' identity (inode, size, mtime, followed through the link) changes at once; a writer that
replaces files one by one may leave a moment where they do not fit together (a new certificate
with the old key), and one that writes a file in place leaves it cut short for a moment (a policy
cut at a line boundary still parses, as a different policy). So a change is loaded only once the
files have looked the same for ``settle`` seconds; a load that fails keeps the previous value in
force, and the next change is tried again. A load that is interrupted (an exception that is not an
``Exception``) is tried again at the next look: the change is never lost.

A value is looked at no more often than every ``interval`` seconds: on the request path
(:meth:`Reloading.current`, at most one ``stat`` per file), or, after :meth:`Reloading.start`, in a
thread of its own, for values that take long to load (a cluster state of thousands of slices).
"""
from __future__ import annotations

import os
import threading
import time
from contextlib import nullcontext
from typing import Any, Callable, ContextManager, Generic, TypeVar

T = TypeVar("T")
Signature = tuple[tuple[str, int, int, int] | None, ...]
# Called after every load attempt: (what, succeeded, error message or "").
ReloadHook = Callable[[str, bool, str], None]


def signature(paths: tuple[str, ...]) -> Signature:
    """The identity of each file (name, inode, size, mtime in ns); None for a missing one.

    A folder stands for the files below it (a cluster-state folder changes when one of its files
    does, not only when entries come and go); names count, so a rename is a change too.
    """
    out: list[tuple[str, int, int, int] | None] = []
    for path in paths:
        if os.path.isdir(path):
            files = sorted(os.path.join(root, name) for root, _, names in os.walk(path) for name in names)
            out.extend(signature(tuple(files)) if files else (None,))
            continue
        try:
            st = os.stat(path)
        except OSError:
            out.append(None)
        else:
            out.append((path, st.st_ino, st.st_size, st.st_mtime_ns))
    return tuple(out)


class Reloading(Generic[T]):
    """The last good value of ``load()``, refreshed when one of ``paths`` changes.

    The first load happens in the constructor and raises: the server must not start on a bad
    file. Later failures keep the previous value and are reported through ``on_reload`` and
    :attr:`error`.
    """

    def __init__(self, what: str, paths: tuple[str, ...], load: Callable[[], T], *, interval: float = 1.0,
                 settle: float = 0.0, on_reload: ReloadHook | None = None,
                 around: Callable[[], ContextManager[Any]] = nullcontext) -> None:
        """``around()`` encloses each load and the swap that puts its value in force."""
        self.what = what
        self._paths = paths
        self._load = load
        self._interval = interval
        self._settle = settle
        self._on_reload = on_reload
        self._lock = threading.Lock()
        self._around = around
        self._signature = signature(paths)
        self._pending: tuple[Signature, float] | None = None   # a change seen, and when, not yet loaded
        with around():
            self._value = load()
        self._checked = time.monotonic()
        self._following = False
        self.error: str = ""
        self.loaded_at = time.time()       # wall-clock time of the load in force
        self.attempted_at = self.loaded_at  # ... and of the last attempt, failed or not

    def current(self) -> T:
        """The value, reloaded first when the files changed since the last look (unless a thread follows them)."""
        if not self._following and time.monotonic() - self._checked >= self._interval:
            self._refresh()
        return self._value

    def loaded(self) -> T:
        """The value as last loaded, without looking at the files."""
        return self._value

    def start(self, tend: Callable[[T], None] | None = None) -> None:
        """Look at the files in a thread of this process from now on (call in each worker, after fork).

        ``tend(value)`` runs in that thread after each look: work a value needs now and then (the
        cluster state's feasibility view after a policy edit), kept off the request path too.
        """
        self._following = True
        threading.Thread(target=self._follow, args=(tend,), name=f"reload-{self.what}", daemon=True).start()

    def _follow(self, tend: Callable[[T], None] | None) -> None:
        while True:
            time.sleep(max(self._interval, 0.05))
            try:
                self._refresh()
                if tend is not None:
                    tend(self._value)
            except Exception as exc:  # the thread must outlive any surprise; the value in force stays
                self._report(False, f"{type(exc).__name__}: {exc}")

    def _refresh(self) -> None:
        # One thread looks and loads; the others keep serving the current value meanwhile.
        if not self._lock.acquire(blocking=False):
            return
        try:
            now = time.monotonic()
            self._checked = now
            sig = signature(self._paths)
            if sig == self._signature:
                self._pending = None
                return
            if self._pending is None or self._pending[0] != sig:
                self._pending = (sig, now)
            if now - self._pending[1] < self._settle:
                return      # still changing, or changed a moment ago: look again before loading
            self.attempted_at = time.time()
            with self._around():
                try:
                    value = self._load()
                except Exception as exc:  # any failure of a reload keeps the last good value in force
                    self._signature, self._pending = sig, None   # tried: the next change is tried again
                    self.error = str(exc) or type(exc).__name__
                    self._report(False, self.error)
                    return
                self._value = value
            self._signature, self._pending = sig, None
            self.error = ""
            self.loaded_at = self.attempted_at
            self._report(True, "")
        finally:
            self._lock.release()

    def _report(self, ok: bool, message: str) -> None:
        if self._on_reload is not None:
            self._on_reload(self.what, ok, message)
