"""Placeholder: this check module is being written (see the registry in __init__)."""
from __future__ import annotations

from typing import Iterable

from .base import CheckContext, Problem

KINDS: frozenset[str] = frozenset()


def check(ctx: CheckContext) -> Iterable[Problem]:
    return ()
