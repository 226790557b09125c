""""Did you mean": the closest of many names, as ``difflib.get_close_matches(word, names, n=1)`` finds it.

difflib computes the full similarity ratio of every candidate whose cheap upper bounds pass the
cutoff. Among a thousand names that look alike (``gpu-h100-00123.gpu.example.com``) almost all
pass, and the full ratios cost milliseconds per missing name: a run over half of the benchmark
corpus, whose claims name 498 classes kept in the other half, spent 7 s of its 9 s on them. Here
the candidates are taken in order of their upper bound (``quick_ratio``), and the search stops
once no bound left can reach the best ratio found, so only a few full ratios are computed. The
answer is difflib's, ties included (the greater string wins, as in its ``heapq.nlargest``).
"""
from __future__ import annotations

import difflib
from typing import Iterable


def closest(word: str, possibilities: Iterable[str], cutoff: float = 0.6) -> str | None:
    """``difflib.get_close_matches(word, possibilities, n=1, cutoff=cutoff)``'s match, or None."""
    if not 0.0 <= cutoff <= 1.0:
        raise ValueError(f"cutoff must be in [0.0, 1.0]: {cutoff!r}")
    matcher = difflib.SequenceMatcher()
    matcher.set_seq2(word)
    bounded: list[tuple[float, str]] = []
    for x in possibilities:
        matcher.set_seq1(x)
        if matcher.real_quick_ratio() >= cutoff:
            bound = matcher.quick_ratio()
            if bound >= cutoff:
                bounded.append((bound, x))
    bounded.sort(key=lambda entry: entry[0], reverse=True)
    best: tuple[float, str] | None = None
    for bound, x in bounded:
        # ratio() <= quick_ratio(): both are 2*M/T over the same T, M counting fewer matches.
        if best is not None and bound < best[0]:
            break
        matcher.set_seq1(x)
        ratio = matcher.ratio()
        if ratio >= cutoff and (best is None or (ratio, x) > best):
            best = (ratio, x)
    return best[1] if best is not None else None
