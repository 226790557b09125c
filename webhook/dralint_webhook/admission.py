"""Read an ``admission.k8s.io/v1`` AdmissionReview request body into a typed record.

Only what the webhook needs is kept. Anything that is not a well-formed AdmissionReview raises
:class:`BadReview` with the HTTP status the client gets (400, or 413 for a body over the limit);
the message is safe to show to the caller.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Mapping

from dralint import gojson

API_VERSION = "admission.k8s.io/v1"
KIND = "AdmissionReview"
# What an API server can send: the object of a request (at most 3 MiB, its request-body limit) and,
# for an UPDATE, the stored object (at most 1.5 MiB, etcd's request limit), both written by Go's
# encoding/json, which escapes `<`, `>`, `&`, U+2028 and U+2029 as six bytes (`\u003c`): an object
# of 830 KB of such characters arrives as a 5 MB review. Anything larger is not from an API server.
MAX_OBJECT_BYTES = 3 * 1024 * 1024
MAX_STORED_BYTES = 3 * 1024 * 1024 // 2
JSON_ESCAPE_FACTOR = 6
MAX_BODY_BYTES = (MAX_OBJECT_BYTES + MAX_STORED_BYTES) * JSON_ESCAPE_FACTOR + 1024 * 1024
OPERATIONS = frozenset({"CREATE", "UPDATE", "DELETE", "CONNECT"})


class BadReview(ValueError):
    """A request body that is not an AdmissionReview the webhook can answer."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class GroupVersionKind:
    group: str
    version: str
    kind: str

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    def render(self) -> str:
        """``ResourceClaim.resource.k8s.io/v1`` (core kinds: ``Pod/v1``)."""
        return f"{self.kind}.{self.group}/{self.version}" if self.group else f"{self.kind}/{self.version}"


@dataclass(frozen=True)
class UserInfo:
    """Who made the request, as the API server authenticated them (``request.userInfo``), for the log."""

    username: str = ""
    groups: tuple[str, ...] = ()


@dataclass(frozen=True)
class AdmissionRequest:
    """The parts of ``AdmissionReview.request`` the webhook judges with."""

    uid: str
    kind: GroupVersionKind
    resource: str
    sub_resource: str
    operation: str
    namespace: str
    name: str
    obj: Mapping[str, Any] | None
    old_obj: Mapping[str, Any] | None
    dry_run: bool
    user: UserInfo = UserInfo()

    @property
    def display(self) -> str:
        """``ResourceClaim ml/train`` for messages and logs."""
        name = self.name or _meta(self.obj, "name") or _meta(self.obj, "generateName") or "<unnamed>"
        return f"{self.kind.kind} {self.namespace}/{name}" if self.namespace else f"{self.kind.kind} {name}"


def parse_review(body: bytes) -> AdmissionRequest:
    """Parse a request body; raises :class:`BadReview` for anything that is not a v1 AdmissionReview."""
    if len(body) > MAX_BODY_BYTES:
        raise BadReview(f"request body is {len(body)} bytes; the limit is {MAX_BODY_BYTES}", 413)
    try:
        # Read as Go reads it: a claim's opaque parameters reach us verbatim, as deep as 10,000 levels
        # or with a lone surrogate escape, and the API server admits them; refusing such a body would
        # count as a failed call and let the object through unjudged.
        review = gojson.loads(body)
    except gojson.GoJSONError as exc:
        raise BadReview(f"request body is not JSON: {_cut(str(exc), 200)}") from None
    if not isinstance(review, dict):
        raise BadReview("request body is not a JSON object")
    if review.get("apiVersion") != API_VERSION or review.get("kind") != KIND:
        raise BadReview(f"expected apiVersion {API_VERSION} and kind {KIND}, got "
                        f"{_short(review.get('apiVersion'))} {_short(review.get('kind'))}")
    request = review.get("request")
    if not isinstance(request, dict):
        raise BadReview("AdmissionReview has no request object")
    uid = request.get("uid")
    if not isinstance(uid, str) or not uid:
        raise BadReview("request.uid is missing")
    operation = request.get("operation")
    if operation not in OPERATIONS:
        raise BadReview(f"request.operation {_short(operation)} is not one of {', '.join(sorted(OPERATIONS))}")
    kind = request.get("kind")
    if not isinstance(kind, dict) or not isinstance(kind.get("kind"), str):
        raise BadReview("request.kind is missing")
    obj, old = request.get("object"), request.get("oldObject")
    for label, value in (("object", obj), ("oldObject", old)):
        if value is not None and not isinstance(value, dict):
            raise BadReview(f"request.{label} is not an object")
    if operation == "UPDATE" and obj is not None and old is None:
        # The API server always sends the stored object with an UPDATE; without it the update rules
        # (immutability) cannot be judged, and allowing it unjudged would be a way around them.
        raise BadReview("request.oldObject is missing (an UPDATE always carries the stored object)")
    resource = request.get("resource")
    return AdmissionRequest(
        uid=uid,
        kind=GroupVersionKind(_text(kind.get("group")), _text(kind.get("version")), kind["kind"]),
        resource=_text(resource.get("resource")) if isinstance(resource, dict) else "",
        sub_resource=_text(request.get("subResource")),
        operation=operation,
        namespace=_text(request.get("namespace")),
        name=_text(request.get("name")),
        obj=obj,
        old_obj=old,
        dry_run=request.get("dryRun") is True,
        user=_user(request.get("userInfo")),
    )


def _user(value: Any) -> UserInfo:
    """``request.userInfo`` as far as it is well-formed (the log bounds its size; the verdict never reads it)."""
    if not isinstance(value, dict):
        return UserInfo()
    groups = value.get("groups")
    return UserInfo(_text(value.get("username")),
                    tuple(g for g in groups if isinstance(g, str)) if isinstance(groups, list) else ())


def with_identity(request: AdmissionRequest, obj: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of ``obj`` with apiVersion, kind, namespace and name filled in from the request.

    On CREATE the API server sends a namespaced object without ``metadata.namespace`` when the
    client left it out (the namespace comes from the URL); the engine needs it for namespaced
    rules and references.
    """
    out = dict(obj)
    out.setdefault("apiVersion", request.kind.api_version)
    out.setdefault("kind", request.kind.kind)
    meta = out.get("metadata")
    if isinstance(meta, dict):
        meta = dict(meta)
        if request.namespace and not meta.get("namespace"):
            meta["namespace"] = request.namespace
        if request.name and not meta.get("name") and not meta.get("generateName"):
            meta["name"] = request.name
        out["metadata"] = meta
    return out


def _meta(obj: Mapping[str, Any] | None, key: str) -> str:
    meta = obj.get("metadata") if isinstance(obj, Mapping) else None
    value = meta.get(key) if isinstance(meta, dict) else None
    return value if isinstance(value, str) else ""


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _short(value: Any) -> str:
    """A caller's value quoted for an error message, cut so that a hostile body cannot inflate it."""
    return _cut(json.dumps(value) if not isinstance(value, (dict, list)) else type(value).__name__, 60)


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."
