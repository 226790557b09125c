"""What one node of the world sees: its pools, its candidate devices and why a search failed there.

Its own module so that the world (which keeps these) and the counts (which read them through the
world's narrow view) share the record without importing each other.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .nodes import NodeView
from .picks import Candidate
from .pools import Pool


@dataclass
class NodeState:
    """What one node sees; ``pools`` is None until worked out (and again after a change)."""

    view: NodeView
    slot: int
    pools: list[Pool] | None = None
    entries: list[tuple[Candidate, bool]] = field(default_factory=list)
    dev: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    here: np.ndarray = field(default_factory=lambda: np.zeros(0, bool))
    failure: str = ""           # the per-node message when the search fails ("" for none)
    unusable: bool = False      # some pool it sees is incomplete or invalid
