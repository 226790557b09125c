"""Structured logs: one JSON object per line on stderr, gunicorn's own messages included.

Each answered review logs one ``review`` line (uid, kind, namespace/name, operation, the user,
allowed, duration, rule ids); internal errors log their traceback here, never to the client.
``serve`` writes nothing else from its first line on (:func:`install`): Python's warnings, an
exception no code caught, in any thread, and its usage errors are JSON lines too. Each line names
the process that wrote it: its ``pid``, and (once :func:`identify` has been called) its ``role``
and ``slot``, the labels its metrics carry.
"""
from __future__ import annotations

import json
import logging
import logging.config
import os
import sys
import threading
import time
from types import TracebackType
from typing import Any

LOGGER = "dralint_webhook"
# Callers' values (uid, name, kind, the user's groups) land in log fields; a hostile request must not
# write megabytes of log: strings are cut, and lists keep their first items.
FIELD_MAX = 512
LIST_MAX = 32
# The process that writes: its pid, and its role (master, worker, watcher) and slot as its metrics label it.
_process: dict[str, Any] = {}


class JsonFormatter(logging.Formatter):
    """``{"ts": ..., "level": ..., "logger": ..., "pid": ..., "msg": ..., <extra fields>}`` on one line.

    ``pid`` tells gunicorn's workers apart: each reloads its policy, state and certificate on its own.
    """

    def format(self, record: logging.LogRecord) -> str:
        out: dict[str, Any] = {
            "ts": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created)) + f".{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "logger": record.name,
            "pid": record.process,
            # A fork logs with its own pid before it names itself: no role rather than its parent's.
            **({"role": _process["role"], "slot": _process["slot"]} if _process.get("pid") == record.process else {}),
            "msg": record.getMessage(),
        }
        fields = getattr(record, "fields", None)
        if isinstance(fields, dict):
            out.update(fields)
        if record.exc_info:
            out["exception"] = self.formatException(record.exc_info)
        return json.dumps(out, default=str)


def logconfig_dict(level: str = "info") -> dict[str, Any]:
    """A ``logging.config.dictConfig`` for gunicorn and the app: JSON to stderr, no access log."""
    handler = {"class": "logging.StreamHandler", "formatter": "json", "stream": "ext://sys.stderr"}
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {"json": {"()": "dralint_webhook.logs.JsonFormatter"}},
        "handlers": {"stderr": handler},
        "root": {"level": "WARNING", "handlers": ["stderr"]},
        "loggers": {
            LOGGER: {"level": level.upper(), "handlers": ["stderr"], "propagate": False},
            "gunicorn.error": {"level": level.upper(), "handlers": ["stderr"], "propagate": False},
            # Every review logs its own line with more than an access line would say.
            "gunicorn.access": {"level": "CRITICAL", "handlers": [], "propagate": False},
        },
    }


def install(level: str = "info") -> None:
    """Make every line this process writes to stderr from now on a JSON log line (``serve``): the
    logging configuration gunicorn applies again, Python's warnings, and uncaught exceptions."""
    logging.config.dictConfig(logconfig_dict(level))
    logging.captureWarnings(True)
    sys.excepthook = _uncaught
    threading.excepthook = lambda args: _uncaught(args.exc_type, args.exc_value, args.exc_traceback,
                                                  args.thread.name if args.thread else "")


def identify(role: str, slot: int = 0) -> None:
    """Name this process in every line it logs from now on (after fork: the worker's or watcher's own)."""
    _process.update(pid=os.getpid(), role=role, slot=slot)


def log(logger: logging.Logger, level: int, message: str, exc_info: bool = False, **fields: Any) -> None:
    """Log ``message`` with structured ``fields`` (they become keys of the JSON line; text cut to
    FIELD_MAX, lists to LIST_MAX items, at any depth)."""
    logger.log(level, message, exc_info=exc_info, extra={"fields": {k: _bounded(v) for k, v in fields.items()}})


def _bounded(value: Any) -> Any:
    if isinstance(value, str):
        return value if len(value) <= FIELD_MAX else value[: FIELD_MAX - 3] + "..."
    if isinstance(value, dict):
        return {k: _bounded(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        kept = [_bounded(v) for v in value[:LIST_MAX]]
        return kept + [f"... and {len(value) - LIST_MAX} more"] if len(value) > LIST_MAX else kept
    return value


def _uncaught(kind: type[BaseException], value: BaseException | None, tb: TracebackType | None,
              thread: str = "") -> None:
    if issubclass(kind, SystemExit):
        return      # a thread's way to end, which Python's own hook ignores too
    fields: dict[str, Any] = {"thread": thread} if thread else {}
    if value is None:       # a thread's hook may be told the type only
        fields["exception"] = kind.__name__
    logging.getLogger(LOGGER).critical("uncaught exception", exc_info=(kind, value, tb) if value is not None else None,
                                       extra={"fields": fields})
