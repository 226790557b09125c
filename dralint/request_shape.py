"""Requests written in the other API version's shape: one finding that says where the fields go.

resource.k8s.io/v1 and v1beta2 put a request's device fields under ``exactly:``; v1beta1 and
v1alpha3 had them directly under the request (reshape.py: the same shapes as text edits, whose
fixes ``--fix`` attaches to these findings). Written in the other shape, strict decoding
reports every field as unknown and validation then misses ``exactly`` (three findings, none of
which says what happened). The schema stage reports one finding instead (DRA101, with the fix),
and a v1 request's "neither `exactly` nor `firstAvailable`" error (DRA206) is left out, or under
``--no-strict`` (where the server drops the fields) given the same hint.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterator

from .paths import FieldPath
from .kube.shapes import FLAT_REQUEST_FIELDS, FLAT_VERSIONS, REQUESTS

_SHOWN = 30  # characters of a value shown in the suggested fix


@dataclass(frozen=True)
class Misplaced:
    """A request (path in the object) whose ``fields`` belong to the other version's shape."""

    request: FieldPath
    name: str
    fields: tuple[str, ...]
    values: tuple[Any, ...]
    api_version: str

    @property
    def nested(self) -> bool:
        """The object's version wants the fields under ``exactly:`` (they were written flat)."""
        return self.api_version.rpartition("/")[2] not in FLAT_VERSIONS

    def paths(self) -> set[FieldPath]:
        """The fields as strict decoding reports them (unknown)."""
        return {self.request.child(f) for f in self.fields}

    def hint(self) -> str:
        """Where the fields go, with the fix written out."""
        if self.nested:
            listed = ", ".join(f"`{f}`" for f in self.fields)
            body = ", ".join(f"{f}: {_show(v)}" for f, v in zip(self.fields, self.values, strict=True))
            return (f"{listed} directly under request {self.name!r} is the v1beta1 shape: in {self.api_version} "
                    f"these fields go under `exactly:` (or into `firstAvailable` subrequests); write "
                    f"`exactly: {{{body}}}`")
        exactly = self.values[0] if isinstance(self.values[0], dict) else {}
        body = ", ".join(f"`{k}: {_show(v)}`" for k, v in exactly.items()) or "its fields"
        return (f"`exactly:` under request {self.name!r} is the shape of resource.k8s.io/v1: in {self.api_version} "
                f"the fields of `exactly` go directly under the request; write {body} there (or change apiVersion "
                "to resource.k8s.io/v1)")


def misplaced(value: Any, api_version: str, kind: str) -> list[Misplaced]:
    """The requests of a claim or template written in the other version's shape."""
    return list(_misplaced(value, api_version, kind))


def _misplaced(value: Any, api_version: str, kind: str) -> Iterator[Misplaced]:
    path = REQUESTS.get(kind)
    if path is None:
        return
    group, _, version = api_version.rpartition("/")
    if group != "resource.k8s.io":
        return
    requests: Any = value
    for segment in path:
        requests = requests.get(segment) if isinstance(requests, dict) else None
    for i, request in enumerate(requests if isinstance(requests, list) else ()):
        if not isinstance(request, dict):
            continue
        name = given if isinstance(given := request.get("name"), str) else str(i)
        where = FieldPath(path).child(i)
        if version not in FLAT_VERSIONS and "exactly" not in request and "firstAvailable" not in request:
            fields = tuple(f for f in FLAT_REQUEST_FIELDS if f in request)
            if fields:
                yield Misplaced(where, name, fields, tuple(request[f] for f in fields), api_version)
        elif version in FLAT_VERSIONS and "exactly" in request:
            yield Misplaced(where, name, ("exactly",), (request["exactly"],), api_version)


def _show(value: Any) -> str:
    if isinstance(value, (dict, list)):
        return "…"
    text = str(value).lower() if isinstance(value, bool) else str(value)
    return text if len(text) <= _SHOWN else text[:_SHOWN - 1] + "…"
