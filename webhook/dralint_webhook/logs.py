"""Structured logs: one JSON object per line on stderr, gunicorn's own messages included.

Each answered review logs one ``review`` line (uid, kind, namespace/name, operation, allowed,
duration, rule ids); internal errors log their traceback here, never to the client.
"""
from __future__ import annotations

import json
import logging
import time
from typing import Any

LOGGER = "dralint_webhook"
# Callers' values (uid, name, kind) land in log fields; a hostile request must not write megabytes of log.
FIELD_MAX = 512


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


def log(logger: logging.Logger, level: int, message: str, exc_info: bool = False, **fields: Any) -> None:
    """Log ``message`` with structured ``fields`` (they become keys of the JSON line; text cut to FIELD_MAX)."""
    cut = {k: (v if len(v) <= FIELD_MAX else v[: FIELD_MAX - 3] + "...") if isinstance(v, str) else v
           for k, v in fields.items()}
    logger.log(level, message, exc_info=exc_info, extra={"fields": cut})
