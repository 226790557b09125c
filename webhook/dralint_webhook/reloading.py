"""A value loaded from files and loaded again when the files change (no restart).

Used for the policy (a ConfigMap volume), the cluster state and the serving certificate (a Secret
volume that cert-manager rotates). Kubelet updates such volumes by swapping a symlink, so the
files' identity (inode, size, mtime, followed through the link) changes at once; a writer that
replaces files one by one may leave a moment where they do not fit together (a new certificate
with the old key): that load fails, the previous value stays in force, and the next change is
tried again. A file is looked at no more often than every ``interval`` seconds, so a request
costs at most one ``stat`` per file.
"""
from __future__ import annotations

import os
import threading
import time
from typing import Callable, Generic, TypeVar

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
                 on_reload: ReloadHook | None = None) -> None:
        self.what = what
        self._paths = paths
        self._load = load
        self._interval = interval
        self._on_reload = on_reload
        self._lock = threading.Lock()
        self._signature = signature(paths)
        self._value = load()
        self._checked = time.monotonic()
        self.error: str = ""

    def current(self) -> T:
        """The value, reloaded first when the files changed since the last look."""
        if time.monotonic() - self._checked >= self._interval:
            self._refresh()
        return self._value

    def loaded(self) -> T:
        """The value as last loaded, without looking at the files."""
        return self._value

    def _refresh(self) -> None:
        # One thread looks and loads; the others keep serving the current value meanwhile.
        if not self._lock.acquire(blocking=False):
            return
        try:
            self._checked = time.monotonic()
            sig = signature(self._paths)
            if sig == self._signature:
                return
            self._signature = sig
            try:
                value = self._load()
            except Exception as exc:  # any failure of a reload keeps the last good value in force
                self.error = str(exc) or type(exc).__name__
                self._report(False, self.error)
                return
            self._value = value
            self.error = ""
            self._report(True, "")
        finally:
            self._lock.release()

    def _report(self, ok: bool, message: str) -> None:
        if self._on_reload is not None:
            self._on_reload(self.what, ok, message)
