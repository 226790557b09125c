"""The record every judging stage yields: a rule broken at a canonical path.

It sits on the ground floor so that gating, the checks, feasibility and the fixers share it without
importing one another; the engine turns problems into findings (rule metadata, the user's paths
and lines).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from .findings import Position, Severity
from .paths import FieldPath


@dataclass(frozen=True)
class Problem:
    """One thing a check found; ``path`` is canonical unless ``user_path`` is given."""

    rule: str
    path: FieldPath
    message: str
    severity: Severity | None = None       # None: the catalog's default severity
    details: Mapping[str, Any] | None = None
    scalar_offset: int | None = None       # a position inside the string at ``path`` (CEL errors)
    user_path: FieldPath | None = None     # already in the user's spelling (e.g. a field the server drops)
    at: FieldPath | None = None            # where to point, when not at ``path`` (canonical): a bad key of a map
    # Where the finding starts and ends in its file, when the stage worked it out already (``engine.emit.placed``:
    # the feasibility stage's processes do, beside one another, instead of the main process after them).
    place: tuple[Position, Position] | None = None
