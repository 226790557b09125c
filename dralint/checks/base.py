"""What a check receives and what it yields.

A check is a module in this package with ``KINDS`` (the canonical kinds it looks at) and
``check(ctx) -> Iterable[Problem]``. It reads the canonical (v1-shaped) object and reports
canonical paths; the engine maps them back to the user's own paths and lines, looks the rule up
in the catalog, and applies the user's selection. Checks never know about files, argv or HTTP.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Iterable, Protocol

from ..kube.limits import Limits
from ..org_policy import OrgPolicy
from ..paths import FieldPath
from ..problems import Problem
from ..kube.releases import Release

if TYPE_CHECKING:
    from ..convert import Canonical
    from ..index import Index


@dataclass(frozen=True)
class CheckContext:
    """Everything a check may look at for one object."""

    release: Release
    limits: Limits
    obj: "Canonical"
    old: "Canonical | None" = None          # the stored object, for UPDATE
    operation: str = "CREATE"               # CREATE | UPDATE
    subresource: str = ""                   # "" or "status"
    index: "Index | None" = None            # every object of the run (linted files and --cluster)
    dropped: tuple["Problem", ...] = ()    # fields the server drops for a gate that is off (DRA802), already gone from obj
    strict: bool = True                     # fieldValidation=Strict: unknown fields are refused
    org_policy: OrgPolicy | None = None     # the organisation's policy (checks/org.py); None: no such rules

    @property
    def is_update(self) -> bool:
        return self.operation == "UPDATE" and self.old is not None

    def gate(self, name: str) -> bool:
        return self.release.gate(name)


def ratcheted(ctx: CheckContext) -> CheckContext:
    """``ctx`` for a field the update leaves as stored: the 1.38 tightenings that spare stored values
    (names with several slashes, kubernetes#141644; a device ``nodeSelector`` with several terms,
    #141213) do not apply to it, as in the releases before."""
    return replace(ctx, limits=replace(ctx.limits, multi_slash_names=True, device_node_selector_one_term=False))


class ObjectCheck(Protocol):
    """A check module (or an object acting as one, like the CEL hints): its kinds and its check;
    its ``__name__`` names it in an internal error."""

    KINDS: frozenset[str]
    __name__: str

    def check(self, ctx: CheckContext) -> Iterable[Problem]: ...


def too_many_problem(rule: str, path: FieldPath, count: int, limit: int, what: str, fix: str = "") -> Problem:
    """The API server's size check: one TooMany at the list or map, whose entries it then skips."""
    advice = f": {fix}" if fix else ""
    return Problem(rule, path, f"{count} {what}; at most {limit} are allowed{advice} (API server: Too many; the "
                               "entries are then not checked)", details={"count": count, "limit": limit})


def too_many(rule: str, items: Any, limit: int | None, path: FieldPath, what: str, fix: str = "") -> Problem | None:
    """``too_many_problem`` when ``items`` (a list or map) is over ``limit``; None otherwise."""
    if limit is None or not isinstance(items, (list, dict)) or len(items) <= limit:
        return None
    return too_many_problem(rule, path, len(items), limit, what, fix)


def map_key(limits: Limits, path: FieldPath, key: str, max_len: int) -> FieldPath:
    """The path the server gives a bad map key: the map (declarative validation, 1.36+), or the entry
    (validateMap of 1.33-1.35), a key longer than ``max_len`` (at least 16) shortened in the middle."""
    if limits.keys_at_map:
        return path
    max_len = max(max_len, 16)
    if len(key) > max_len:
        remaining = max_len - 3
        key = key[:(remaining + 1) // 2] + "..." + key[len(key) - remaining // 2:]
    return path.key(key)


def p(*segments: str | int) -> FieldPath:
    """Shorthand for building a canonical path in checks."""
    return FieldPath(segments)
