"""The ValidatingWebhookConfiguration, built in one place.

Its ``caBundle`` has one owner per install, and no applied file that lacks it ever carries the
object: without cert-manager, ``dralint-webhook certs`` and ``dralint-webhook configuration``
write it with the bundle set (the only files that do); with cert-manager, the overlay's copy
(a test keeps it equal to this code's) has no bundle and names the CA whose certificate
cert-manager's CA injector writes in. ``webhook/deploy/base`` does not carry it at all, so
``kubectl apply -k`` of the base never touches the bundle.
"""
from __future__ import annotations

import copy
from typing import Any

WEBHOOK_CONFIGURATION_NAME = "dralint"
TIMEOUT_SECONDS = 5
DRA_RESOURCES = ("resourceclaims", "resourceclaimtemplates", "deviceclasses", "devicetaintrules")
# Written by the scheduler (allocation) and by drivers (their devices), all the time: judged only where
# the admin opts in (overlays/judge-status-and-slices), always with failurePolicy Ignore and a short
# timeout, so that an outage of the webhook never stops scheduling or a driver.
CONTROLLER_RESOURCES = ("resourceclaims/status", "resourceslices")
CONTROLLER_TIMEOUT_SECONDS = 2
CONTROLLER_WEBHOOK_NAME = "controllers.dralint.dev"
# Never judged: the webhook's own namespace (it could not come back after an outage) and kube-system.
EXCLUDED_NAMESPACES = ("kube-system",)
# Spec-less writes need no judging: finalizer and label edits, the controller's own bookkeeping.
# Status writes (the opt-in webhook) are judged; deleting objects only ever sees finalizer removals.
SKIP_METADATA_UPDATES = ("request.operation != 'UPDATE' || request.subResource == 'status' || "
                         "!has(object.spec) || !has(oldObject.spec) || object.spec != oldObject.spec")
POD_USES_CLAIMS = "has(object.spec.resourceClaims) && size(object.spec.resourceClaims) > 0"
# cert-manager's CA injector writes the ``ca.crt`` of this Certificate's Secret into every caBundle.
INJECT_CA_FROM = "cert-manager.io/inject-ca-from"


def webhook_configuration(service: str, namespace: str, ca_bundle: str | None = None, *,
                          failure_policy: str = "Ignore", port: int = 443, inject_ca_from: str | None = None,
                          controllers: bool = False) -> dict[str, Any]:
    """The ValidatingWebhookConfiguration for the webhook Service ``service`` in ``namespace``.

    ``ca_bundle`` is the base64 PEM of the CA; None leaves it out, for cert-manager's CA injector
    to fill in from the Certificate ``inject_ca_from`` ("NS/NAME"). ``controllers`` adds the opt-in
    webhook for claim status and ResourceSlices (:func:`controller_webhook`).
    """
    common = _common(service, namespace, ca_bundle, port)
    common["failurePolicy"] = failure_policy
    # Each webhook gets its own copies: YAML writers would turn shared dicts into anchors and aliases.
    dra = {"name": "resources.dralint.dev", **copy.deepcopy(common),
           "rules": [{"apiGroups": ["resource.k8s.io"], "apiVersions": ["*"], "resources": list(DRA_RESOURCES),
                      "operations": ["CREATE", "UPDATE"], "scope": "*"}],
           "matchConditions": [{"name": "skip-metadata-only-updates", "expression": SKIP_METADATA_UPDATES}]}
    pods = {"name": "pods.dralint.dev", **copy.deepcopy(common),
            "rules": [{"apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"], "operations": ["CREATE"],
                       "scope": "Namespaced"}],
            "matchConditions": [{"name": "pod-uses-resource-claims", "expression": POD_USES_CLAIMS}]}
    metadata: dict[str, Any] = {"name": WEBHOOK_CONFIGURATION_NAME,
                                "labels": {"app.kubernetes.io/name": "dralint-webhook"}}
    if inject_ca_from is not None:
        metadata["annotations"] = {INJECT_CA_FROM: inject_ca_from}
    hooks = [dra, pods]
    if controllers:
        hooks.append(controller_webhook(service, namespace, ca_bundle, port=port))
    return {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
            "metadata": metadata, "webhooks": hooks}


def controller_webhook(service: str, namespace: str, ca_bundle: str | None = None, *, port: int = 443) -> dict[str, Any]:
    """The opt-in webhook for what controllers write (claim status, slices): Ignore, short timeout."""
    common = _common(service, namespace, ca_bundle, port)
    common.update(failurePolicy="Ignore", timeoutSeconds=CONTROLLER_TIMEOUT_SECONDS)
    return {"name": CONTROLLER_WEBHOOK_NAME, **common,
            "rules": [{"apiGroups": ["resource.k8s.io"], "apiVersions": ["*"], "resources": list(CONTROLLER_RESOURCES),
                       "operations": ["CREATE", "UPDATE"], "scope": "*"}],
            "matchConditions": [{"name": "skip-metadata-only-updates", "expression": SKIP_METADATA_UPDATES}]}


def _common(service: str, namespace: str, ca_bundle: str | None, port: int) -> dict[str, Any]:
    client: dict[str, Any] = {"service": {"name": service, "namespace": namespace, "path": "/validate", "port": port}}
    if ca_bundle is not None:
        client["caBundle"] = ca_bundle
    excluded = {"matchExpressions": [{"key": "kubernetes.io/metadata.name", "operator": "NotIn",
                                      "values": [namespace, *EXCLUDED_NAMESPACES]}]}
    return {"admissionReviewVersions": ["v1"], "sideEffects": "None", "timeoutSeconds": TIMEOUT_SECONDS,
            "failurePolicy": "Ignore", "matchPolicy": "Equivalent", "clientConfig": client,
            "namespaceSelector": excluded}
