"""Which Kubernetes release serves which resource.k8s.io version and kind, and what the API
server says of an object it does not serve (DRA801) or serves deprecated (DRA803).

Answered from ``schemas/index.json`` (release -> apiVersion -> kinds), written by
``scripts/gen_schemas.py`` from the releases' OpenAPI documents, so the big schema files are
only opened for the kinds that are validated.
"""
from __future__ import annotations

import difflib
import json
from functools import lru_cache
from pathlib import Path
from typing import Mapping

from ..kube.releases import Release
from ..manifest import Manifest
from ..paths import FieldPath
from ..problems import Problem
from ..resources import data_path

INDEX_FILE = "index.json"


def _release_key(release: str) -> tuple[int, ...]:
    return tuple(int(part) for part in release.split("."))


@lru_cache(maxsize=1)  # no key: the index of the schemas dralint ships
def _index() -> Mapping[str, Mapping[str, frozenset[str]]]:
    raw = json.loads((data_path("schemas") / INDEX_FILE).read_text(encoding="utf-8"))
    return {release: {api_version: frozenset(kinds) for api_version, kinds in versions.items()}
            for release, versions in sorted(raw.items(), key=lambda item: _release_key(item[0]))}


def known_releases() -> list[str]:
    """Every release dralint has schemas for, oldest first (``["1.26", ..., "1.37"]``)."""
    return list(_index())


def serves(release: str, api_version: str, kind: str) -> bool:
    """Whether the API server of ``release`` serves ``kind`` in ``api_version``."""
    if not all(isinstance(arg, str) for arg in (release, api_version, kind)):
        return False
    return kind in _index().get(release, {}).get(api_version, ())


def served_releases(api_version: str, kind: str) -> list[str]:
    """The releases serving ``kind`` in ``api_version``, oldest first; empty when none does."""
    if not isinstance(api_version, str) or not isinstance(kind, str):
        return []
    return list(_serving_releases().get((api_version, kind), ()))


@lru_cache(maxsize=1)  # no key: the shipped schema index turned round, one small table
def _serving_releases() -> Mapping[tuple[str, str], tuple[str, ...]]:
    """The index turned round, (apiVersion, kind) -> releases oldest first: every served object of a
    run asks it (DRA803), and a walk over every release per object cost a tenth of reading them."""
    found: dict[tuple[str, str], list[str]] = {}
    for release, versions in _index().items():
        for api_version, kinds in versions.items():
            for kind in kinds:
                found.setdefault((api_version, kind), []).append(release)
    return {key: tuple(releases) for key, releases in found.items()}


def group_kinds(group: str) -> frozenset[str]:
    """Every kind some release serves in some version of API ``group`` (``resource.k8s.io``)."""
    return frozenset(kind for versions in _index().values() for api_version, kinds in versions.items()
                     if api_version.rpartition("/")[0] == group for kind in kinds)


# k8s.io/code-generator's prerelease-lifecycle-gen: a beta version without explicit tags is
# deprecated three minors after it was introduced and removed three minors later; the API server
# then answers each request with the warning "<group/version> <Kind> is deprecated in v1.X+,
# unavailable in v1.Y+". resource.k8s.io's betas follow it: v1beta1 (1.32) is deprecated in 1.35
# and, as the served tables show, gone in 1.38.
_BETA_DEPRECATED_AFTER = 3
_BETA_REMOVED_AFTER = 6


def deprecation(api_version: str, kind: str) -> tuple[int, int] | None:
    """The minors in which a beta ``kind`` of ``api_version`` is deprecated and unavailable; None
    for GA and alpha versions and for kinds no release serves."""
    version = api_version.rpartition("/")[2]
    releases = served_releases(api_version, kind)
    if "beta" not in version or not releases:
        return None
    introduced = _release_key(releases[0])[1]
    return introduced + _BETA_DEPRECATED_AFTER, introduced + _BETA_REMOVED_AFTER


def schema_file(release: str, api_version: str, kind: str) -> Path | None:
    """The schema file of a served kind, or None when ``release`` does not serve it."""
    if not serves(release, api_version, kind):
        return None
    version = api_version.rpartition("/")[2]
    return data_path("schemas") / release / version / f"{kind}.json"


_API_VERSION = FieldPath(("apiVersion",))


def serving(manifest: Manifest, release: Release) -> tuple[bool, Problem | None]:
    """Whether ``release`` serves the object (DRA objects must be served; others always pass), and
    what to say of it: DRA801 when it is not served, DRA803 when its served version is deprecated.
    The problem's path is the user's, under the manifest's base."""
    served = serves(release.version, manifest.api_version, manifest.kind)
    gate = release.serving_gate(manifest.kind) if served else None
    if not manifest.is_dra or (served and (gate is None or release.gate(gate))):
        return True, _deprecated(manifest, release) if served and manifest.is_dra else None
    releases = served_releases(manifest.api_version, manifest.kind)
    advice = "choose the release with --kube-version, or move to an apiVersion this release serves"
    if served:
        why = f"the API server only serves it while feature gate {gate} is on"
        advice = f"enable the gate on the cluster and pass --feature-gates {gate}=true"
    elif releases:
        span = releases[0] if len(releases) == 1 else f"{releases[0]}–{releases[-1]}"
        why = f"it is served by Kubernetes {span}"
    else:
        why = "no Kubernetes release serves it"
        close = difflib.get_close_matches(manifest.kind, sorted(group_kinds(manifest.group)), n=1)
        if close:  # a misspelt kind (`ResourceClaimTemplte`): no release or apiVersion would help
            why += f": did you mean `kind: {close[0]}`?"
            advice = f"correct the kind; {close[0]} is a kind of {manifest.group}"
    return False, Problem("DRA801", _API_VERSION, f"{manifest.api_version} {manifest.kind} is not served by "
                                                  f"Kubernetes {release.version}; {why} ({advice})")


def _deprecated(manifest: Manifest, release: Release) -> Problem | None:
    """DRA803: the API server's own warning for a served version that is deprecated at ``release``."""
    span = deprecation(manifest.api_version, manifest.kind)
    if span is None or release.minor < span[0]:
        return None
    group = manifest.api_version.rpartition("/")[0]
    return Problem("DRA803", _API_VERSION, f"{manifest.api_version} {manifest.kind} is deprecated in v1.{span[0]}+, "
                                           f"unavailable in v1.{span[1]}+ (the API server's warning); move it to "
                                           f"{group}/v1 with `dralint migrate --to v1`")
