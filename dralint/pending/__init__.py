"""``dralint why-pending``: why a Pod waits for its ResourceClaims, from the live cluster (docs/why-pending.md).

A face over the engine and :mod:`dralint.cluster`, like the command line: :mod:`.gather` reads the
Pod, its claims and events; :mod:`.diagnose` asks the engine's allocator about the claims not yet
allocated; :mod:`.render` writes the answer; :mod:`.cli` is the subcommand.
"""
from __future__ import annotations

from .cli import main

__all__ = ["main"]
