"""The DRA CEL environment of one Kubernetes release: which libraries and device fields exist.

Kubernetes builds two environments per release (docs/cel.md §1.1): NewExpressions (API-server
validation of new or changed selectors) holds options introduced at or before the
*compatibility version* (the release minus one) plus options whose feature gate is on;
StoredExpressions (the scheduler) holds every option the binary has that is not removed.
Everything below is data so the checker never compares version numbers itself.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Mapping

from . import types as T

GATE_CONSUMABLE = "DRAConsumableCapacity"
GATE_LIST_ATTRS = "DRAListTypeAttributes"
_GATES = frozenset({GATE_CONSUMABLE, GATE_LIST_ATTRS})

NEWEST_MINOR = 37
OLDEST_MINOR = 31


@dataclass(frozen=True)
class _Option:
    introduced: int
    removed: int | None = None
    gate: str | None = None  # a gated option is in NewExpressions iff its gate is on


# Library name -> when Kubernetes added it (apiserver environment/base.go and DRA cel/compile.go).
LIBRARIES: Mapping[str, _Option] = {
    "std": _Option(0),
    "homogeneous": _Option(0),
    "url": _Option(0),
    "regex": _Option(0),
    "k8s_lists": _Option(0),
    "k8s_lists_includes": _Option(37),
    "optional": _Option(28),
    "cross_numeric": _Option(28),
    "quantity": _Option(28),
    "literal_validators": _Option(29),
    "strings": _Option(29),
    "sets": _Option(29),
    "ip": _Option(30),
    "cidr": _Option(30),
    "format": _Option(31),
    "two_var": _Option(32),
    "semver": _Option(31),
    "semver_normalize": _Option(33),
    "ext_lists": _Option(34),
    "bind": _Option(31),
    "dra_includes": _Option(36, gate=GATE_LIST_ATTRS),
}
_ALLOW_MULTI = _Option(34, gate=GATE_CONSUMABLE)

# Behaviours of the cel-go a release's binaries vendor, whatever the environment: name -> the
# releases that have it.
CEL_GO_QUIRKS: Mapping[str, range] = {
    # cel-go before v0.21 (Kubernetes 1.31 vendors v0.20.1) tests a format() receiver with
    # `!literal && type != string` (for `||`) and then reads it as a literal: a non-literal
    # string receiver panics the check (google/cel-go#987, in v0.21.0; 1.32 vendors v0.22.0).
    "format_nonliteral_panic": range(0, 32),
}


@dataclass(frozen=True)
class CelEnv:
    """Which DRA CEL environment to compile in.

    ``kube_minor`` is the release (35 for Kubernetes 1.35); ``stored`` False means
    NewExpressions (API-server validation), True StoredExpressions (scheduler); ``gates`` holds
    the enabled gates that matter (DRAConsumableCapacity, DRAListTypeAttributes).
    """

    kube_minor: int
    stored: bool = False
    gates: frozenset[str] = field(default_factory=frozenset)


@dataclass(frozen=True)
class EnvModel:
    """The resolved environment: available libraries, the device type, the attribute type and
    the quirks of the release's cel-go (``CEL_GO_QUIRKS``)."""

    libraries: frozenset[str]
    device_fields: Mapping[str, T.Type]
    attribute_type: T.Type
    quirks: frozenset[str] = frozenset()

    def has(self, library: str) -> bool:
        return library in self.libraries


def _included(opt: _Option, env: CelEnv) -> bool:
    k = env.kube_minor
    if opt.introduced > k:
        return False  # the binary does not have it at all
    if opt.removed is not None and k - 1 >= opt.removed:
        return False
    if env.stored:
        return True
    if opt.gate is not None:
        return opt.gate in env.gates
    return opt.introduced <= k - 1


@lru_cache(maxsize=64)
def model(env: CelEnv) -> EnvModel:
    """Resolve ``env`` into libraries and declarations (cached: a handful of envs exist)."""
    libs = frozenset(name for name, opt in LIBRARIES.items() if _included(opt, env))
    list_attrs = (GATE_LIST_ATTRS in env.gates and env.kube_minor >= 36) or (env.stored and env.kube_minor >= 37)
    attr = T.DYN if list_attrs else T.ANY
    fields: dict[str, T.Type] = {
        "driver": T.STRING,
        "attributes": T.map_of(T.STRING, T.map_of(T.STRING, attr)),
        "capacity": T.map_of(T.STRING, T.map_of(T.STRING, T.QUANTITY)),
    }
    if _included(_ALLOW_MULTI, env):
        fields["allowMultipleAllocations"] = T.BOOL
    quirks = frozenset(name for name, minors in CEL_GO_QUIRKS.items() if env.kube_minor in minors)
    return EnvModel(libs, fields, attr, quirks)


_VERSION = re.compile(r"^v?1\.(\d+)(?:\.\d+)?(?:[-+].*)?$")


def env_for(kube_version: str, gates: Mapping[str, bool], *, stored: bool) -> CelEnv:
    """The env for ``kube_version`` ("1.35", "v1.35.2") and an effective gate map.

    An unparsable version falls back to the newest release; only gates that matter for CEL are kept.
    """
    m = _VERSION.match(kube_version.strip()) if isinstance(kube_version, str) else None
    minor = int(m.group(1)) if m else NEWEST_MINOR
    on = frozenset(g for g, v in gates.items() if v and g in _GATES)
    return CelEnv(kube_minor=minor, stored=stored, gates=on)
