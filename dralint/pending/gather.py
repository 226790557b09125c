"""What ``why-pending`` reads about a Pod from the API server: the Pod, its claims and their state,
and the recent events about it.

The claims come from the cluster's listing (:mod:`dralint.cluster.state` lists every ResourceClaim
for the allocator anyway); a claim a template has not yet produced is judged from its template,
read by name. Every request is a GET (one object, or a list with a field selector): the RBAC in
``docs/rbac/dralint-reader.yaml`` grants exactly these.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any, Mapping

from ..cluster.api import Api, ApiError, list_all
from ..cluster.state import ClusterSnapshot, refusal

# How many of the newest events about a Pod are shown (kubectl describe shows them all; these are
# the ones that say what the scheduler tried last).
EVENTS_SHOWN = 5


class PendingError(Exception):
    """The question cannot be answered: no such Pod, a refused request (one line, for the user)."""


@dataclass(frozen=True)
class ClaimUse:
    """One entry of the Pod's ``spec.resourceClaims``, and the claim it stands for in the cluster."""

    entry: str                         # the entry's name in the Pod (what containers name)
    claim_name: str                    # the ResourceClaim's name; "" when a template's claim is not made yet
    template: str = ""                 # resourceClaimTemplateName, when the entry names one
    claim: Mapping[str, Any] | None = None       # the stored claim (None: not in the cluster)
    template_obj: Mapping[str, Any] | None = None   # the template, read when its claim is not made yet

    @property
    def allocation(self) -> Mapping[str, Any] | None:
        status = _dict(self.claim.get("status")) if self.claim is not None else {}
        allocation = status.get("allocation")
        return allocation if isinstance(allocation, dict) else None

    @property
    def reserved_for(self) -> list[str]:
        """The consumers the claim is reserved for, as ``Pod ns/name`` (a scheduler's reservation)."""
        if self.claim is None:
            return []
        meta = _dict(self.claim.get("metadata"))
        ns = str(meta.get("namespace") or "")
        reserved = _dict(self.claim.get("status")).get("reservedFor")
        out = []
        for ref in reserved if isinstance(reserved, list) else []:
            if isinstance(ref, dict):
                kind = str(ref.get("resource") or "pods").rstrip("s").capitalize()
                out.append(f"{kind} {ns}/{ref.get('name') or '?'}")
        return out


@dataclass(frozen=True)
class Event:
    """One event about the Pod, as ``kubectl describe pod`` shows it."""

    type: str        # Normal or Warning
    reason: str      # FailedScheduling, Scheduled...
    source: str      # default-scheduler, kubelet...
    message: str
    count: int
    last: str        # the last time it happened, as the API server wrote it (RFC 3339)


@dataclass(frozen=True)
class PodCase:
    """A Pod and everything read about it."""

    pod: Mapping[str, Any]
    claims: list[ClaimUse] = field(default_factory=list)
    events: list[Event] = field(default_factory=list)
    events_problem: str = ""   # why the events could not be read ("" when they were)

    @property
    def namespace(self) -> str:
        return str(_dict(self.pod.get("metadata")).get("namespace") or "default")

    @property
    def name(self) -> str:
        return str(_dict(self.pod.get("metadata")).get("name") or "")

    @property
    def phase(self) -> str:
        return str(_dict(self.pod.get("status")).get("phase") or "Unknown")

    @property
    def node_name(self) -> str:
        return str(_dict(self.pod.get("spec")).get("nodeName") or "")


def read_pod(api: Api, namespace: str, name: str) -> dict[str, Any]:
    """The Pod ``namespace/name``; raises :class:`PendingError` when it is not there or not readable."""
    try:
        pod = api.get(f"/api/v1/namespaces/{namespace}/pods/{name}")
    except ApiError as exc:
        if exc.code == 404:
            raise PendingError(f"pod {name!r} not found in namespace {namespace!r} (give -n NAMESPACE)") from None
        raise PendingError(refusal(api, exc, "get pods", f"namespace {namespace}")) from None
    if not isinstance(pod, dict):
        raise PendingError(f"GET pod {namespace}/{name}: the answer is not an object")
    pod.setdefault("apiVersion", "v1")
    pod.setdefault("kind", "Pod")
    return pod


def pending_pods(api: Api, namespace: str | None) -> list[dict[str, Any]]:
    """Every Pending Pod that uses claims, of ``namespace`` (None: every namespace), by namespace and name."""
    path = f"/api/v1/namespaces/{namespace}/pods" if namespace else "/api/v1/pods"
    try:
        listing = list_all(api, path, {"fieldSelector": "status.phase=Pending"})
    except ApiError as exc:
        raise PendingError(refusal(api, exc, "list pods", f"namespace {namespace}" if namespace else
                                   "cluster-wide")) from None
    pods = [p for p in listing.items if _dict(p.get("spec")).get("resourceClaims")]
    return sorted(pods, key=lambda p: (str(_dict(p.get("metadata")).get("namespace")),
                                       str(_dict(p.get("metadata")).get("name"))))


def gather(api: Api, snapshot: ClusterSnapshot, pod: dict[str, Any], events: int = EVENTS_SHOWN) -> PodCase:
    """The Pod's claims as the cluster holds them, and its newest ``events``."""
    meta = _dict(pod.get("metadata"))
    namespace, name = str(meta.get("namespace") or "default"), str(meta.get("name") or "")
    stored = _claims_by_key(snapshot)
    statuses = {str(s.get("name")): s.get("resourceClaimName")
                for s in _list(_dict(pod.get("status")).get("resourceClaimStatuses")) if isinstance(s, dict)}
    claims = []
    for entry in _list(_dict(pod.get("spec")).get("resourceClaims")):
        if not isinstance(entry, dict):
            continue
        entry_name = str(entry.get("name") or "")
        direct, template = entry.get("resourceClaimName"), entry.get("resourceClaimTemplateName")
        if isinstance(direct, str) and direct:
            claims.append(ClaimUse(entry_name, direct, claim=stored.get((namespace, direct))))
        elif isinstance(template, str) and template:
            made = statuses.get(entry_name)
            if isinstance(made, str) and made:
                claims.append(ClaimUse(entry_name, made, template, claim=stored.get((namespace, made))))
            else:   # the resourceclaim controller has not made it (yet): the template tells what it will ask
                claims.append(ClaimUse(entry_name, "", template,
                                       template_obj=_template(api, snapshot, namespace, template)))
    shown, problem = _events(api, namespace, name, events)
    return PodCase(pod, claims, shown, problem)


def _claims_by_key(snapshot: ClusterSnapshot) -> dict[tuple[str, str], dict[str, Any]]:
    listing = snapshot.listings.get("resourceclaims")
    if listing is None:
        problem = next((p.message for p in snapshot.problems if p.resource.name == "resourceclaims"),
                       "the API server does not serve resourceclaims.resource.k8s.io")
        raise PendingError(f"cannot read the Pod's claims: {problem}")
    out = {}
    for claim in listing.items:
        meta = _dict(claim.get("metadata"))
        out[(str(meta.get("namespace") or ""), str(meta.get("name") or ""))] = claim
    return out


def _template(api: Api, snapshot: ClusterSnapshot, namespace: str, name: str) -> dict[str, Any] | None:
    """The ResourceClaimTemplate, in the version the claims were listed in (None: not there)."""
    api_version = snapshot.listings["resourceclaims"].api_version or "resource.k8s.io/v1"
    try:
        obj = api.get(f"/apis/{api_version}/namespaces/{namespace}/resourceclaimtemplates/{name}")
    except ApiError as exc:
        if exc.code == 404:
            return None
        raise PendingError(refusal(api, exc, "get resourceclaimtemplates.resource.k8s.io",
                                   f"namespace {namespace}")) from None
    if not isinstance(obj, dict):
        return None
    obj.setdefault("apiVersion", api_version)
    obj.setdefault("kind", "ResourceClaimTemplate")
    return obj


def _events(api: Api, namespace: str, name: str, count: int) -> tuple[list[Event], str]:
    """The newest ``count`` events about the Pod, newest first; a refusal is a note, not the end."""
    selector = f"involvedObject.name={name},involvedObject.namespace={namespace},involvedObject.kind=Pod"
    try:
        listing = list_all(api, f"/api/v1/namespaces/{namespace}/events", {"fieldSelector": selector})
    except ApiError as exc:
        return [], refusal(api, exc, "list events", f"namespace {namespace}")
    events = [_event(e) for e in listing.items]
    events.sort(key=_newest_first)
    return events[:count], ""


_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


def _newest_first(event: Event) -> tuple[int, int, str]:
    """Sort key: newest first by the instant ``event.last`` names; events without a readable time last.

    Not by the text: an Event's times come in two precisions (``lastTimestamp`` to the second,
    ``eventTime`` and ``series.lastObservedTime`` to the microsecond) and may carry an offset, so
    "10:00:00.5Z" sorts before "10:00:00Z" as text though it is later."""
    try:
        when = datetime.fromisoformat(event.last)
    except ValueError:
        return 1, 0, event.last
    if when.tzinfo is None:   # RFC 3339 always has an offset; a time without one is read as UTC
        when = when.replace(tzinfo=timezone.utc)
    return 0, -((when - _EPOCH) // timedelta(microseconds=1)), event.last


def _event(raw: Mapping[str, Any]) -> Event:
    source = _dict(raw.get("source")).get("component") or raw.get("reportingComponent") or ""
    series = _dict(raw.get("series"))
    last = (series.get("lastObservedTime") or raw.get("lastTimestamp") or raw.get("eventTime")
            or _dict(raw.get("metadata")).get("creationTimestamp") or "")
    count = raw.get("count") or series.get("count") or 1
    return Event(str(raw.get("type") or ""), str(raw.get("reason") or ""), str(source),
                 " ".join(str(raw.get("message") or "").split()), count if isinstance(count, int) else 1, str(last))


def _dict(value: Any) -> dict:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list:
    return value if isinstance(value, list) else []
