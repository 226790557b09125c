"""Every deployment file parses and carries the settings the webhook depends on."""
from __future__ import annotations

from pathlib import Path

import celpy
import pytest
import yaml

from dralint.engine import Options, lint_paths
from dralint.findings import Severity
from dralint_webhook.certs import dns_names
from dralint_webhook.cli import build_parser
from dralint_webhook.manifests import (CLASSES_WEBHOOK_NAME, INJECT_CA_FROM, controller_webhook,
                                       webhook_configuration)
from dralint_webhook.store import RESOURCES

from kustomize_model import render

WEBHOOK = Path(__file__).resolve().parents[2] / "webhook"
DEPLOY = WEBHOOK / "deploy"
BASE = DEPLOY / "base"
OVERLAY = DEPLOY / "overlays" / "cert-manager"
CONTROLLERS = DEPLOY / "overlays" / "judge-status-and-slices"
COMPONENT = DEPLOY / "components" / "judge-status-and-slices"
NAMESPACE, SERVICE = "dralint", "dralint-webhook"


def docs(path: Path) -> list[dict]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d is not None]


def objects(folder: Path) -> dict[str, dict]:
    """The rendered objects of a kustomization by kind, for kinds it has once."""
    rendered = render(folder)
    kinds = [obj["kind"] for obj in rendered]
    return {obj["kind"]: obj for obj in rendered if kinds.count(obj["kind"]) == 1}


def named(folder: Path, kind: str, name: str) -> dict:
    """The rendered object ``kind``/``name`` of a kustomization."""
    found = [obj for obj in render(folder) if obj["kind"] == kind and obj["metadata"]["name"] == name]
    assert len(found) == 1, (folder, kind, name)
    return found[0]


def test_every_yaml_parses_and_every_reference_exists():
    files = sorted(DEPLOY.rglob("*.yaml"))
    assert len(files) >= 10
    for path in files:
        assert docs(path), path
    for kustomization in DEPLOY.rglob("kustomization.yaml"):
        k = docs(kustomization)[0]
        for resource in k.get("resources", []):
            assert (kustomization.parent / resource).exists(), f"{kustomization}: {resource}"
        for component in k.get("components", []):
            assert docs(kustomization.parent / component / "kustomization.yaml")[0]["kind"] == "Component"
        for gen in k.get("configMapGenerator", []):
            for f in gen["files"]:
                assert (kustomization.parent / f).is_file()


def test_namespaced_objects_live_in_the_webhooks_namespace():
    objs = objects(BASE)
    assert objs["Namespace"]["metadata"]["name"] == NAMESPACE
    for kind in ("ServiceAccount", "Service", "Deployment", "PodDisruptionBudget"):
        assert objs[kind]["metadata"]["namespace"] == NAMESPACE, kind


def container() -> dict:
    return objects(BASE)["Deployment"]["spec"]["template"]["spec"]["containers"][0]


def test_deployment_is_hardened_and_highly_available():
    deploy = objects(BASE)["Deployment"]
    spec = deploy["spec"]
    pod = spec["template"]["spec"]
    assert spec["replicas"] == 2 and spec["strategy"]["rollingUpdate"]["maxUnavailable"] == 0
    assert pod["securityContext"]["runAsNonRoot"] is True and pod["securityContext"]["runAsUser"] != 0
    assert pod["automountServiceAccountToken"] is True       # the watch reads the cluster with it
    assert pod["priorityClassName"] == objects(BASE)["PriorityClass"]["metadata"]["name"]
    c = container()
    sc = c["securityContext"]
    assert sc["readOnlyRootFilesystem"] is True and sc["allowPrivilegeEscalation"] is False
    assert sc["capabilities"]["drop"] == ["ALL"]
    assert c["resources"]["requests"]["cpu"] and c["resources"]["requests"]["memory"]
    anti = pod["affinity"]["podAntiAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"][0]["podAffinityTerm"]
    assert anti["topologyKey"] == "kubernetes.io/hostname"
    assert anti["labelSelector"]["matchLabels"] == spec["template"]["metadata"]["labels"]
    assert c["readinessProbe"]["httpGet"]["path"] == "/readyz" and c["livenessProbe"]["httpGet"]["path"] == "/healthz"
    # Probes on the plain health port, with timeouts; the startup probe never waits for the cluster's list.
    assert {c[p]["httpGet"]["port"] for p in ("readinessProbe", "livenessProbe", "startupProbe")} == {"health"}
    assert c["startupProbe"]["httpGet"]["path"] == "/healthz"
    assert all(1 <= c[p]["timeoutSeconds"] <= 3 for p in ("readinessProbe", "livenessProbe", "startupProbe"))
    # SIGTERM: the grace period covers the preStop pause and gunicorn's graceful timeout.
    assert pod["terminationGracePeriodSeconds"] > c["lifecycle"]["preStop"]["sleep"]["seconds"] + 5
    assert any(m["mountPath"] == "/tmp" for m in c["volumeMounts"])   # writable scratch under a read-only root


def test_container_arguments_are_a_valid_serve_command_with_mounted_files():
    c = container()
    args = build_parser().parse_args(c["args"])
    assert args.command == "serve" and args.workers == 2 and args.watch and args.health_port
    assert {p["name"]: p["containerPort"] for p in c["ports"]}["health"] == args.health_port
    memory = c["resources"]["limits"]["memory"]
    limit = int(memory.removesuffix("Gi")) * 1024 if memory.endswith("Gi") else int(memory.removesuffix("Mi"))
    assert 0 < args.max_worker_memory * args.workers < limit
    mounts = {m["mountPath"]: m["name"] for m in c["volumeMounts"]}
    volumes = {v["name"]: v for v in objects(BASE)["Deployment"]["spec"]["template"]["spec"]["volumes"]}
    for path in (args.cert, args.key, args.config):
        folder = str(Path(path).parent)
        assert folder in mounts, path
    assert volumes[mounts[str(Path(args.cert).parent)]]["secret"]["secretName"] == "dralint-webhook-tls"
    policy_volume = volumes[mounts[str(Path(args.config).parent)]]["configMap"]["name"]
    generator = docs(BASE / "kustomization.yaml")[0]["configMapGenerator"][0]
    assert policy_volume == generator["name"] and generator["options"]["disableNameSuffixHash"] is True
    assert Path(args.config).name in generator["files"]
    assert c["ports"][0]["containerPort"] == args.port and c["ports"][0]["name"] == "https"


def test_service_and_pdb_select_the_pods():
    objs = objects(BASE)
    labels = objs["Deployment"]["spec"]["template"]["metadata"]["labels"]
    assert objs["Service"]["spec"]["selector"] == labels
    assert objs["Service"]["spec"]["ports"][0]["port"] == 443
    assert objs["Service"]["spec"]["ports"][0]["targetPort"] == container()["ports"][0]["name"]
    assert objs["PodDisruptionBudget"]["spec"]["selector"]["matchLabels"] == labels
    assert objs["PodDisruptionBudget"]["spec"]["minAvailable"] == 1


def test_webhook_configuration_is_the_one_the_code_builds():
    # Not in the base: `apply -k` of the base (every upgrade) must never carry it without its caBundle.
    assert "ValidatingWebhookConfiguration" not in objects(BASE)
    vwc = objects(OVERLAY)["ValidatingWebhookConfiguration"]
    assert vwc == webhook_configuration(SERVICE, NAMESPACE, inject_ca_from=f"{NAMESPACE}/dralint-webhook-ca")
    for hook in vwc["webhooks"]:
        assert hook["sideEffects"] == "None" and hook["admissionReviewVersions"] == ["v1"]
        assert 1 <= hook["timeoutSeconds"] <= 10 and hook["failurePolicy"] in ("Ignore", "Fail")
        assert hook["namespaceSelector"]["matchExpressions"] == [
            {"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": [NAMESPACE, "kube-system"]}]
        assert hook["matchConditions"] and "caBundle" not in hook["clientConfig"]
        assert hook["clientConfig"]["service"]["name"] == objects(BASE)["Service"]["metadata"]["name"]
    resources = {r for hook in vwc["webhooks"] for rule in hook["rules"] for r in rule["resources"]}
    assert {"resourceclaims", "resourceclaimtemplates", "deviceclasses", "devicetaintrules", "pods"} <= resources
    # What the scheduler and drivers write is judged only where the admin opts in.
    assert not {"resourceclaims/status", "resourceslices"} & resources
    ops = {o for hook in vwc["webhooks"] for rule in hook["rules"] for o in rule["operations"]}
    assert ops == {"CREATE", "UPDATE"}


def by_name(configuration: dict) -> dict:
    """``configuration`` with its webhooks by name."""
    return {**configuration, "webhooks": {hook["name"]: hook for hook in configuration["webhooks"]}}


def policies(configuration: dict) -> dict[str, str]:
    """The failurePolicy each resource is judged under, by resource; each resource in one webhook only."""
    found = [(r, hook["failurePolicy"]) for hook in configuration["webhooks"] for rule in hook["rules"]
             for r in rule["resources"]]
    assert len({r for r, _ in found}) == len(found), found   # judged twice, the stricter policy would win
    return dict(found)


@pytest.mark.parametrize("chosen", ["Ignore", "Fail"])
def test_the_admins_failure_policy_never_reaches_what_an_incident_needs(chosen):
    # DeviceTaintRules drain broken devices, DeviceClasses come with a driver: never behind Fail, and quick.
    configuration = webhook_configuration(SERVICE, NAMESPACE, "QlVORExF", failure_policy=chosen, controllers=True)
    assert policies(configuration) == {
        "resourceclaims": chosen, "resourceclaimtemplates": chosen, "pods": chosen,
        "deviceclasses": "Ignore", "devicetaintrules": "Ignore",
        "resourceclaims/status": "Ignore", "resourceslices": "Ignore"}
    hooks = {h["name"]: h for h in configuration["webhooks"]}
    assert hooks[CLASSES_WEBHOOK_NAME]["timeoutSeconds"] <= 2
    # The claims' webhooks keep 0.4.0's names: applies merge webhooks by name, so an upgrade changes them in
    # place, and an admin's patch naming them still means claims and Pods.
    assert list(hooks)[:2] == ["resources.dralint.dev", "pods.dralint.dev"]
    # Cluster-scoped, both: no namespaceSelector exempts them, so only the failurePolicy keeps them writable.
    assert all(rule["scope"] == "*" for rule in hooks[CLASSES_WEBHOOK_NAME]["rules"])


def _condition(hook: dict) -> celpy.Runner:
    env = celpy.Environment()
    return env.program(env.compile(hook["matchConditions"][0]["expression"]))


def _matches(runner: celpy.Runner, operation: str, obj: dict, old: dict | None = None, sub: str = "") -> bool:
    return bool(runner.evaluate({"request": celpy.json_to_cel({"operation": operation, "subResource": sub}),
                                 "object": celpy.json_to_cel(obj), "oldObject": celpy.json_to_cel(old)}))


def test_match_conditions_skip_what_need_not_be_checked():
    claims, pods, classes = webhook_configuration(SERVICE, NAMESPACE)["webhooks"]
    assert classes["matchConditions"] == claims["matchConditions"]
    skip = _condition(claims)
    spec = {"devices": {"requests": []}}
    labelled = {"metadata": {"labels": {"a": "b"}}, "spec": spec}
    assert _matches(skip, "CREATE", labelled)
    assert not _matches(skip, "UPDATE", labelled, {"metadata": {}, "spec": spec})          # finalizers, labels
    assert _matches(skip, "UPDATE", {"spec": {"devices": {}}}, {"spec": spec})            # a spec change
    assert _matches(skip, "UPDATE", {"spec": spec, "status": {}}, {"spec": spec}, "status")
    uses = _condition(pods)
    assert _matches(uses, "CREATE", {"spec": {"resourceClaims": [{"name": "gpu"}]}})
    assert not _matches(uses, "CREATE", {"spec": {"containers": []}})
    assert not _matches(uses, "CREATE", {"spec": {"resourceClaims": []}})


def test_cert_manager_overlay_signs_with_a_ca_of_its_own_and_injects_that_ca():
    selfsigned = named(OVERLAY, "Issuer", "dralint-webhook-selfsigned")
    ca = named(OVERLAY, "Certificate", "dralint-webhook-ca")
    ca_issuer = named(OVERLAY, "Issuer", "dralint-webhook-ca")
    serving = named(OVERLAY, "Certificate", "dralint-webhook-tls")
    assert selfsigned["spec"] == {"selfSigned": {}}
    # The CA: signed once by the self-signed Issuer, long-lived, its key never rotated, renewed in time.
    assert ca["spec"]["isCA"] is True and ca["spec"]["issuerRef"] == {"name": "dralint-webhook-selfsigned",
                                                                       "kind": "Issuer"}
    assert ca["spec"]["privateKey"]["rotationPolicy"] == "Never"
    assert int(ca["spec"]["duration"].removesuffix("h")) >= 5 * 8760
    assert 0 < int(ca["spec"]["renewBefore"].removesuffix("h")) < int(ca["spec"]["duration"].removesuffix("h"))
    assert ca_issuer["spec"] == {"ca": {"secretName": ca["spec"]["secretName"]}}
    # The serving certificate: from the CA Issuer, into the Secret the Deployment mounts, a new key each time.
    assert serving["spec"]["issuerRef"] == {"name": "dralint-webhook-ca", "kind": "Issuer"}
    assert serving["spec"]["dnsNames"] == dns_names(SERVICE, NAMESPACE)
    assert serving["spec"]["secretName"] == "dralint-webhook-tls" != ca["spec"]["secretName"]
    assert serving["spec"]["privateKey"]["rotationPolicy"] == "Always" and "isCA" not in serving["spec"]
    # The bundle comes from the CA, which serving renewals leave alone, never from the serving certificate.
    vwc = objects(OVERLAY)["ValidatingWebhookConfiguration"]
    assert vwc["metadata"]["annotations"] == {INJECT_CA_FROM: f"{NAMESPACE}/{ca['metadata']['name']}"}


def test_dockerfile_runs_the_same_command_as_non_root():
    text = (WEBHOOK / "Dockerfile").read_text()
    user = [line.split()[1] for line in text.splitlines() if line.startswith("USER ")]
    assert user and user[-1].split(":")[0] not in ("0", "root")
    assert 'ENTRYPOINT ["dralint-webhook"]' in text and '"serve"' in text
    assert "[webhook]" in text and ".whl" in text


@pytest.mark.parametrize("folder", [BASE, OVERLAY, CONTROLLERS, COMPONENT])
def test_dralint_finds_no_errors_in_its_own_deployment(folder):
    result = lint_paths([str(folder)], Options())
    assert [f for f in result.findings if f.severity is Severity.ERROR] == []


def test_the_opt_in_component_judges_status_and_slices_and_can_never_block_them():
    component = docs(COMPONENT / "kustomization.yaml")[0]
    assert component["kind"] == "Component" and [set(p) for p in component["patches"]] == [{"patch"}]
    # A strategic merge patch naming the configuration: merged by the webhook's name wherever it is listed.
    patch = yaml.safe_load(component["patches"][0]["patch"])
    assert patch == {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
                     "metadata": {"name": "dralint"}, "webhooks": [controller_webhook(SERVICE, NAMESPACE)]}
    hook = patch["webhooks"][0]
    assert hook["failurePolicy"] == "Ignore" and hook["timeoutSeconds"] <= 2
    assert set(hook["rules"][0]["resources"]) == {"resourceclaims/status", "resourceslices"}
    # The overlay is the cert-manager overlay and the component, its bundle injected too; without
    # cert-manager, `certs --judge-status-and-slices`.
    # (kustomize puts a patch's new list elements first: the API server calls validating webhooks in
    # parallel, so their order means nothing.)
    assert docs(CONTROLLERS / "kustomization.yaml")[0]["components"] == ["../../components/judge-status-and-slices"]
    assert by_name(objects(CONTROLLERS)["ValidatingWebhookConfiguration"]) == by_name(webhook_configuration(
        SERVICE, NAMESPACE, inject_ca_from=f"{NAMESPACE}/dralint-webhook-ca", controllers=True))


def test_rbac_reads_exactly_what_the_watch_lists():
    role = [d for d in docs(BASE / "rbac.yaml") if d["kind"] == "ClusterRole"][0]
    granted = {(g, r, v) for rule in role["rules"] for g in rule["apiGroups"] for r in rule["resources"]
               for v in rule["verbs"]}
    assert granted == {(group, name, verb) for name, group, *_ in RESOURCES for verb in ("get", "list", "watch")}
    binding = [d for d in docs(BASE / "rbac.yaml") if d["kind"] == "ClusterRoleBinding"][0]
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": SERVICE, "namespace": NAMESPACE}]


def test_network_policy_opens_the_webhook_and_health_ports_only():
    policy = objects(BASE)["NetworkPolicy"]["spec"]
    ports = {p["port"] for rule in policy["ingress"] for p in rule["ports"]}
    assert ports == {8443, 8081} and set(policy["policyTypes"]) == {"Ingress", "Egress"}
    assert policy["podSelector"]["matchLabels"] == objects(BASE)["Deployment"]["spec"]["template"]["metadata"]["labels"]
