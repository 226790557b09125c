"""The shapes of the ``resource.k8s.io`` API per version: one table, read by every stage.

Conversion, reshaping, the checks, the fixers, migration and the webhook all ask the same few
questions (is this version's request flat, where does a kind keep its requests, which pod fields
moved when); they are answered here once, so that a new version is added in one place.
"""
from __future__ import annotations

# v1alpha1/v1alpha2 (1.26-1.30): classic DRA, another shape altogether (checks/legacy judges them).
LEGACY_VERSIONS = frozenset({"v1alpha1", "v1alpha2"})
# The structured-parameters model (1.31 on).
STRUCTURED_VERSIONS = frozenset({"v1alpha3", "v1beta1", "v1beta2", "v1"})
# Versions whose requests are flat: the fields of ``exactly`` sit on the request itself, and the
# slice spells "unset" as "" / false for nodeName / allNodes (plain Go types, not pointers).
FLAT_VERSIONS = frozenset({"v1alpha3", "v1beta1"})
# The fields a flat request carries that v1beta2 and v1 keep under ``exactly``.
FLAT_REQUEST_FIELDS = ("deviceClassName", "selectors", "allocationMode", "count", "adminAccess", "tolerations",
                       "capacity", "derivedAttributes")
# Where each kind keeps its claim spec, and inside it the device requests.
SPEC_PATHS = {"ResourceClaim": ("spec",), "ResourceClaimTemplate": ("spec", "spec")}
REQUESTS = {kind: path + ("devices", "requests") for kind, path in SPEC_PATHS.items()}
# Pod claims moved their source fields up from ``source`` in Kubernetes 1.31.
FLAT_SOURCE_SINCE = 31
CONTAINER_LISTS = ("initContainers", "containers", "ephemeralContainers")
