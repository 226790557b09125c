"""Warm the engine before gunicorn forks: catalog, compiled schemas, checks, CEL.

Run once in the master (``preload_app``), so every worker starts with the caches filled and the
first admission request costs what the thousandth does. Only the engine's public ``review`` is
used: reviewing one object of every resource.k8s.io version and kind compiles the schemas the
target release serves; a few realistic objects run the checks and the CEL compiler.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Any

from dralint.catalog import load_catalog
from dralint.engine import review
from dralint.options import Options
from dralint.index import Index

VERSIONS = ("v1alpha1", "v1alpha2", "v1alpha3", "v1beta1", "v1beta2", "v1")
KINDS = ("ResourceClaim", "ResourceClaimTemplate", "DeviceClass", "ResourceSlice", "DeviceTaintRule",
         "ResourceClass", "PodScheduling", "PodSchedulingContext", "ResourceClaimParameters",
         "ResourceClassParameters", "ResourcePoolStatusRequest")

_CLAIM_SPEC = {"devices": {"requests": [{"name": "gpu", "exactly": {
    "deviceClassName": "gpu.example.com", "count": 1,
    "selectors": [{"cel": {"expression": 'device.driver == "gpu.example.com" && '
                                         'device.attributes["gpu.example.com"].model == "a100"'}}]}}]}}
SAMPLES: tuple[dict[str, Any], ...] = (
    {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
     "metadata": {"name": "warmup", "namespace": "warmup"}, "spec": _CLAIM_SPEC},
    {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
     "metadata": {"name": "warmup", "namespace": "warmup"}, "spec": {"spec": _CLAIM_SPEC}},
    {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "gpu.example.com"},
     "spec": {"selectors": [{"cel": {"expression": 'device.driver == "gpu.example.com"'}}]}},
    {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": "warmup"},
     "spec": {"driver": "gpu.example.com", "nodeName": "node-1", "pool": {"name": "node-1", "generation": 1,
                                                                         "resourceSliceCount": 1},
              "devices": [{"name": "gpu-0", "attributes": {"model": {"string": "a100"}},
                           "capacity": {"memory": {"value": "40Gi"}}}]}},
    {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "warmup", "namespace": "warmup"},
     "spec": {"containers": [{"name": "app", "image": "busybox", "resources": {"claims": [{"name": "gpu"}]}}],
              "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "warmup"}]}},
)


def warm_state(options: Options, cluster: Index) -> None:
    """Compute the facts a review derives from the whole cluster state (every name and driver the
    slices publish...) for a new ``cluster`` index before it serves: a tenth of a second at 5,000
    nodes, which the first review after each change of the devices would otherwise wait for.

    The samples that reference the cluster are reviewed against it without feasibility (the fleet
    view is kept apart); a failure is left for the review that meets it, as in :func:`warm`.
    """
    options = replace(options, ignore=options.ignore + ("DRA7",))
    for obj in SAMPLES:
        try:
            review(obj, None, "CREATE", "", options, cluster=cluster, name="warmup")
        except Exception:  # the same review at admission reports it through the internal-error policy
            continue


def warm(options: Options, cluster: Index | None = None) -> list[str]:
    """Review every sample and one object of each DRA version and kind.

    The catalog must load (that raises); a review that fails is returned as a message, not
    raised: the same failure at admission is answered by the internal-error policy, and the
    other kinds are still worth serving.
    """
    load_catalog()
    objects = list(SAMPLES) + [{"apiVersion": f"resource.k8s.io/{v}", "kind": k,
                                "metadata": {"name": "warmup", "namespace": "warmup"}}
                               for v in VERSIONS for k in KINDS]
    calls = [(obj, None, "CREATE", "") for obj in objects] + [(SAMPLES[0], SAMPLES[0], "UPDATE", "status")]
    failures = []
    for obj, old, operation, subresource in calls:
        try:
            review(obj, old, operation, subresource, options, cluster=cluster, name="warmup")
        except Exception as exc:  # reported to the caller, who logs it
            failures.append(f"{obj['apiVersion']} {obj['kind']} {operation}: {exc!r}")
    return failures
