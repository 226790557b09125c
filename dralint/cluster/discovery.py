"""What an API server says about itself: its release (``/version``) and the versions it serves.

Read by the ``dralint`` command's live cluster (:mod:`.state`) and the webhook's watcher alike.
"""
from __future__ import annotations

import re
from typing import Any, Iterable, Iterator, Mapping

from .api import Api, ApiError, Unreachable

_DIGITS = re.compile(r"\d+")
# Kubernetes orders the versions of a group GA first, then beta, then alpha, each newest first
# (apimachinery's CompareKubeAwareVersionStrings): v1 > v1beta2 > v1beta1 > v1alpha3.
_KUBE_VERSION = re.compile(r"v(\d+)(?:(alpha|beta)(\d+))?")
_STABILITY = {None: 2, "beta": 1, "alpha": 0}


def server_minor(info: Mapping[str, Any]) -> int | None:
    """The minor release an API server serves as, from its ``/version`` body (None: not 1.x).

    An API server started with ``--emulated-version`` serves the API of that older release and says
    so in ``emulationMinor`` (1.31 and later); some providers write the minor as ``"36+"``.
    """
    for major_key, minor_key in (("emulationMajor", "emulationMinor"), ("major", "minor")):
        major, minor = _DIGITS.match(str(info.get(major_key) or "")), _DIGITS.match(str(info.get(minor_key) or ""))
        if major and minor:
            return int(minor.group()) if major.group() == "1" else None
    git = re.match(r"v?1\.(\d+)\.", str(info.get("gitVersion") or ""))
    return int(git.group(1)) if git else None


def version_rank(version: str) -> tuple[int, int, int]:
    """A sort key putting the newest, most stable API version last (``v1`` above ``v1beta2``)."""
    match = _KUBE_VERSION.fullmatch(version)
    if match is None:   # not a Kubernetes-style version: below every one that is
        return (-1, 0, 0)
    major, stability, number = match.groups()
    return (_STABILITY[stability], int(major), int(number or 0))


def served_versions(api: Api, group: str) -> dict[str, str]:
    """Each resource of ``group`` the server serves (subresources left out), with the newest, most
    stable version serving it: ``{"resourceslices": "v1", "devicetaintrules": "v1alpha3", ...}``.

    A group the server does not serve at all gives ``{}``. Raises :class:`ApiError` (a 401 or 403
    on discovery) or :class:`Unreachable`.
    """
    try:
        versions = group_versions(api, group)
    except ApiError as exc:
        if exc.code == 404:
            return {}
        raise
    served: dict[str, str] = {}
    for version, names in version_resources(api, group, sorted(versions, key=version_rank, reverse=True)):
        for name in names:
            served.setdefault(name, version)
    return served


def group_versions(api: Api, group: str) -> list[str]:
    """The versions of ``group`` the server lists, in its order (the preferred first). Raises
    :class:`ApiError` (a 404 when the group is not served) or :class:`Unreachable`."""
    doc = api.get(f"/apis/{group}", timeout=30)
    entries = doc.get("versions") if isinstance(doc, dict) else None
    if not isinstance(entries, list):
        raise Unreachable(f"/apis/{group}: no list of versions")
    return [e["version"] for e in entries if isinstance(e, dict) and isinstance(e.get("version"), str) and e["version"]]


def version_resources(api: Api, group: str, versions: Iterable[str]) -> Iterator[tuple[str, list[str]]]:
    """Each of ``versions`` with the resources it serves (subresources left out), asked one by one
    as the caller goes on; a version gone since it was listed (a restart in between) is skipped."""
    for version in versions:
        try:
            listing = api.get(f"/apis/{group}/{version}", timeout=30)
        except ApiError as exc:
            if exc.code == 404:
                continue
            raise
        resources = listing.get("resources") if isinstance(listing, dict) else None
        names = [entry.get("name") for entry in resources if isinstance(entry, dict)] \
            if isinstance(resources, list) else []
        yield version, [name for name in names if isinstance(name, str) and "/" not in name]
