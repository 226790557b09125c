"""Placeholder: fields the API server silently drops when their feature gate is off (being written)."""
from __future__ import annotations

from .checks.base import Problem
from .convert import Canonical
from .releases import Release


def apply_gates(obj: Canonical, old: Canonical | None, release: Release) -> tuple[Canonical, list[Problem]]:
    """The object as the server would validate it, and a warning per dropped field."""
    return obj, []
