"""The ValidatingWebhookConfiguration, built in one place.

Its ``caBundle`` has one owner per install, and no applied file that lacks it ever carries the
object: without cert-manager, ``dralint-webhook certs`` and ``dralint-webhook configuration``
write it with the bundle set (the only files that do); with cert-manager, the overlay's copy
(a test keeps it equal to this code's) has no bundle and names the CA whose certificate
cert-manager's CA injector writes in. ``webhook/deploy/base`` does not carry it at all, so
``kubectl apply -k`` of the base never touches the bundle.

Its webhooks, by what an outage of dralint may cost:

* ``resources.dralint.dev`` (claims, templates) and ``pods.dralint.dev`` (Pods with claims): the
  workloads' objects, under the failurePolicy the admin chooses (``Fail`` where the organisation
  rules must always hold).
* ``classes-and-taints.dralint.dev`` (DeviceClasses, DeviceTaintRules): always ``Ignore``, with a
  short timeout, whatever the claims' policy. A DeviceTaintRule is how an admin drains broken
  devices in an incident and a DeviceClass comes with a driver's (re)install; both are
  cluster-scoped, so no namespaceSelector can exempt them either. An outage of dralint must never
  stand between the admin and the fix.
* ``controllers.dralint.dev`` (claim status, ResourceSlices): opt-in, always ``Ignore`` with a short
  timeout: the scheduler and drivers write them all the time.

Names are 0.4.0's where the webhook already existed (``resources.dralint.dev`` judged classes and
taint rules too): ``kubectl apply`` merges webhooks by name, so a kept name is changed in place,
whereas a renamed webhook is deleted only where the configuration's last applied file recorded
the old name, and would otherwise linger beside its successor with the old rules.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

WEBHOOK_CONFIGURATION_NAME = "dralint"
TIMEOUT_SECONDS = 5
# For the webhooks that must never hold anything up: a webhook that hangs delays each write by this much.
SHORT_TIMEOUT_SECONDS = 2
CLAIMS_WEBHOOK_NAME = "resources.dralint.dev"
CLAIM_RESOURCES = ("resourceclaims", "resourceclaimtemplates")
PODS_WEBHOOK_NAME = "pods.dralint.dev"
CLASSES_WEBHOOK_NAME = "classes-and-taints.dralint.dev"
CLASS_RESOURCES = ("deviceclasses", "devicetaintrules")
# Written by the scheduler (allocation) and by drivers (their devices), all the time: judged only where
# the admin opts in (components/judge-status-and-slices, or --judge-status-and-slices).
CONTROLLER_WEBHOOK_NAME = "controllers.dralint.dev"
CONTROLLER_RESOURCES = ("resourceclaims/status", "resourceslices")
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
    to fill in from the Certificate ``inject_ca_from`` ("NS/NAME"). ``failure_policy`` is that of
    the webhooks for claims, templates and Pods only; DeviceClasses and DeviceTaintRules are always
    judged with Ignore. ``controllers`` adds the opt-in webhook for claim status and ResourceSlices
    (:func:`controller_webhook`).
    """
    target = _Service(service, namespace, port, ca_bundle)
    hooks = [target.webhook(CLAIMS_WEBHOOK_NAME, _dra_rule(CLAIM_RESOURCES), _skip_metadata_updates(),
                            failure_policy=failure_policy, timeout=TIMEOUT_SECONDS),
             target.webhook(PODS_WEBHOOK_NAME, {"apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"],
                                                "operations": ["CREATE"], "scope": "Namespaced"},
                            {"name": "pod-uses-resource-claims", "expression": POD_USES_CLAIMS},
                            failure_policy=failure_policy, timeout=TIMEOUT_SECONDS),
             target.webhook(CLASSES_WEBHOOK_NAME, _dra_rule(CLASS_RESOURCES), _skip_metadata_updates(),
                            failure_policy="Ignore", timeout=SHORT_TIMEOUT_SECONDS)]
    if controllers:
        hooks.append(controller_webhook(service, namespace, ca_bundle, port=port))
    metadata: dict[str, Any] = {"name": WEBHOOK_CONFIGURATION_NAME,
                                "labels": {"app.kubernetes.io/name": "dralint-webhook"}}
    if inject_ca_from is not None:
        metadata["annotations"] = {INJECT_CA_FROM: inject_ca_from}
    return {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
            "metadata": metadata, "webhooks": hooks}


def controller_webhook(service: str, namespace: str, ca_bundle: str | None = None, *, port: int = 443) -> dict[str, Any]:
    """The opt-in webhook for what controllers write (claim status, slices): Ignore, short timeout."""
    return _Service(service, namespace, port, ca_bundle).webhook(
        CONTROLLER_WEBHOOK_NAME, _dra_rule(CONTROLLER_RESOURCES), _skip_metadata_updates(),
        failure_policy="Ignore", timeout=SHORT_TIMEOUT_SECONDS)


@dataclass(frozen=True)
class _Service:
    """The Service every webhook calls, and the CA it is verified against."""

    name: str
    namespace: str
    port: int
    ca_bundle: str | None

    def webhook(self, name: str, rule: dict[str, Any], condition: dict[str, Any], *, failure_policy: str,
                timeout: int) -> dict[str, Any]:
        """One webhook calling this Service. Each is built afresh, sharing no dict with another: YAML
        writers would turn shared ones into anchors and aliases."""
        client: dict[str, Any] = {"service": {"name": self.name, "namespace": self.namespace, "path": "/validate",
                                              "port": self.port}}
        if self.ca_bundle is not None:
            client["caBundle"] = self.ca_bundle
        excluded = {"matchExpressions": [{"key": "kubernetes.io/metadata.name", "operator": "NotIn",
                                          "values": [self.namespace, *EXCLUDED_NAMESPACES]}]}
        return {"name": name, "admissionReviewVersions": ["v1"], "sideEffects": "None", "timeoutSeconds": timeout,
                "failurePolicy": failure_policy, "matchPolicy": "Equivalent", "clientConfig": client,
                "namespaceSelector": excluded, "rules": [rule], "matchConditions": [condition]}


def _dra_rule(resources: tuple[str, ...]) -> dict[str, Any]:
    return {"apiGroups": ["resource.k8s.io"], "apiVersions": ["*"], "resources": list(resources),
            "operations": ["CREATE", "UPDATE"], "scope": "*"}


def _skip_metadata_updates() -> dict[str, Any]:
    return {"name": "skip-metadata-only-updates", "expression": SKIP_METADATA_UPDATES}
