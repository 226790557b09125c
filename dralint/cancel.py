"""Stopping a run that nobody wants any more, at its next object, and telling how far it got.

A run made under a :class:`Token` (``with cancellable(token): ...``) can be stopped from another
thread: :meth:`Token.cancel`, and the engine raises :class:`Cancelled` at its next
:func:`checkpoint`, which it passes before each object it judges and, in the feasibility stage,
before each claim (or pod) it judges. The editor's server stops the
run of a document's older text this way when a newer one arrives: a Python thread cannot be
stopped from outside, but it can stop itself where its state is whole.

``Cancelled`` is a ``BaseException``: the error boundaries that turn an object's unexpected
exception into a finding (``except Exception``) let it through to the run's owner.
"""
from __future__ import annotations

import contextlib
import time
from contextvars import ContextVar
from typing import Iterator


# A waiting thread (the editor's answer to a keystroke) gets the interpreter within about this long,
# instead of within the interpreter's 5 ms switch interval.
YIELD_SECONDS = 0.002


class Cancelled(BaseException):
    """The run's token was cancelled: the run stopped at a checkpoint."""


class Token:
    """One run's stop flag and its count of checkpoints passed (objects judged), shared between
    the thread that runs it and the one that may stop it or report its progress."""

    def __init__(self, *, yielding: bool = False) -> None:
        self.cancelled = False
        self.steps = 0
        # A background run gives the interpreter away at its checkpoints (YIELD_SECONDS apart): a
        # thread waiting for it (the editor's answer to a keystroke) then runs first.
        self.yielding = yielding
        self.yielded_at = 0.0

    def cancel(self) -> None:
        """Ask the run to stop at its next checkpoint."""
        self.cancelled = True


_current: ContextVar[Token | None] = ContextVar("dralint_cancel_token", default=None)


@contextlib.contextmanager
def cancellable(token: Token) -> Iterator[Token]:
    """Run the body under ``token``: its checkpoints count on it and stop when it is cancelled."""
    reset = _current.set(token)
    try:
        yield token
    finally:
        _current.reset(reset)


def checkpoint() -> None:
    """Raise :class:`Cancelled` if the current run's token was cancelled; count one step otherwise.
    Free outside a cancellable run (the command line, the webhook)."""
    token = _current.get()
    if token is None:
        return
    if token.cancelled:
        raise Cancelled
    token.steps += 1
    if token.yielding:
        # At most every YIELD_SECONDS: sleep(0) is a system call that, on a busy machine, also hands
        # the core to other processes, which at every object doubled a large document's run.
        now = time.monotonic()
        if now - token.yielded_at >= YIELD_SECONDS:
            token.yielded_at = now
            time.sleep(0)
