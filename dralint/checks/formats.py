"""Name and value formats of the DRA kinds (driver, pool and attribute names, versions, UIDs) and of
core's extended resource names, built on apimachinery's validation in :mod:`dralint.kube.validation`.

Each ``*_errors`` function returns what the API server would report (empty = valid), so checks can
quote it.
"""
from __future__ import annotations

import re
import sys
import uuid

from ..bounded_cache import bounded_cache
from ..kube.validation import DNS1123_SUBDOMAIN_INVALID, DNS1123_SUBDOMAIN_REGEXP, is_c_identifier, is_qualified_name

_SEMVER_P = r"(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)"
SEMVER = re.compile(r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"
                    rf"(?:-{_SEMVER_P}(?:\.{_SEMVER_P})*)?(?:\+[0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*)?$")


def driver_name_errors(value: str) -> list[tuple[str, str]]:
    """(error type, message) pairs for a DRA driver name: required, ≤ 63, DNS subdomain ignoring case."""
    if not value:
        return [("Required", "a driver name is required")]
    errs = []
    if len(value) > 63:
        errs.append(("TooLong", "may not be more than 63 bytes"))
    if not DNS1123_SUBDOMAIN_REGEXP.match(value.lower()):
        errs.append(("Invalid", DNS1123_SUBDOMAIN_INVALID))
    return errs


def pool_name_errors(value: str) -> list[tuple[str, str]]:
    """(error type, message) pairs for a pool name: required, ≤ 253, '/'-separated DNS subdomains."""
    if not value:
        return [("Required", "a pool name is required")]
    errs = []
    if len(value) > 253:
        errs.append(("TooLong", "may not be more than 253 bytes"))
    for part in value.split("/"):
        if not DNS1123_SUBDOMAIN_REGEXP.match(part):
            errs.append(("Invalid", DNS1123_SUBDOMAIN_INVALID))
            break
    return errs


def c_identifier_errors(value: str, max_length: int = 32) -> list[tuple[str, str]]:
    """(error type, message) pairs for a DRA attribute identifier: ``IsCIdentifier`` within ``max_length``."""
    errs = []
    if len(value) > max_length:
        errs.append(("TooLong", f"may not be more than {max_length} bytes"))
    errs += [("Invalid", msg) for msg in is_c_identifier(value)]
    return errs


def qualified_attribute_errors(value: str, *, fully_qualified: bool = False,
                               multi_slash_ok: bool = False) -> list[tuple[str, str]]:
    """Errors for a DRA attribute/capacity name: ``id`` or ``domain/id`` (domain validated as a driver name).

    ``multi_slash_ok``: the release's server accepts a name with two or more slashes unchecked
    (up to 1.37 the declarative ``resourcesQualifiedName`` switches on the number of parts and has no
    case for more than two; 1.38 refuses them, kubernetes#141644), or the name is stored already in a
    field the update leaves unchanged (Limits.multi_slash_names, checks.ratchet).
    """
    return list(_qualified_attribute_errors(value, fully_qualified, multi_slash_ok))


# Every device of a driver repeats the same few names. Caller names may be long and messages quote
# them, so bytes bound it.
ATTRIBUTE_NAME_CACHE_BYTES = 2 << 20


@bounded_cache(ATTRIBUTE_NAME_CACHE_BYTES, lambda value, *_: 3 * sys.getsizeof(value) + 512)
def _qualified_attribute_errors(value: str, fully_qualified: bool, multi_slash_ok: bool) -> tuple[tuple[str, str], ...]:
    return tuple(_attribute_name_errors(value, fully_qualified, multi_slash_ok))


def _attribute_name_errors(value: str, fully_qualified: bool, multi_slash_ok: bool) -> list[tuple[str, str]]:
    if fully_qualified and "/" not in value:
        return [("Invalid", "a fully qualified name must be a domain and a name separated by a slash")]
    parts = value.split("/")
    if len(parts) > 2:
        return [] if multi_slash_ok else [("Invalid", "a qualified name must not contain more than one slash")]
    if len(parts) == 2:
        domain, name = parts
        errs: list[tuple[str, str]] = []
        if not domain:
            errs.append(("Invalid", "the domain must not be empty"))
        else:
            errs += [e for e in driver_name_errors(domain) if e[0] != "Required"]
        errs += [("Invalid", "the name must not be empty")] if not name else c_identifier_errors(name)
        return errs
    if not value:
        return [("Invalid", "the name must not be empty")]
    return c_identifier_errors(value)


def is_semver(value: str) -> bool:
    return bool(SEMVER.match(value))


def is_uuid(value: str) -> bool:
    """A canonical lower-case RFC 4122 UUID of exactly 36 characters."""
    if len(value) != 36:
        return False
    try:
        return str(uuid.UUID(value)) == value
    except ValueError:
        return False


def extended_resource_name_errors(value: str) -> list[str]:
    """core ``IsExtendedResourceName``: not a native resource (it has a domain outside kubernetes.io), not
    ``requests.*``, and ``requests.<name>`` is a valid qualified name (it must work as a quota name)."""
    if "/" not in value or "kubernetes.io/" in value:
        return ["must be a fully-qualified name outside the kubernetes.io domain (e.g. example.com/gpu)"]
    if value.startswith("requests."):
        return ["must not start with 'requests.'"]
    if is_qualified_name("requests." + value):
        return ["'requests.' + name must be a valid qualified name for use as a quota resource name"]
    return []
