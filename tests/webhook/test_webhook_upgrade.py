"""Install and upgrade can never drop the caBundle: the admin's sequences, applied.

The blocks of webhook/README.md's "Install and upgrade" are run line by line as written:
``dralint-webhook`` through its ``main``, ``kubectl`` against models of client-side and
server-side apply (``apply_model``) with cert-manager's controllers modelled
(``certmanager_model``), and, where kubectl is installed, by the real kubectl against a fake API
server (``applyserver``), whose three-way patches must equal the model's. After every step the
bundle must verify each certificate the webhook may be serving (the Secret as the kubelet last
mounted it, and as it is now), as the API server does before a review: chain to the bundle, the
Service's DNS name, server auth, validity (cryptography's X.509 verifier). Controllers act only
after that check, so an apply that removes the bundle fails the test even where the injector
would write it back moments later. Negative controls show the models catch 0.3.1's defects.
"""
from __future__ import annotations

import base64
import copy
import datetime as dt
import json
import os
import re
import shlex
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from cryptography import x509
from cryptography.x509.verification import PolicyBuilder, Store, VerificationError

from dralint_webhook.cli import main
from dralint_webhook.manifests import CONTROLLER_WEBHOOK_NAME, controller_webhook, webhook_configuration

from apply_model import (ServerSideObject, client_side_apply, last_applied, leaves, three_way_patch,
                         with_last_applied)
from applyserver import ApplyServer
from certmanager_model import CertManager
from conftest import REPO
from kustomize_model import identity, kubectl_kustomize, load_documents, render

DEPLOY = REPO / "webhook" / "deploy"
BASE = DEPLOY / "base"
CERT_MANAGER = DEPLOY / "overlays" / "cert-manager"
CONTROLLERS = DEPLOY / "overlays" / "judge-status-and-slices"
FOLDERS = [BASE, CERT_MANAGER, CONTROLLERS]
SERVICE, NAMESPACE = "dralint-webhook", "dralint"
HOST = f"{SERVICE}.{NAMESPACE}.svc"   # the name the API server dials and checks
VWC = "ValidatingWebhookConfiguration"
INJECTOR = "cert-manager-cainjector"
KUBECTL = shutil.which("kubectl")
needs_kubectl = pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed")
# 0.4.0's configuration: two webhooks, resources.dralint.dev judging DeviceClasses and DeviceTaintRules too.
CONFIGURATION_0_4_0 = REPO / "tests" / "data" / "webhook-0.4.0-configuration.yaml"
NAMES = {hook["name"] for hook in webhook_configuration(SERVICE, NAMESPACE)["webhooks"]}


def sh_blocks(markdown: Path, heading: str, language: str = "sh") -> list[str]:
    """The ``sh`` (or ``language``) blocks of the section ``heading`` of ``markdown`` (up to the next
    heading of its level or above; the comment lines inside blocks are not headings)."""
    lines = markdown.read_text(encoding="utf-8").splitlines(keepends=True)
    level = len(heading.split()[0])
    start = lines.index(heading + "\n") + 1
    fenced = False
    for end in range(start, len(lines)):
        fenced ^= lines[end].startswith("```")
        hashes = len(lines[end]) - len(lines[end].lstrip("#"))
        if not fenced and 0 < hashes <= level and lines[end][hashes] == " ":
            break
    else:
        end = len(lines)
    return re.findall(rf"```{language}\n(.*?)```", "".join(lines[start:end]), flags=re.DOTALL)


def documented(first_line: str) -> list[str]:
    """The lines of the README's ``sh`` block that starts with ``first_line`` (a comment)."""
    blocks = [b.splitlines() for b in sh_blocks(REPO / "webhook" / "README.md", "### Install and upgrade")]
    found = [b for b in blocks if b[0].startswith(first_line)]
    assert len(found) == 1, first_line
    return found[0]


INSTALL = "# install, without cert-manager"
UPGRADE = "# upgrade, without cert-manager"
RENEW = "# renew, without cert-manager"
WITH_CERT_MANAGER = "# install and every upgrade, with cert-manager"


def verifies(configuration: dict[str, Any] | None, served: bytes) -> bool:
    """Whether the API server, calling each webhook of ``configuration``, accepts the certificate ``served``."""
    return configuration is not None and all(hook_verifies(hook, served) for hook in configuration["webhooks"])


def hook_verifies(hook: dict[str, Any], served: bytes) -> bool:
    """Whether the API server, calling ``hook``, accepts the certificate ``served``."""
    bundle = hook["clientConfig"].get("caBundle")
    if not bundle:
        return False
    leaf = x509.load_pem_x509_certificate(served)
    trusted = x509.load_pem_x509_certificates(base64.b64decode(bundle))
    # Verified as an API server would, now: the certificates were made minutes ago at most (a clock
    # read once per module went stale when the whole suite took longer than their 5-minute backdating).
    now = dt.datetime.now(dt.timezone.utc)
    if leaf in trusted:
        # Go's crypto/x509 accepts a certificate that is itself in the roots (0.3.1's self-signed one).
        names = leaf.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
        return HOST in names.get_values_for_type(x509.DNSName) and \
            leaf.not_valid_before_utc <= now <= leaf.not_valid_after_utc
    verifier = PolicyBuilder().store(Store(trusted)).time(now).build_server_verifier(x509.DNSName(HOST))
    try:
        verifier.verify(leaf, [])
    except VerificationError:
        return False
    return True


def configuration_0_4_0(ca_pem: bytes | None = None, failure_policy: str = "Ignore",
                        controllers: bool = False) -> dict[str, Any]:
    """0.4.0's configuration as its cert-manager overlay applied it (``ca_pem`` None; ``controllers``: as
    its judge-status-and-slices overlay did, with the opt-in webhook unchanged since), or as its ``certs
    --failure-policy FAILURE_POLICY`` wrote it (the bundle of ``ca_pem``)."""
    configuration = load_documents(CONFIGURATION_0_4_0)[0]
    if controllers:
        configuration["webhooks"].append(controller_webhook(SERVICE, NAMESPACE))
    for hook in configuration["webhooks"]:
        if hook["name"] != CONTROLLER_WEBHOOK_NAME:
            hook["failurePolicy"] = failure_policy
        if ca_pem is not None:
            hook["clientConfig"]["caBundle"] = base64.b64encode(ca_pem).decode("ascii")
    if ca_pem is not None:
        del configuration["metadata"]["annotations"]
    return configuration


def judged_under(configuration: dict[str, Any] | None) -> dict[str, str]:
    """The failurePolicy each resource is judged under (a resource in two webhooks: both policies)."""
    assert configuration is not None
    found: dict[str, str] = {}
    for hook in configuration["webhooks"]:
        for rule in hook["rules"]:
            for resource in rule["resources"]:
                found[resource] = "/".join(sorted({*found.get(resource, "").split("/"), hook["failurePolicy"]} - {""}))
    return found


def webhook_names(cluster: "Cluster") -> set[str]:
    configuration = cluster.get(VWC, "dralint")
    assert configuration is not None
    return {hook["name"] for hook in configuration["webhooks"]}


def tls_secret(cert: Path, key: Path) -> dict[str, Any]:
    """What ``kubectl -n dralint create secret tls dralint-webhook-tls --cert C --key K`` makes."""
    return {"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/tls",
            "metadata": {"name": "dralint-webhook-tls", "namespace": NAMESPACE},
            "data": {"tls.crt": base64.b64encode(cert.read_bytes()).decode(),
                     "tls.key": base64.b64encode(key.read_bytes()).decode()}}


def find(objects: dict[tuple[str, str, str, str], dict[str, Any]], kind: str, name: str) -> dict[str, Any] | None:
    return next((copy.deepcopy(o) for (_, k, _, n), o in objects.items() if (k, n) == (kind, name)), None)


# --- the clusters an admin's commands run against ------------------------------------------------------


class ModelCluster:
    """The API server as apply_model has it: kubectl applies client-side, or server-side as ``kubectl``.

    Client-side, cert-manager's custom resources get the same three-way patch as built-in kinds:
    kubectl sends them a JSON merge patch instead, which does the same to objects without lists
    merged by key, such as these."""

    def __init__(self, server_side: bool) -> None:
        self.server_side = server_side
        self.objects: dict[tuple[str, str, str, str], dict[str, Any]] = {}
        self.ssa: dict[tuple[str, str, str, str], ServerSideObject] = {}
        self.applied: list[dict[str, Any]] = []

    def apply_kustomization(self, folder: Path) -> None:
        self.apply(render(folder))

    def apply_file(self, path: Path) -> None:
        self.apply(load_documents(path))

    def apply(self, docs: list[dict[str, Any]]) -> None:
        for doc in docs:
            self.applied.append(copy.deepcopy(doc))
            key = identity(doc)
            if self.server_side:
                self.ssa.setdefault(key, ServerSideObject(doc["kind"])).apply("kubectl", doc)
                self.objects[key] = copy.deepcopy(self.ssa[key].live)
            else:
                self.objects[key], _ = client_side_apply(self.objects.get(key), doc)

    def write(self, obj: dict[str, Any], manager: str) -> None:
        """A create, a replace or a controller's update: the whole object, with no apply semantics."""
        key = identity(obj)
        if self.server_side:
            self.ssa.setdefault(key, ServerSideObject(obj["kind"])).update(manager, obj)
        self.objects[key] = copy.deepcopy(obj)

    def get(self, kind: str, name: str) -> dict[str, Any] | None:
        return find(self.objects, kind, name)

    def all(self) -> list[dict[str, Any]]:
        return [copy.deepcopy(o) for o in self.objects.values()]


class KubectlCluster:
    """The real kubectl against :class:`ApplyServer`; each patch it sends the configuration is checked
    against the model's three-way patch."""

    def __init__(self, server: ApplyServer, workdir: Path) -> None:
        self.server, self.workdir = server, workdir
        self.kubeconfig = server.kubeconfig(workdir / "kubeconfig")
        self.patches_checked = 0

    def kubectl(self, *args: str, stdin: str | None = None) -> str:
        assert KUBECTL is not None
        done = subprocess.run([KUBECTL, "--kubeconfig", str(self.kubeconfig), "--cache-dir",
                               str(self.workdir / ".kube-cache"), *args], cwd=self.workdir, input=stdin,
                              capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, (args, done.stdout, done.stderr)
        return done.stdout

    def apply_kustomization(self, folder: Path) -> None:
        self._apply(["-k", str(folder)], kubectl_kustomize(folder) or [])

    def apply_file(self, path: Path) -> None:
        self._apply(["-f", str(path)], load_documents(path))

    def _apply(self, source: list[str], docs: list[dict[str, Any]]) -> None:
        before = self.server.get(VWC, "dralint")
        sent = len(self.server.patches)
        self.kubectl("apply", "--validate=false", *source)
        config = next((d for d in docs if d["kind"] == VWC), None)
        if before is None or config is None:
            return
        patches = [p["patch"] for p in self.server.patches[sent:] if p["kind"] == VWC]
        model = three_way_patch(last_applied(before), with_last_applied(config), before, VWC)
        assert patches == ([model] if model else []), (patches, model)
        self.patches_checked += 1

    def write(self, obj: dict[str, Any], manager: str) -> None:
        self.server.update(obj)

    def get(self, kind: str, name: str) -> dict[str, Any] | None:
        return find({(o["apiVersion"], k, ns, n): o for (k, ns, n), o in self.server.objects.items()}, kind, name)

    def all(self) -> list[dict[str, Any]]:
        return [copy.deepcopy(o) for o in self.server.objects.values()]

    def create_secret(self, args: list[str], replace: bool) -> None:
        """``kubectl create secret tls`` for real, printed and then created here (the real one would send
        protobuf), or replacing the Secret as ``| kubectl replace -f -`` does."""
        printing = [a for a in args if a != "--dry-run=client"]
        printing = printing[:-2] if printing[-2:] == ["-o", "yaml"] else printing
        printed = self.kubectl(*printing, "--dry-run=client", "-o", "json")
        if replace:
            self.kubectl("replace", "--validate=false", "-f", "-", stdin=printed)
        else:
            self.server.update(json.loads(printed))


Cluster = ModelCluster | KubectlCluster


class Admin:
    """Runs documented lines in ``workdir`` (a checkout's ``webhook/`` beside the admin's ``certs/``),
    checking the webhook's certificate after each, then letting cert-manager's controllers act."""

    def __init__(self, cluster: Cluster, workdir: Path, cert_manager: bool = False) -> None:
        self.cluster, self.workdir = cluster, workdir
        self.cert_manager = CertManager([], dt.datetime.now(dt.timezone.utc)) if cert_manager else None
        self.mounted: bytes | None = None   # the serving certificate as the kubelet last refreshed it
        self.installed = False              # once reviews verify, every later step must keep them verified
        self.verified: set[str] = set()     # the webhooks whose calls verified after the last step
        self.steps: list[str] = []
        (workdir / "webhook").symlink_to(REPO / "webhook")

    def run(self, lines: list[str]) -> None:
        for line in lines:
            if line.startswith("# wait"):
                self.kubelet_refresh()
            elif not line.startswith("#"):
                self.command(line)
                self.check(line, settled=self.cert_manager is None)
                self.controllers()
                self.check(f"{line} (then cert-manager)")

    def command(self, line: str) -> None:
        self.steps.append(line)
        words = shlex.split(line)
        if words[0] == "dralint-webhook":
            cwd = os.getcwd()
            os.chdir(self.workdir)
            try:
                assert main(words[1:]) == 0, line
            finally:
                os.chdir(cwd)
        elif words[0] == "mv" and len(words) == 3:
            os.rename(self.workdir / words[1], self.workdir / words[2])
        elif words[:2] == ["rm", "-r"] and len(words) == 3:
            shutil.rmtree(self.workdir / words[2])
        elif words[:3] == ["kubectl", "apply", "-k"] and len(words) == 4:
            self.cluster.apply_kustomization(self.workdir / words[3])
        elif words[:3] == ["kubectl", "apply", "-f"] and len(words) == 4:
            self.cluster.apply_file(self.workdir / words[3])
        elif words[:5] == ["kubectl", "-n", NAMESPACE, "create", "secret"]:
            replace = words[-5:] == ["|", "kubectl", "replace", "-f", "-"]
            create = words[1:-5] if replace else words[1:]
            assert not replace or create[-3:] == ["--dry-run=client", "-o", "yaml"], line
            self.create_secret(create, replace)
        else:
            raise AssertionError(f"a documented command this test does not know how to run: {line}")

    def create_secret(self, args: list[str], replace: bool) -> None:
        """``kubectl ARGS`` (a ``create secret tls``), created, or replacing the Secret (``| kubectl replace``)."""
        assert args[:6] == ["-n", NAMESPACE, "create", "secret", "tls", "dralint-webhook-tls"], args
        if isinstance(self.cluster, KubectlCluster):
            self.cluster.create_secret(args, replace)
            return
        opts = dict(zip(args[6::2], args[7::2]))
        self.cluster.write(tls_secret(self.workdir / opts["--cert"], self.workdir / opts["--key"]),
                           "kubectl-replace" if replace else "kubectl-create")

    def secret_cert(self) -> bytes | None:
        secret = self.cluster.get("Secret", "dralint-webhook-tls")
        return base64.b64decode(secret["data"]["tls.crt"]) if secret else None

    def kubelet_refresh(self) -> None:
        self.mounted = self.secret_cert()

    def served(self) -> list[bytes]:
        """Every certificate a replica may be serving now: the mounted one, and the Secret's (a refresh)."""
        current = self.secret_cert()
        if self.mounted is None:
            self.mounted = current   # Pods start once the Secret exists, with what it holds then
        return [c for c in (self.mounted, current) if c is not None]

    def check(self, step: str, settled: bool = True) -> None:
        """Once installed, no step may leave a webhook that verified unverified; once ``settled`` (no
        controller left to act), every webhook verifies. A webhook the step added may wait for the CA
        injector until then: it has no bundle to lose yet."""
        served = self.served()
        configuration = self.cluster.get(VWC, "dralint")
        hooks = {h["name"]: h for h in configuration["webhooks"]} if configuration else {}
        good = {name for name, hook in hooks.items()
                if served and all(hook_verifies(hook, cert) for cert in served)}
        if self.installed:
            assert self.verified & hooks.keys() <= good, f"reviews fail TLS after: {step}"
            assert not settled or good == hooks.keys(), f"reviews fail TLS after: {step}"
        self.installed = self.installed or bool(hooks) and good == hooks.keys()
        self.verified = good

    def controllers(self) -> None:
        """cert-manager: issue what has no Secret yet, then the CA injector's write."""
        if self.cert_manager is None:
            return
        self.cert_manager.objects = [o for o in self.cluster.all() if o["kind"] in ("Issuer", "Certificate")]
        self.cert_manager.reconcile()
        self.publish()

    def publish(self) -> None:
        """cert-manager's Secrets into the cluster, and the injector's write of the configuration."""
        assert self.cert_manager is not None
        for (namespace, name), data in self.cert_manager.secrets.items():
            secret = {"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/tls",
                      "metadata": {"name": name, "namespace": namespace},
                      "data": {k: base64.b64encode(v).decode() for k, v in data.items()}}
            existing = self.cluster.get("Secret", name)
            if existing is None or existing["data"] != secret["data"]:
                self.cluster.write(secret, "cert-manager-certificates-issuing")
        configuration = self.cluster.get(VWC, "dralint")
        if configuration is not None:
            injected = self.cert_manager.inject(configuration)
            if injected != configuration:
                self.cluster.write(injected, INJECTOR)

    def renew(self, certificate: str) -> None:
        """cert-manager renews ``certificate``; the kubelet has not refreshed the Secret yet."""
        assert self.cert_manager is not None
        self.steps.append(f"cert-manager renews {certificate}")
        self.cert_manager.issue(NAMESPACE, certificate)
        self.publish()
        self.check(f"renewal of {certificate}")


@pytest.fixture(params=["client-side", "server-side"])
def cluster(request) -> ModelCluster:
    """A model cluster that kubectl applies to client-side (its default), or server-side."""
    return ModelCluster(request.param == "server-side")


# --- the rendered deployment ------------------------------------------------------------------------------


@needs_kubectl
@pytest.mark.parametrize("folder", FOLDERS, ids=lambda f: f.name)
def test_every_kustomization_renders_as_kubectl_kustomize_does(folder):
    ours = {identity(o): o for o in render(folder)}
    real = kubectl_kustomize(folder)
    assert real is not None and {identity(o): o for o in real} == ours


@pytest.mark.parametrize("folder", FOLDERS, ids=lambda f: f.name)
def test_no_applied_file_carries_a_ca_bundle(folder):
    # The bundle's one writer is certs/webhook.yaml or the injector: no kustomization may hold one.
    assert "caBundle" not in json.dumps(render(folder))
    kinds = {o["kind"] for o in render(folder)}
    assert (VWC in kinds) is (folder != BASE)


def rendered(folder: Path, renderer: str) -> list[dict[str, Any]]:
    """``folder`` rendered by the model or by ``kubectl kustomize`` (ValueError with its message if refused)."""
    if renderer == "model":
        return render(folder)
    assert KUBECTL is not None
    done = subprocess.run([KUBECTL, "kustomize", str(folder)], capture_output=True, text=True, timeout=60)
    if done.returncode != 0:
        raise ValueError(done.stderr)
    return [d for d in yaml.safe_load_all(done.stdout) if d is not None]


@pytest.mark.parametrize("renderer", ["model", pytest.param("kubectl", marks=needs_kubectl)])
def test_the_component_adds_its_webhook_once_and_only_to_the_configuration(tmp_path, renderer):
    (tmp_path / "webhook").symlink_to(REPO / "webhook")
    component = "../webhook/deploy/components/judge-status-and-slices"
    for name, resource, components in (("twice", "../webhook/deploy/overlays/cert-manager", [component] * 2),
                                       ("on-the-base", "../webhook/deploy/base", [component])):
        (tmp_path / name).mkdir()
        (tmp_path / name / "kustomization.yaml").write_text(yaml.safe_dump({
            "apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization", "resources": [resource],
            "components": components}))
    [configuration] = [o for o in rendered(tmp_path / "twice", renderer) if o["kind"] == VWC]
    assert sorted(h["name"] for h in configuration["webhooks"]) == sorted(NAMES | {CONTROLLER_WEBHOOK_NAME})
    # Without the configuration (certs/webhook.yaml carries it) the build fails rather than leave it out.
    with pytest.raises(ValueError, match="no resource matches strategic merge patch"):
        rendered(tmp_path / "on-the-base", renderer)


def test_the_deployment_guide_gives_the_commands_the_readme_gives_and_these_tests_run():
    readme = sh_blocks(REPO / "webhook" / "README.md", "### Install and upgrade")
    assert [b.splitlines()[0] for b in readme] == [INSTALL, UPGRADE + " (with the new release's checkout and "
                                                   "dralint-webhook)", RENEW, WITH_CERT_MANAGER]
    assert sh_blocks(REPO / "docs" / "webhook-deploy.md", "## Install and upgrade") == readme


# --- negative controls: the models reproduce 0.3.1's defects ------------------------------------------------


def test_the_models_lose_the_bundle_as_0_3_1_did(tmp_path, cluster):
    """0.3.1's base carried the configuration without a bundle: re-applied after webhook.yaml, it removed it."""
    assert main(["certs", "--service", SERVICE, "--namespace", NAMESPACE, "--out", str(tmp_path / "certs")]) == 0
    old_base = [*render(BASE), webhook_configuration(SERVICE, NAMESPACE)]
    cluster.apply(old_base)
    cluster.apply_file(tmp_path / "certs" / "webhook.yaml")
    served = (tmp_path / "certs" / "tls.crt").read_bytes()
    assert verifies(cluster.get(VWC, "dralint"), served)
    cluster.apply(old_base)
    assert not verifies(cluster.get(VWC, "dralint"), served)
    assert all("caBundle" not in h["clientConfig"] for h in cluster.get(VWC, "dralint")["webhooks"])


def test_0_3_1s_self_signed_cert_manager_overlay_raced_every_renewal(tmp_path):
    """A self-signed serving certificate injected from itself: each renewal changes the bundle, and the
    certificate still mounted by the kubelet no longer verifies."""
    selfsigned = {"apiVersion": "cert-manager.io/v1", "kind": "Issuer",
                  "metadata": {"name": "dralint-webhook-selfsigned", "namespace": NAMESPACE},
                  "spec": {"selfSigned": {}}}
    serving = copy.deepcopy(next(o for o in render(CERT_MANAGER) if o["kind"] == "Certificate"
                                 and o["metadata"]["name"] == "dralint-webhook-tls"))
    serving["spec"]["issuerRef"]["name"] = "dralint-webhook-selfsigned"   # all that 0.3.1's differed in
    vwc = webhook_configuration(SERVICE, NAMESPACE, inject_ca_from=f"{NAMESPACE}/dralint-webhook-tls")
    cluster = ModelCluster(server_side=False)
    cluster.apply([*render(BASE), selfsigned, serving, vwc])
    admin = Admin(cluster, tmp_path, cert_manager=True)
    admin.controllers()
    admin.check("install")
    assert admin.installed
    with pytest.raises(AssertionError, match="reviews fail TLS after: renewal of dralint-webhook-tls"):
        admin.renew("dralint-webhook-tls")


# --- without cert-manager -------------------------------------------------------------------------------------


def without_cert_manager(admin: Admin) -> None:
    """Install, apply the base twice, upgrade (also changing the rules), renew and upgrade twice."""
    admin.run(documented(INSTALL))
    assert admin.installed, admin.steps
    admin.run(["kubectl apply -k webhook/deploy/base"] * 2)
    upgrade = documented(UPGRADE)
    admin.run(upgrade)
    admin.run(upgrade)
    # An upgrade whose rules change (here: the opt-in webhook added, then dropped) keeps the bundle in each.
    admin.run([line + " --judge-status-and-slices" if line.startswith("dralint-webhook configuration") else line
               for line in upgrade])
    assert webhook_names(admin.cluster) == NAMES | {CONTROLLER_WEBHOOK_NAME}
    admin.run(upgrade)
    assert webhook_names(admin.cluster) == NAMES
    for _ in range(2):
        ca = (admin.workdir / "certs" / "ca.crt").read_bytes()
        admin.run(documented(RENEW))
        assert (admin.workdir / "certs" / "ca.crt").read_bytes() != ca   # a new CA, and it is trusted
        admin.run(upgrade)
        assert admin.mounted == (admin.workdir / "certs" / "tls.crt").read_bytes()


def test_without_cert_manager_install_upgrades_and_renewal_keep_reviews_verified(tmp_path, cluster):
    admin = Admin(cluster, tmp_path)
    without_cert_manager(admin)
    assert "caBundle" not in json.dumps([d for d in cluster.applied if d["kind"] != VWC])


def test_the_upgrade_puts_back_a_bundle_0_3_1_removed(tmp_path, cluster):
    admin = Admin(cluster, tmp_path)
    admin.run(documented(INSTALL))
    cluster.apply([webhook_configuration(SERVICE, NAMESPACE)])   # 0.3.1's base, applied once more
    assert not verifies(cluster.get(VWC, "dralint"), admin.served()[0])
    admin.installed = False
    admin.run(documented(UPGRADE))
    assert admin.installed


def test_a_renewal_without_trusting_both_cas_fails_reviews(tmp_path):
    """Why the renewal trusts both CAs: a new webhook.yaml and Secret, in either order, fail reviews
    until the kubelet refreshes the Secret."""
    admin = Admin(ModelCluster(server_side=False), tmp_path)
    admin.run(documented(INSTALL))
    naive = ["dralint-webhook certs --service dralint-webhook --namespace dralint --out certs-next/",
             "kubectl apply -f certs-next/webhook.yaml"]
    with pytest.raises(AssertionError, match="reviews fail TLS after: kubectl apply -f certs-next/webhook.yaml"):
        admin.run(naive)


# --- with cert-manager --------------------------------------------------------------------------------------


def with_cert_manager(admin: Admin) -> None:
    """Install, upgrade twice, opt in and out of judging controllers' writes, renewals of both certificates."""
    block = documented(WITH_CERT_MANAGER)
    admin.run(block)
    assert admin.installed, admin.steps
    ca = admin.cert_manager.secrets[(NAMESPACE, "dralint-webhook-ca")]["tls.crt"]
    assert {base64.b64decode(h["clientConfig"]["caBundle"]) for h in admin.cluster.get(VWC, "dralint")["webhooks"]} \
        == {ca}
    admin.run(block)
    admin.run(block)
    admin.run(["kubectl apply -k webhook/deploy/overlays/judge-status-and-slices"])
    assert webhook_names(admin.cluster) == NAMES | {CONTROLLER_WEBHOOK_NAME}
    admin.run(block)
    assert webhook_names(admin.cluster) == NAMES
    bundle = admin.cluster.get(VWC, "dralint")["webhooks"][0]["clientConfig"]["caBundle"]
    for _ in range(2):   # serving renewals: new key and certificate, the same bundle
        admin.renew("dralint-webhook-tls")
        assert admin.cluster.get(VWC, "dralint")["webhooks"][0]["clientConfig"]["caBundle"] == bundle
        admin.run(block)
        admin.kubelet_refresh()
    admin.renew("dralint-webhook-ca")   # the CA's renewal: a new bundle, which the mounted certificate meets
    assert admin.cluster.get(VWC, "dralint")["webhooks"][0]["clientConfig"]["caBundle"] != bundle
    admin.renew("dralint-webhook-tls")  # signed by the renewed CA, still mounted the old one
    admin.run(block)


def test_with_cert_manager_install_upgrades_and_renewals_keep_reviews_verified(tmp_path, cluster):
    admin = Admin(cluster, tmp_path, cert_manager=True)
    with_cert_manager(admin)
    assert "caBundle" not in json.dumps(cluster.applied)
    if cluster.server_side:
        # The injector is the bundle's only owner: kubectl's applies never claimed it.
        vwc = cluster.ssa[identity(cluster.get(VWC, "dralint"))]
        owners = {m for m, fields in vwc.owners.items() for f in fields if f[-1] == "caBundle"}
        assert owners == {INJECTOR}
        assert {f for f in leaves(vwc.live, VWC) if f[-1] == "caBundle"} <= vwc.owners[INJECTOR]


def test_server_side_apply_will_not_hand_the_injectors_bundle_to_a_file(tmp_path):
    """Mixing the paths: certs/webhook.yaml applied server-side over the cert-manager overlay's configuration
    conflicts with the injector, which owns the bundle (kubectl refuses without --force-conflicts)."""
    cluster = ModelCluster(server_side=True)
    admin = Admin(cluster, tmp_path, cert_manager=True)
    admin.run(documented(WITH_CERT_MANAGER))
    assert main(["certs", "--service", SERVICE, "--namespace", NAMESPACE, "--out", str(tmp_path / "certs")]) == 0
    with pytest.raises(ValueError, match=f"conflict with '{INJECTOR}'"):
        cluster.apply_file(tmp_path / "certs" / "webhook.yaml")


# --- from 0.4.0: DeviceClasses and DeviceTaintRules leave the claims' webhook ------------------------------

SPLIT = {"resourceclaims": "Fail", "resourceclaimtemplates": "Fail", "pods": "Fail",
         "deviceclasses": "Ignore", "devicetaintrules": "Ignore"}


def from_0_4_0_without_cert_manager(admin: Admin) -> None:
    """0.4.0 installed with ``--failure-policy Fail``, then the documented upgrade with that option: the
    claims' webhooks keep Fail, classes and taint rules are Ignore, no webhook is left over, and the
    bundle verifies after every step."""
    install = documented(INSTALL)
    certs = next(i for i, line in enumerate(install) if line.startswith("dralint-webhook certs"))
    admin.run(install[:certs + 1])
    ca = (admin.workdir / "certs" / "ca.crt").read_bytes()
    (admin.workdir / "certs" / "webhook.yaml").write_text(yaml.safe_dump(configuration_0_4_0(ca, "Fail")))
    admin.run(install[certs + 1:])
    assert admin.installed and judged_under(admin.cluster.get(VWC, "dralint")) == {
        **SPLIT, "deviceclasses": "Fail", "devicetaintrules": "Fail"}
    upgrade = [line + " --failure-policy Fail" if line.startswith("dralint-webhook configuration") else line
               for line in documented(UPGRADE)]
    for _ in range(2):
        admin.run(upgrade)
        assert webhook_names(admin.cluster) == NAMES
        assert judged_under(admin.cluster.get(VWC, "dralint")) == SPLIT


def from_0_4_0_with_cert_manager(admin: Admin) -> None:
    """0.4.0's judge-status-and-slices overlay (its base and certificates are this release's), then this
    release's, then the plain cert-manager overlay: the webhooks there keep their injected bundle
    throughout, the one added gets it from the injector, none is left over."""
    old = admin.workdir / "dralint-0.4.0.yaml"
    old.write_text(yaml.safe_dump_all([*(o for o in render(CERT_MANAGER) if o["kind"] != VWC),
                                       configuration_0_4_0(controllers=True)]))
    admin.cluster.apply_file(old)
    admin.controllers()
    admin.check("0.4.0's install")
    assert admin.installed
    admin.run(["kubectl apply -k webhook/deploy/overlays/judge-status-and-slices"])
    assert webhook_names(admin.cluster) == NAMES | {CONTROLLER_WEBHOOK_NAME}
    admin.run(documented(WITH_CERT_MANAGER))
    assert webhook_names(admin.cluster) == NAMES
    assert judged_under(admin.cluster.get(VWC, "dralint")) == {resource: "Ignore" for resource in SPLIT}


def test_an_upgrade_from_0_4_0_without_cert_manager_splits_the_webhooks_and_keeps_the_bundle(tmp_path, cluster):
    from_0_4_0_without_cert_manager(Admin(cluster, tmp_path))


def test_an_upgrade_from_0_4_0_with_cert_manager_splits_the_webhooks_and_keeps_the_bundle(tmp_path, cluster):
    from_0_4_0_with_cert_manager(Admin(cluster, tmp_path, cert_manager=True))


def renamed(configuration: dict[str, Any]) -> dict[str, Any]:
    """``configuration`` had the claims' webhook been given a new name."""
    out = copy.deepcopy(configuration)
    out["webhooks"][0]["name"] = "claims.dralint.dev"
    return out


def test_a_renamed_webhook_would_linger_where_the_configuration_was_created_not_applied():
    """Why the claims' webhook keeps 0.4.0's name: a client-side apply deletes a webhook only where the
    last applied file named it. Over a configuration made by ``kubectl create -f certs/webhook.yaml``
    (no such record), a renamed webhook would leave 0.4.0's behind, DeviceClasses and DeviceTaintRules
    still under Fail in it; the kept names change it in place. (A server-side apply over it stops at a
    conflict with kubectl-create's fields either way.)"""
    bundle = base64.b64encode(b"a CA").decode("ascii")
    new = webhook_configuration(SERVICE, NAMESPACE, bundle, failure_policy="Fail")
    kept, lingering = ModelCluster(server_side=False), ModelCluster(server_side=False)
    for target, upgrade in ((kept, new), (lingering, renamed(new))):
        target.write(configuration_0_4_0(b"a CA", "Fail"), "kubectl-create")
        target.apply([upgrade])
    assert webhook_names(kept) == NAMES and judged_under(kept.get(VWC, "dralint")) == SPLIT
    assert webhook_names(lingering) == NAMES | {"claims.dralint.dev"}
    assert judged_under(lingering.get(VWC, "dralint"))["devicetaintrules"] == "Fail/Ignore"


# --- the real kubectl ---------------------------------------------------------------------------------------


@needs_kubectl
def test_real_kubectl_removes_the_bundle_as_the_model_says_with_0_3_1s_base(tmp_path):
    with ApplyServer() as server:
        cluster = KubectlCluster(server, tmp_path)
        assert main(["certs", "--service", SERVICE, "--namespace", NAMESPACE, "--out", str(tmp_path / "certs")]) == 0
        old = tmp_path / "old-base-configuration.yaml"
        old.write_text(json.dumps(webhook_configuration(SERVICE, NAMESPACE)))
        cluster.apply_file(old)
        cluster.apply_file(tmp_path / "certs" / "webhook.yaml")
        assert verifies(cluster.get(VWC, "dralint"), (tmp_path / "certs" / "tls.crt").read_bytes())
        cluster.apply_file(old)
        assert cluster.patches_checked == 2   # kubectl's patches, equal to the model's, both times
        assert not verifies(cluster.get(VWC, "dralint"), (tmp_path / "certs" / "tls.crt").read_bytes())


@needs_kubectl
def test_real_kubectl_without_cert_manager(tmp_path):
    with ApplyServer() as server:
        cluster = KubectlCluster(server, tmp_path)
        without_cert_manager(Admin(cluster, tmp_path))
        assert cluster.patches_checked >= 5


@needs_kubectl
def test_real_kubectl_with_cert_manager(tmp_path):
    with ApplyServer() as server:
        cluster = KubectlCluster(server, tmp_path)
        with_cert_manager(Admin(cluster, tmp_path, cert_manager=True))
        assert cluster.patches_checked >= 5
        # What kubectl sent for the configuration never named the bundle: nothing for it to delete.
        assert not [p for p in server.patches if p["kind"] == VWC and "caBundle" in json.dumps(p["patch"])]


@needs_kubectl
def test_real_kubectl_upgrades_from_0_4_0_without_cert_manager(tmp_path):
    with ApplyServer() as server:
        cluster = KubectlCluster(server, tmp_path)
        from_0_4_0_without_cert_manager(Admin(cluster, tmp_path))
        assert cluster.patches_checked >= 2


@needs_kubectl
def test_real_kubectl_upgrades_from_0_4_0_with_cert_manager(tmp_path):
    with ApplyServer() as server:
        cluster = KubectlCluster(server, tmp_path)
        from_0_4_0_with_cert_manager(Admin(cluster, tmp_path, cert_manager=True))
        assert cluster.patches_checked >= 2


@needs_kubectl
def test_real_kubectl_leaves_a_renamed_webhook_behind_as_the_model_says(tmp_path):
    new = webhook_configuration(SERVICE, NAMESPACE, base64.b64encode(b"a CA").decode("ascii"), failure_policy="Fail")
    created = tmp_path / "created.yaml"
    created.write_text(json.dumps(configuration_0_4_0(b"a CA", "Fail")))
    for name, upgrade in (("kept", new), ("renamed", renamed(new))):
        workdir = tmp_path / name
        workdir.mkdir()
        (workdir / "webhook.yaml").write_text(json.dumps(upgrade))
        with ApplyServer() as server:
            cluster = KubectlCluster(server, workdir)
            cluster.kubectl("create", "--validate=false", "-f", str(created))
            cluster.apply_file(workdir / "webhook.yaml")
            assert cluster.patches_checked == 1   # kubectl's patch equals the model's
            if name == "kept":
                assert webhook_names(cluster) == NAMES and judged_under(cluster.get(VWC, "dralint")) == SPLIT
            else:
                assert "resources.dralint.dev" in webhook_names(cluster)   # left over
