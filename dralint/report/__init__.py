"""Reporters: one module per output format, each ``render(result, stream, context)``."""
from __future__ import annotations

from . import github, json_report, junit, sarif, text
from .context import ReportContext

FORMATS = {"text": text, "json": json_report, "sarif": sarif, "github": github, "junit": junit}

__all__ = ["FORMATS", "ReportContext", "formats"]


def formats() -> list[str]:
    """The names ``--format`` accepts."""
    return sorted(FORMATS)
