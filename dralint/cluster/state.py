"""The cluster state a run judges against, listed from the API server instead of read from files.

:func:`list_cluster` lists what ``--cluster`` files would hold (DeviceClasses, ResourceSlices, Nodes,
Namespaces, ResourceClaims, DeviceTaintRules where served), each resource.k8s.io kind in the newest
version the server serves it in, and reads the server's release from ``/version``. The engine gets
the objects as cluster files (:meth:`ClusterSnapshot.source_files`), so it judges them exactly as it
judges a dump of the same objects.

What a resource that cannot be listed costs (docs/live-cluster.md):

* **Essential**: DeviceClasses, ResourceSlices and Nodes. Without them every claim would be judged
  against a cluster without devices, classes or nodes: false findings. Their failure ends the run.
* **Optional**: Namespaces (admin-access labels), ResourceClaims (devices already allocated) and
  DeviceTaintRules. Without them a run still judges, a little too kindly (a device taken or
  tainted looks free); the problem is reported and the run goes on.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from ..kube.releases import NEWEST_MINOR, OLDEST_MINOR
from ..source import SourceDocument, SourceFile
from .api import Api, ApiError, Listing, Unreachable, list_all
from .discovery import server_minor, served_versions

GROUP = "resource.k8s.io"


@dataclass(frozen=True)
class Resource:
    """One kind of cluster object a run lists."""

    name: str          # the plural, as RBAC and URLs spell it
    group: str         # "" for the core group
    essential: bool    # without it a run would judge falsely: its failure ends the run
    loses: str = ""    # what a run without it no longer sees (optional resources)

    @property
    def permission(self) -> str:
        """``resourceslices.resource.k8s.io`` (core resources by their plural alone), as RBAC names them."""
        return f"{self.name}.{self.group}" if self.group else self.name


RESOURCES: tuple[Resource, ...] = (
    Resource("deviceclasses", GROUP, essential=True),
    Resource("resourceslices", GROUP, essential=True),
    Resource("nodes", "", essential=True),
    Resource("namespaces", "", essential=False, loses="namespace labels (admin access) are not checked"),
    Resource("resourceclaims", GROUP, essential=False,
             loses="devices already allocated to claims count as free"),
    Resource("devicetaintrules", GROUP, essential=False, loses="devices tainted by DeviceTaintRules count as untainted"),
)


class ClusterError(Exception):
    """The cluster state cannot be listed well enough to judge against (one line, for the user)."""


@dataclass(frozen=True)
class ListProblem:
    """A resource that could not be listed, and why; ``essential`` ones end the run."""

    resource: Resource
    message: str

    @property
    def essential(self) -> bool:
        return self.resource.essential


@dataclass(frozen=True)
class ClusterSnapshot:
    """What one API server held, listed resource by resource (each list consistent on its own)."""

    server: str                                   # the API server's address
    listings: dict[str, Listing]                  # by resource name; a resource not served has none
    minor: int | None = None                      # the server's release (None: /version unreadable or not 1.x)
    git_version: str = ""                         # as /version says it, e.g. v1.36.2
    problems: tuple[ListProblem, ...] = ()        # optional resources that could not be listed
    not_served: tuple[str, ...] = ()              # resources the server does not serve (e.g. DeviceTaintRules)
    version_problem: str = ""                     # why /version gave no release ("" when it did)

    def objects(self) -> list[dict[str, Any]]:
        """Every listed object, resource by resource in :data:`RESOURCES` order, each list in its order."""
        return [obj for listing in self.listings.values() for obj in listing.items]

    def source_files(self) -> list[SourceFile]:
        """The objects as cluster files, one per listed resource; each object is named
        ``cluster:<resource>/<namespace/name>``, as the webhook names its live objects (messages
        then name a holding claim by itself, not by a file it never came from)."""
        files = []
        for name, listing in self.listings.items():
            documents = [SourceDocument(file=f"cluster:{name}/{_key(obj)}", index=0, line=0, value=obj)
                         for obj in listing.items]
            files.append(SourceFile(f"cluster:{name}", documents, []))
        return files

    def judged_minor(self) -> int | None:
        """The server's minor as dralint can judge it (a newer server as dralint's newest), None if unknown."""
        return None if self.minor is None else min(max(self.minor, OLDEST_MINOR), NEWEST_MINOR)


Progress = Callable[[str, int, int | None], None]   # (resource, objects so far, objects left or None)


def list_cluster(api: Api, release_hint: int | None = None, *, resources: tuple[Resource, ...] = RESOURCES,
                 progress: Progress | None = None) -> ClusterSnapshot:
    """List the cluster state from ``api``; raises :class:`ClusterError` when it cannot be judged against.

    ``release_hint`` is the release the user asked for (None: the server's): with it, an unreadable
    ``/version`` is no problem at all. An essential resource that cannot be listed, a server that
    does not answer or refuses the credentials raise; an optional one is kept in ``problems``.
    """
    info, version_problem = _version(api)
    try:
        served = served_versions(api, GROUP)
    except ApiError as exc:
        raise ClusterError(refusal(api, exc, f"get /apis/{GROUP}", "discovery")) from None
    except Unreachable as exc:
        raise ClusterError(unreachable(api, exc)) from None
    listings: dict[str, Listing] = {}
    problems: list[ListProblem] = []
    not_served: list[str] = []
    for resource in resources:
        version = served.get(resource.name) if resource.group == GROUP else "v1"
        if version is None:
            if resource.essential:
                raise ClusterError(f"the API server {api.endpoint.host} does not serve {resource.permission} "
                                   "(is Dynamic Resource Allocation on?)")
            not_served.append(resource.name)
            continue
        api_version = f"{resource.group}/{version}" if resource.group else version

        def page(count: int, left: int | None, name: str = resource.name) -> None:
            if progress is not None:
                progress(name, count, left)

        try:
            listings[resource.name] = list_all(api, "/" + _path(resource.name, api_version), on_page=page)
        except Unreachable as exc:
            raise ClusterError(unreachable(api, exc)) from None
        except ApiError as exc:
            message = refusal(api, exc, f"list {resource.permission}", "cluster-wide")
            if resource.essential or exc.code == 401:
                raise ClusterError(message) from None
            problems.append(ListProblem(resource, f"{message}; {resource.loses}"))
    minor = server_minor(info) if info is not None else None
    if info is not None and minor is None:
        version_problem = f"/version names no Kubernetes 1.x release ({info.get('gitVersion') or 'no gitVersion'})"
    if release_hint is not None:
        version_problem = ""
    return ClusterSnapshot(api.endpoint.host, listings, minor,
                           str(info.get("gitVersion") or "") if info is not None else "", tuple(problems),
                           tuple(not_served), version_problem)


def _key(obj: dict[str, Any]) -> str:
    meta = obj.get("metadata")
    meta = meta if isinstance(meta, dict) else {}
    name, namespace = str(meta.get("name") or ""), meta.get("namespace")
    return f"{namespace}/{name}" if namespace else name


def _path(resource: str, api_version: str) -> str:
    """``api/v1/nodes`` or ``apis/resource.k8s.io/v1/resourceslices`` (every namespace)."""
    return f"apis/{api_version}/{resource}" if "/" in api_version else f"api/{api_version}/{resource}"


def _version(api: Api) -> tuple[dict[str, Any] | None, str]:
    """The ``/version`` body, or None and why not (a failure here is not yet the run's end)."""
    try:
        info = api.get("/version", timeout=30)
    except ApiError as exc:
        return None, f"{exc.code} {exc.reason}".strip()
    except Unreachable as exc:
        raise ClusterError(unreachable(api, exc)) from None
    if not isinstance(info, dict):
        return None, "/version is not an object"
    return info, ""


def unreachable(api: Api, exc: Unreachable) -> str:
    """One line for a server that did not answer."""
    return f"cannot reach the API server {api.endpoint.host}: {str(exc)[:300]}"


def refusal(api: Api, exc: ApiError, action: str, scope: str) -> str:
    """One line for a refused request: a 403 names the permission it lacks, as RBAC spells it."""
    if exc.code == 401:
        return (f"the API server {api.endpoint.host} refused the credentials (401 Unauthorized): log in again, or "
                "check the user of the kubeconfig context")
    if exc.code == 403:
        said = f": {exc.message[:300]}" if exc.message else ""
        return f"forbidden: dralint needs `{action}` ({scope}){said}"
    return f"{action} ({scope}): {exc}"[:500]
