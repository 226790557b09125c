"""Feasibility: could the scheduler allocate the linted claims on the cluster's devices?

``judge`` reproduces kube-scheduler's structured allocator (docs/feasibility.md): pools per node,
selectors, constraints, counters, capacity, taints, the 32-device limit and the same search
order, and explains the narrowest reason when nothing fits.
"""
from __future__ import annotations

from .ahead import Ahead, judge_ahead
from .fleet import Fleet
from .judge import Prepared, UnknownNode, judge, prepare
from .report import FeasibilityOptions, FeasibilityReport

__all__ = ["Ahead", "FeasibilityOptions", "FeasibilityReport", "Fleet", "Prepared", "UnknownNode", "judge", "judge_ahead", "prepare"]
