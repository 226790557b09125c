"""Reporters: one module per output format, each ``render(result, options, catalog, stream)``."""
from __future__ import annotations

from . import json_report, text

FORMATS = {"text": text, "json": json_report}


def formats() -> list[str]:
    return sorted(FORMATS)
