"""Device attributes of a ResourceSlice: qualified names (shared with capacities), exactly one value
per attribute, semver versions, value lengths, list attributes, and the partition type attribute.

A slice has thousands of attributes and most are valid, so the common case is recognised cheaply
(``plainly_valid``) before anything is built for a report.
"""
from __future__ import annotations

import re
from typing import Any, Iterator

from ...paths import FieldPath
from ...problems import Problem
from ..base import CheckContext, map_key, p
from ..fields import ERROR_WORDS
from ..formats import is_semver, qualified_attribute_errors

ATTRIBUTE_NAME_INVALID = "DRA413"
ATTRIBUTE_VALUE_INVALID = "DRA414"
PARTITION_TYPE_INVALID = "DRA428"

_ATTRIBUTE_SCALARS = ("bool", "int", "string", "version")
ATTRIBUTE_LISTS = ("bools", "ints", "strings", "versions")

# validateMap's key length for attributes and capacities: domain (63) + '/' + identifier (32).
_MAX_KEY_LENGTH = 63 + 1 + 32


def plainly_valid(attribute: Any, max_len: int) -> bool:
    """True for an attribute with exactly one valid int, bool, short string or version (the common case)."""
    if type(attribute) is not dict or len(attribute) != 1:
        return False
    for kind, value in attribute.items():
        if kind == "string":  # a character takes at most 4 bytes in UTF-8: encode only near the limit
            return isinstance(value, str) and (len(value) * 4 <= max_len or len(value.encode()) <= max_len)
        if kind == "int" or kind == "bool":
            return value is not None
        if kind == "version":
            return isinstance(value, str) and len(value) * 4 <= max_len and is_semver(value)
    return False


def value_count(attribute: Any) -> int:
    """The number of values an attribute holds toward the per-device limit (each item of a list counts)."""
    if not isinstance(attribute, dict):
        return 1
    lists = sum(len(attribute[k]) for k in ATTRIBUTE_LISTS if isinstance(attribute.get(k), list))
    return lists or 1


def key_errors(ctx: CheckContext, key: str) -> list[tuple[str, str]]:
    """An attribute or capacity key's errors; the map's own length check also catches the names with
    several slashes that 1.33-1.37 otherwise accept unchecked."""
    errors = qualified_attribute_errors(key, multi_slash_ok=ctx.limits.multi_slash_names)
    if not errors and len(key) > _MAX_KEY_LENGTH:
        errors = [("TooLong", f"may not be more than {_MAX_KEY_LENGTH} bytes")]
    return errors


def qualified_key_problems(ctx: CheckContext, key: str, map_path: FieldPath, what: str) -> Iterator[Problem]:
    """An attribute or capacity key that is not a valid qualified name, reported at the map."""
    # The server reports the map (the finding's field); the position is the bad key itself.
    key_path = map_key(ctx.limits, map_path, key, _MAX_KEY_LENGTH)
    for kind, msg in key_errors(ctx, key):
        yield Problem(ATTRIBUTE_NAME_INVALID, key_path,
                      f"{what} name {key!r} is not valid: {msg}; use a C identifier of at most 32 characters, "
                      f"optionally prefixed by a domain ({_name_hint(key)}) (API server: {ERROR_WORDS[kind]})",
                      at=map_path.child(key))


def _name_hint(key: str) -> str:
    """A valid spelling of ``key`` (``gpu.example.com/pcie-root`` → ``gpu.example.com/pcieRoot``), and
    for a PCIe root the standard attribute every driver can publish."""
    domain, _, name = key.partition("/") if "/" in key else ("", "", key)
    words = [w for w in re.split(r"[^A-Za-z0-9_]+", name) if w]
    fixed = (words[0] + "".join(w[:1].upper() + w[1:] for w in words[1:])) if words else "model"
    hint = f"e.g. {domain + '/' if domain else ''}{fixed}"
    if fixed.lower() == "pcieroot":
        hint += "; for the PCIe root, use the standard attribute `resource.kubernetes.io/pcieRoot`"
    return hint


def attribute_problems(attribute: Any, path: FieldPath, ctx: CheckContext) -> Iterator[Problem]:
    """One attribute that is not ``plainly_valid``: its value, lengths, versions and lists."""
    if not isinstance(attribute, dict):
        return
    max_len = ctx.limits.attribute_value_length
    present = [k for k in _ATTRIBUTE_SCALARS + ATTRIBUTE_LISTS if attribute.get(k) is not None]
    string = attribute.get("string")
    if isinstance(string, str) and len(string.encode()) > max_len:
        yield _too_long_value(path.child("string"), len(string.encode()), max_len)
    version = attribute.get("version")
    if isinstance(version, str):
        yield from _version(version, path.child("version"), max_len)
    for name in ATTRIBUTE_LISTS:
        items = attribute.get(name)
        if items is None or not isinstance(items, list):
            continue
        if not items:
            yield Problem(ATTRIBUTE_VALUE_INVALID, path.child(name),
                          f"`{name}` is an empty list; a list attribute must have at least one value, or be left out "
                          "(API server: Invalid value, \"must not be empty if specified\")")
        for j, item in enumerate(items):
            if name == "strings" and isinstance(item, str) and len(item.encode()) > max_len:
                yield _too_long_value(path.child(name, j), len(item.encode()), max_len)
            elif name == "versions" and isinstance(item, str):
                yield from _version(item, path.child(name, j), max_len)
    if len(present) != 1:
        kinds = ", ".join(_ATTRIBUTE_SCALARS + (ATTRIBUTE_LISTS if ctx.gate("DRAListTypeAttributes") else ()))
        found = f"found {', '.join(present)}" if present else "found none"
        yield Problem(ATTRIBUTE_VALUE_INVALID, path,
                      f"an attribute holds exactly one value ({found}); set exactly one of {kinds} (API server: "
                      "Invalid value, \"exactly one value must be specified\")")


def _too_long_value(path: FieldPath, size: int, limit: int) -> Problem:
    return Problem(ATTRIBUTE_VALUE_INVALID, path,
                   f"the value is {size} bytes long; at most {limit} bytes are allowed for attribute strings and "
                   "versions: shorten it (API server: Too long)", details={"size": size, "limit": limit})


def _version(value: str, path: FieldPath, limit: int) -> Iterator[Problem]:
    if not is_semver(value):
        hint = f" (drop the leading 'v': {value[1:]!r})" if value[:1] in "vV" and is_semver(value[1:]) else ""
        yield Problem(ATTRIBUTE_VALUE_INVALID, path,
                      f"version {value!r} is not a semantic version (semver.org 2.0.0: MAJOR.MINOR.PATCH with "
                      f"optional -prerelease and +build){hint}; for free text use `string` (API server: Invalid value)")
    if len(value.encode()) > limit:
        yield _too_long_value(path, len(value.encode()), limit)


def partition_type_problems(ctx: CheckContext, spec: dict) -> Iterator[Problem]:
    """``spec.partitionTypeAttribute`` (1.37, DRAPartitionableDevicesType): the string attribute that
    names each partition's type, so ResourcePoolStatusRequests can summarise partitions by type.

    Validation read at kubernetes/kubernetes pkg/apis/resource/validation/validation.go
    @ 009801d930e2e3c8b3671a3ec28e31a2f64865ac; the type's declarative tags forbid the field while
    the gate is off (it is not dropped).
    """
    name, path = spec["partitionTypeAttribute"], p("spec", "partitionTypeAttribute")
    if not ctx.gate("DRAPartitionableDevicesType"):
        yield Problem(PARTITION_TYPE_INVALID, path,
                      f"`partitionTypeAttribute` needs feature gate DRAPartitionableDevicesType, which is off in "
                      f"Kubernetes {ctx.release.version} (alpha); enable it (and pass --feature-gates "
                      "DRAPartitionableDevicesType=true) or remove the field (API server: Forbidden)")
        return
    if not isinstance(name, str):
        return
    errors = qualified_attribute_errors(name, fully_qualified=True, multi_slash_ok=ctx.limits.multi_slash_names)
    for _, msg in errors[:1]:
        yield Problem(PARTITION_TYPE_INVALID, path, f"{name!r} is not a fully qualified attribute name: {msg} (API "
                                                    "server: Invalid value)")
    if errors:
        return
    devices = spec.get("devices")
    consuming = [(i, d) for i, d in enumerate(devices if isinstance(devices, list) else ())
                 if isinstance(d, dict) and d.get("consumesCounters")]
    if not consuming:
        yield Problem(PARTITION_TYPE_INVALID, path,
                      "`partitionTypeAttribute` is only allowed in a slice whose devices consume counters "
                      "(partitions); remove it (API server: Invalid value)")
        return
    domain, _, short = name.partition("/")
    driver = spec.get("driver")
    for i, device in consuming:
        attributes = given if isinstance(given := device.get("attributes"), dict) else {}
        # A bare name stands for the driver's own domain.
        key = name if name in attributes else short if domain == driver and short in attributes else None
        where = p("spec", "devices", i, "attributes").key(name)
        if key is None:
            yield Problem(PARTITION_TYPE_INVALID, where,
                          f"this device consumes counters, so it must carry the partition type attribute {name!r} "
                          "(API server: Required value)")
        elif not (isinstance(attributes[key], dict) and isinstance(attributes[key].get("string"), str)):
            yield Problem(PARTITION_TYPE_INVALID, p("spec", "devices", i, "attributes").key(key),
                          f"the partition type attribute {name!r} must be a string attribute (API server: Invalid "
                          "value)")
