"""Convert every served version of a DRA kind into one canonical shape: v1.

The checks are written once, against v1. Older shapes differ in two places: v1beta1/v1alpha3
requests carry their fields flat instead of under ``exactly``, and v1beta1/v1alpha3 slice devices
wrap them in ``basic``; v1alpha3 (1.31) capacities are bare quantities. ``to_user`` maps a
canonical field path back to the path in the user's own document, so findings name the user's
fields. Kinds of the older generations (v1alpha1/v1alpha2) have no v1 form and pass unchanged.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from .manifest import Manifest
from .kube.shapes import FLAT_REQUEST_FIELDS, FLAT_VERSIONS
from .paths import FieldPath, value_at
from .schema.core import decode_claims
from .schema.decode import decoded



@dataclass(frozen=True)
class Canonical:
    """An object in canonical (v1) shape, plus the way back to the user's paths."""

    manifest: Manifest
    kind: str
    value: dict
    to_user: Callable[[FieldPath], FieldPath] = field(default=lambda p: p)

    @property
    def api_version(self) -> str:
        return self.manifest.api_version

    @property
    def version(self) -> str:
        return self.manifest.version

    @property
    def name(self) -> str:
        return self.manifest.name

    @property
    def namespace(self) -> str:
        return self.manifest.namespace

    def get(self, *path: str | int, default: Any = None) -> Any:
        """Walk the canonical value; ``default`` when any step is missing or of the wrong type."""
        node: Any = self.value
        for seg in path:
            if isinstance(seg, int):
                if not isinstance(node, list) or not -len(node) <= seg < len(node):
                    return default
            elif not isinstance(node, dict) or seg not in node:
                return default
            node = node[seg]
        return node


def to_canonical(manifest: Manifest) -> Canonical:
    """The canonical form of a DRA object, as the server decodes it (the input is never modified)."""
    kind, version = manifest.kind, manifest.version
    value = _decoded(manifest)
    if version not in FLAT_VERSIONS:
        return Canonical(manifest, kind, value)
    if kind == "ResourceClaim":
        return Canonical(manifest, kind, _claim(value, ("spec",)), _requests_to_user(("spec", "devices", "requests")))
    if kind == "ResourceClaimTemplate":
        return Canonical(manifest, kind, _claim(value, ("spec", "spec")),
                         _requests_to_user(("spec", "spec", "devices", "requests")))
    if kind == "ResourceSlice":
        bare = _bare_capacities(value)
        return Canonical(manifest, kind, _slice(value), _slice_to_user(bare))
    return Canonical(manifest, kind, value)


def _decoded(manifest: Manifest) -> dict:
    """The object with explicit nulls resolved as the API server's decoder does (schema/decode.py)."""
    if manifest.is_dra:
        return decoded(manifest.value, manifest.api_version, manifest.kind)
    value = manifest.value
    for base in manifest.pod_spec_paths:
        keys = tuple(step for step in base if isinstance(step, str))
        if len(keys) != len(base):
            # A pod template inside a list (a JobSet's replicatedJobs) is a custom resource's: the API
            # server stores it as written, without the core decoder.
            continue
        spec = value_at(value, keys)
        if isinstance(spec, dict):
            fixed = decode_claims(spec)
            if fixed is not spec:
                value = _replace(value, keys, fixed)
    return value


def _claim(value: dict, spec_path: tuple[str, ...]) -> dict:
    spec = value_at(value, spec_path)
    requests = spec.get("devices", {}).get("requests") if isinstance(spec, dict) and isinstance(spec.get("devices"), dict) else None
    if not isinstance(requests, list):
        return value
    converted = []
    for req in requests:
        if isinstance(req, dict) and any(_flat_field_set(req, f) for f in FLAT_REQUEST_FIELDS):
            exactly = {f: req[f] for f in FLAT_REQUEST_FIELDS if f in req}
            rest = {k: v for k, v in req.items() if k not in FLAT_REQUEST_FIELDS}
            rest["exactly"] = exactly
            converted.append(rest)
        else:
            converted.append(req)
    return _replace(value, spec_path + ("devices", "requests"), converted)


# Zero values of the flat scalar fields: the server's conversion only builds `exactly` when a field
# is set in Go terms (hasAnyMainRequestFieldsSet in pkg/apis/resource/v1beta1/conversion.go): a
# non-empty class or mode, a non-zero count, or a list or pointer field that is present at all.
_FLAT_ZERO: dict[str, Any] = {"deviceClassName": "", "allocationMode": "", "count": 0}


def _flat_field_set(request: dict, name: str) -> bool:
    if name not in request:
        return False
    value = request[name]
    zero = _FLAT_ZERO.get(name)
    return not (zero is not None and type(value) is type(zero) and value == zero)


def _requests_to_user(requests: tuple[str, ...]) -> Callable[[FieldPath], FieldPath]:
    n = len(requests)

    def to_user(path: FieldPath) -> FieldPath:
        if len(path) > n + 1 and tuple(path[:n]) == requests and path[n + 1] == "exactly":
            return FieldPath(tuple(path[: n + 1]) + tuple(path[n + 2:]))
        return path

    return to_user


def _slice(value: dict) -> dict:
    devices = value_at(value, ("spec", "devices"))
    if not isinstance(devices, list):
        return value
    converted = []
    for dev in devices:
        if isinstance(dev, dict) and isinstance(dev.get("basic"), dict):
            flat = {k: v for k, v in dev.items() if k != "basic"}
            flat.update(dev["basic"])
            caps = flat.get("capacity")
            if isinstance(caps, dict):
                flat["capacity"] = {k: (v if isinstance(v, dict) else {"value": v}) for k, v in caps.items()}
            converted.append(flat)
        else:
            converted.append(dev)
    return _replace(value, ("spec", "devices"), converted)


def _bare_capacities(value: dict) -> frozenset[tuple[int, str]]:
    """(device index, capacity name) pairs written as bare quantities (v1alpha3 of 1.31)."""
    out: set[tuple[int, str]] = set()
    devices = value_at(value, ("spec", "devices"))
    for i, dev in enumerate(devices if isinstance(devices, list) else ()):
        caps = dev.get("basic", {}).get("capacity") if isinstance(dev, dict) and isinstance(dev.get("basic"), dict) else None
        if isinstance(caps, dict):
            out.update((i, k) for k, v in caps.items() if not isinstance(v, dict))
    return frozenset(out)


def _slice_to_user(bare: frozenset[tuple[int, str]]) -> Callable[[FieldPath], FieldPath]:
    def to_user(path: FieldPath) -> FieldPath:
        if len(path) > 3 and path[0] == "spec" and path[1] == "devices" and isinstance(path[2], int) and path[3] != "name":
            rest = tuple(path[3:])
            if len(rest) >= 3 and rest[0] == "capacity" and rest[2] == "value" and (path[2], rest[1]) in bare:
                rest = rest[:2] + rest[3:]
            return FieldPath(tuple(path[:3]) + ("basic",) + rest)
        return path

    return to_user


def _replace(value: dict, path: tuple[str, ...], new: Any) -> dict:
    """A copy of ``value`` with ``path`` set to ``new``; only the dicts on the path are copied."""
    head, *rest = path
    out = dict(value)
    out[head] = new if not rest else _replace(value[head], tuple(rest), new)
    return out
