"""The core/v1 fields through which pod specs use DRA, as the API server decodes them.

A pod spec's ``resourceClaims`` (``PodResourceClaim``) and each container's
``resources.claims`` (``ResourceClaim``) are decoded strictly like every other field: an unknown
field or a value of the wrong type fails the whole request (HTTP 400). dralint does not ship
the schema of the whole Pod, so these two small structs are described here, in the generated
schemas' dialect, from the core/v1 Go types (``PodResourceClaim``: ``name``,
``resourceClaimName``, ``resourceClaimTemplateName`` — under ``source`` before 1.31;
``ResourceClaim``: ``name``, and ``request`` from 1.31, when claims got several requests).
"""
from __future__ import annotations

from functools import lru_cache
from typing import Any, Iterator, Mapping

from ..kube.shapes import CONTAINER_LISTS, FLAT_SOURCE_SINCE
from ..paths import FieldPath
from .compiler import Compiled, compile_schema
from .decode import decode_with
from .problems import SchemaProblem


_STRING = {"type": ["null", "string"]}


def _struct(**fields: Any) -> dict[str, Any]:
    return {"type": ["null", "object"], "properties": fields, "additionalProperties": False}


def _pod_claims(minor: int) -> dict[str, Any]:
    sources = {"resourceClaimName": _STRING, "resourceClaimTemplateName": _STRING}
    entry = _struct(name=_STRING, **sources) if minor >= FLAT_SOURCE_SINCE else \
        _struct(name=_STRING, source=_struct(**sources))
    return {"type": ["null", "array"], "items": entry}


_CONTAINER_CLAIMS = {"type": ["null", "array"], "items": _struct(name=_STRING, request=_STRING)}
# Before 1.31 a container names a whole claim: there are no requests to pick from yet.
_OLD_CONTAINER_CLAIMS = {"type": ["null", "array"], "items": _struct(name=_STRING)}


@lru_cache(maxsize=4)
def _checkers(flat: bool) -> tuple[Compiled, Compiled]:
    return (compile_schema(_pod_claims(FLAT_SOURCE_SINCE if flat else 0)),
            compile_schema(_CONTAINER_CLAIMS if flat else _OLD_CONTAINER_CLAIMS))


def claim_fields(spec: Mapping[str, Any]) -> Iterator[tuple[FieldPath, Any, str]]:
    """(path below the pod spec, value, "pod" | "container") of every DRA claim list in a pod spec."""
    if "resourceClaims" in spec:
        yield FieldPath(("resourceClaims",)), spec["resourceClaims"], "pod"
    for lst in CONTAINER_LISTS:
        containers = spec.get(lst)
        for c, container in enumerate(containers if isinstance(containers, list) else ()):
            resources = container.get("resources") if isinstance(container, dict) else None
            if isinstance(resources, dict) and "claims" in resources:
                yield FieldPath((lst, c, "resources", "claims")), resources["claims"], "container"


def validate_claims(spec: Mapping[str, Any], minor: int, *, strict: bool = True) -> list[SchemaProblem]:
    """What the decoder refuses in a pod spec's claim lists; paths below the pod spec."""
    pod_checker, container_checker = _checkers(minor >= FLAT_SOURCE_SINCE)
    problems: list[SchemaProblem] = []
    for path, value, which in claim_fields(spec):
        checker = pod_checker if which == "pod" else container_checker
        # An explicit null is the decoder's "absent" (the list stays nil), as below the top of the list.
        if type(value) not in checker.fast and not checker.valid(value):
            checker.check(value, tuple(path), problems)
    return [p for p in problems if strict or p.kind != "unknown-field"]


def decode_claims(spec: dict) -> dict:
    """The pod spec with the nulls of its claim lists resolved (``- null`` is an empty entry)."""
    out = spec
    for path, value, which in claim_fields(spec):
        schema = _pod_claims(FLAT_SOURCE_SINCE) if which == "pod" else _CONTAINER_CLAIMS
        fixed = decode_with(value, schema, {})
        if fixed != value:
            out = _set(out, tuple(path), fixed)
    return out


def _set(value: Any, path: tuple, new: Any) -> Any:
    """A copy of ``value`` with ``path`` set to ``new``; only the containers on the path are copied."""
    head, rest = path[0], path[1:]
    out = list(value) if isinstance(value, list) else dict(value)
    out[head] = new if not rest else _set(value[head], rest, new)
    return out
