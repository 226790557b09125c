"""The bounds that keep reading hostile input cheap: one place, documented in docs/yaml-parsing.md."""
from __future__ import annotations

MAX_FILE_BYTES = 16 * 1024 * 1024
"""A file (or stdin) larger than this is not parsed at all: one ``too-large`` problem.

Kubernetes refuses request bodies over 3 MiB, so no single object can be larger; 16 MiB leaves
room for big multi-document files while a 50 MB file costs only reading 16 MiB."""

MAX_DEPTH = 100
"""Deepest nesting of mappings and sequences (after alias expansion) in one document.

Kubernetes itself stops at 10,000, but no real manifest goes past ~20 levels and every later
stage (schema, checks) walks documents recursively, so a deeper one is reported and dropped."""

ALIAS_MIN_ALIASES = 100
ALIAS_MIN_DECODES = 1000
ALIAS_RATIO_RANGE_LOW = 400_000
ALIAS_RATIO_RANGE_HIGH = 4_000_000
"""goyaml.v2's "excessive aliasing" rule, which Kubernetes applies: with more than 100 nodes
coming from aliases and more than 1,000 decoded nodes, the share from aliases may be at most
99 % up to 400,000 decoded nodes, falling linearly to 10 % at 4,000,000."""


def allowed_alias_ratio(decoded: int) -> float:
    """The share of decoded nodes that may come from alias expansion (goyaml.v2's rule)."""
    if decoded <= ALIAS_RATIO_RANGE_LOW:
        return 0.99
    if decoded >= ALIAS_RATIO_RANGE_HIGH:
        return 0.10
    span = ALIAS_RATIO_RANGE_HIGH - ALIAS_RATIO_RANGE_LOW
    return 0.99 - 0.89 * ((decoded - ALIAS_RATIO_RANGE_LOW) / span)


def excessive_aliasing(aliased: int, decoded: int) -> bool:
    """True when alias expansion has grown past what Kubernetes accepts (billion laughs)."""
    return (
        aliased > ALIAS_MIN_ALIASES
        and decoded > ALIAS_MIN_DECODES
        and aliased / decoded > allowed_alias_ratio(decoded)
    )
