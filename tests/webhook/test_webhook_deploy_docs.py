"""The README's deployment sections beyond install and upgrade, run as written.

The image and a kustomization of the admin's own, the opt-in component, the warn-only rollout's
commands and the credentials for ``--kubeconfig``: every YAML file these sections show is written
where its first line says, every ``sh`` block is run, against the models of
tests/webhook/test_webhook_upgrade.py (client-side and server-side apply, cert-manager) and, where kubectl
is installed, the real kubectl against a fake API server, the caBundle verified after every step.
Only ``docker build`` and ``docker push`` are not run (they need a Docker daemon and a registry):
the image they name is checked against the one every kustomization points the Deployment at.
"""
from __future__ import annotations

import base64
import os
import shlex
import subprocess
from pathlib import Path

import pytest
import yaml

from dralint import __version__
from dralint_webhook.cli import build_parser, main
from dralint.cluster.api import Api, load_endpoint
from dralint_webhook.manifests import CONTROLLER_WEBHOOK_NAME

from applyserver import ApplyServer
from conftest import REPO
from kustomize_model import identity, kubectl_kustomize, render
from test_webhook_upgrade import (INSTALL, KUBECTL, NAMES, SPLIT, UPGRADE, WITH_CERT_MANAGER, Admin, KubectlCluster,
                                  documented, judged_under, needs_kubectl, sh_blocks, webhook_names)
from test_webhook_upgrade import cluster  # noqa: F401 - the fixture: model clusters, client-side and server-side

README = REPO / "webhook" / "README.md"
BASE = REPO / "webhook" / "deploy" / "base"
IMAGE = "### The image, and a kustomization of your own"
JUDGE = "### Judging what the scheduler and drivers write (opt-in)"
ROLLOUT = "### Warn-only rollout"
TOKENS = "### Outside the cluster: `--kubeconfig` and token lifetimes"
VWC = "ValidatingWebhookConfiguration"

WITHOUT = "# my-dralint/kustomization.yaml, without cert-manager"
WITH = "# my-dralint/kustomization.yaml, with cert-manager"
JUDGING = "# my-dralint/kustomization.yaml, with cert-manager, judging status and slices"
FAIL = "# my-dralint/kustomization.yaml, with cert-manager and failurePolicy Fail"
KUSTOMIZATIONS = [WITHOUT, WITH, JUDGING, FAIL]
KUBECONFIG = "# dralint-webhook.kubeconfig"
TOKEN_SECRET = "# dralint-webhook-token.yaml"


def block(heading: str, first_line: str) -> list[str]:
    """The lines of the one ``sh`` block of the README's section ``heading`` that starts with ``first_line``."""
    found = [b.splitlines() for b in sh_blocks(README, heading) if b.startswith(first_line)]
    assert len(found) == 1, first_line
    return found[0]


def files() -> dict[str, str]:
    """The YAML files the sections show, by their first line (which names the file)."""
    blocks = [b for heading in (IMAGE, JUDGE, ROLLOUT, TOKENS) for b in sh_blocks(README, heading, "yaml")]
    return {b.splitlines()[0]: b for b in blocks}


def write(workdir: Path, first_line: str) -> Path:
    """The file of the README's block ``first_line``, where that line says (up to a comma)."""
    path = workdir / first_line.removeprefix("# ").split(",")[0]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(files()[first_line], encoding="utf-8")
    return path


def mine(lines: list[str]) -> list[str]:
    """Documented lines with the admin's kustomization in place of the release's folders, as the README says."""
    return [line.replace("webhook/deploy/overlays/cert-manager", "my-dralint").replace("webhook/deploy/base",
                                                                                      "my-dralint")
            for line in lines]


def pushed_image() -> str:
    """The image the README builds and pushes."""
    build, push = (shlex.split(line) for line in block(IMAGE, "# build and push the image")[1:])
    assert build[:5] == ["docker", "build", "-f", "webhook/Dockerfile", "-t"] and build[6:] == ["."]
    assert (REPO / build[3]).is_file()   # the context is the repository root, as the Dockerfile says
    assert push == ["docker", "push", build[5]]
    return build[5]


def deployment_image(objects: list[dict]) -> str:
    [deployment] = [o for o in objects if o["kind"] == "Deployment"]
    return deployment["spec"]["template"]["spec"]["containers"][0]["image"]


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    """A folder with ``webhook/`` (this checkout's) beside the admin's ``my-dralint/``."""
    (tmp_path / "webhook").symlink_to(REPO / "webhook")
    return tmp_path


# --- the image and the admin's kustomizations -----------------------------------------------------------


def test_the_readme_shows_these_files():
    assert set(files()) == {*KUSTOMIZATIONS, KUBECONFIG, TOKEN_SECRET}


def test_the_readme_shows_only_commands_these_tests_run():
    # A block added to these sections must be added here too, and to a test that runs it.
    shown = {heading: [b.splitlines()[0] for b in sh_blocks(README, heading)]
             for heading in (IMAGE, JUDGE, ROLLOUT, TOKENS)}
    assert shown == {IMAGE: ["# build and push the image"], JUDGE: [],
                     ROLLOUT: ["# step 3, without cert-manager (give every later upgrade's `configuration` "
                               "--failure-policy Fail too)", "# step 3, with cert-manager"],
                     TOKENS: ["# a bound token for the webhook's ServiceAccount, renewed before it ends",
                              "# serve outside the cluster", "# a long-lived token, in the same tokenFile"]}


def test_every_kustomization_points_the_deployment_at_the_pushed_image(workdir):
    image = pushed_image()
    assert image.endswith(f"/dralint-webhook:{__version__}")
    release = deployment_image(render(BASE))
    for first_line in KUSTOMIZATIONS:
        write(workdir, first_line)
        [entry] = yaml.safe_load(files()[first_line])["images"]
        assert entry["name"] == release.partition(":")[0], first_line   # the release's image, any tag
        assert deployment_image(render(workdir / "my-dralint")) == image, first_line


@needs_kubectl
def test_every_kustomization_renders_as_kubectl_kustomize_does(workdir):
    for first_line in KUSTOMIZATIONS:
        write(workdir, first_line)
        ours = {identity(o): o for o in render(workdir / "my-dralint")}
        real = kubectl_kustomize(workdir / "my-dralint")
        assert real is not None and {identity(o): o for o in real} == ours, first_line


def test_the_kustomizations_carry_what_their_names_say(workdir):
    for first_line, hooks, policy in ((WITH, NAMES, "Ignore"), (JUDGING, NAMES | {CONTROLLER_WEBHOOK_NAME}, "Ignore"),
                                      (FAIL, NAMES, "Fail")):
        write(workdir, first_line)
        [configuration] = [o for o in render(workdir / "my-dralint") if o["kind"] == VWC]
        assert {h["name"] for h in configuration["webhooks"]} == hooks, first_line
        assert judged_under(configuration)["resourceclaims"] == policy, first_line
        assert judged_under(configuration)["devicetaintrules"] == "Ignore", first_line
    write(workdir, WITHOUT)
    assert VWC not in {o["kind"] for o in render(workdir / "my-dralint")}   # certs/webhook.yaml carries it


# --- install, upgrade and the rollout with the admin's kustomization --------------------------------------


def without_cert_manager(admin: Admin) -> None:
    """Install and upgrade with ``my-dralint``, the rollout's step 3, an upgrade after it, and back."""
    write(admin.workdir, WITHOUT)
    admin.run(mine(documented(INSTALL)))
    assert admin.installed and deployment_image(admin.cluster.all()) == pushed_image()
    admin.run(mine(documented(UPGRADE)))
    step3 = block(ROLLOUT, "# step 3, without cert-manager")
    admin.run(step3)
    assert judged_under(admin.cluster.get(VWC, "dralint")) == SPLIT
    admin.run([line + " --failure-policy Fail" if line.startswith("dralint-webhook configuration") else line
               for line in mine(documented(UPGRADE))])
    assert judged_under(admin.cluster.get(VWC, "dralint")) == SPLIT
    admin.run([line.replace("--failure-policy Fail", "--failure-policy Ignore") for line in step3])
    assert set(judged_under(admin.cluster.get(VWC, "dralint")).values()) == {"Ignore"}


def with_cert_manager(admin: Admin) -> None:
    """Install with ``my-dralint``, add the component, the rollout's step 3 (the component dropped), and back."""
    write(admin.workdir, WITH)
    admin.run(mine(documented(WITH_CERT_MANAGER)))
    assert admin.installed and deployment_image(admin.cluster.all()) == pushed_image()
    write(admin.workdir, JUDGING)
    admin.run(["kubectl apply -k my-dralint"])
    assert webhook_names(admin.cluster) == NAMES | {CONTROLLER_WEBHOOK_NAME}
    write(admin.workdir, FAIL)
    admin.run(block(ROLLOUT, "# step 3, with cert-manager"))
    assert webhook_names(admin.cluster) == NAMES   # the apply deleted the webhook the component had added
    assert judged_under(admin.cluster.get(VWC, "dralint")) == SPLIT
    write(admin.workdir, WITH)
    admin.run(mine(documented(WITH_CERT_MANAGER)))
    assert set(judged_under(admin.cluster.get(VWC, "dralint")).values()) == {"Ignore"}


def test_without_cert_manager_the_admins_kustomization_and_the_rollout_keep_reviews_verified(tmp_path, cluster):
    without_cert_manager(Admin(cluster, tmp_path))


def test_with_cert_manager_the_admins_kustomization_and_the_rollout_keep_reviews_verified(tmp_path, cluster):
    with_cert_manager(Admin(cluster, tmp_path, cert_manager=True))


@needs_kubectl
def test_real_kubectl_without_cert_manager_the_admins_kustomization_and_the_rollout(tmp_path):
    with ApplyServer() as server:
        cluster = KubectlCluster(server, tmp_path)
        without_cert_manager(Admin(cluster, tmp_path))
        assert cluster.patches_checked >= 4


@needs_kubectl
def test_real_kubectl_with_cert_manager_the_admins_kustomization_and_the_rollout(tmp_path):
    with ApplyServer() as server:
        cluster = KubectlCluster(server, tmp_path)
        with_cert_manager(Admin(cluster, tmp_path, cert_manager=True))
        assert cluster.patches_checked >= 3


# --- credentials for --kubeconfig ---------------------------------------------------------------------------


def run_lines(lines: list[str], workdir: Path, kubeconfig: Path) -> None:
    """Each documented line in bash, in ``workdir``, its ``kubectl`` the real one on the fake API server.

    The fake serves no OpenAPI document, so ``kubectl apply`` gets ``--validate=false`` (as the upgrade
    tests give it); nothing else of the line changes."""
    bin_dir = workdir / ".bin"
    bin_dir.mkdir(exist_ok=True)
    shim = bin_dir / "kubectl"
    shim.write_text(f'#!/bin/sh\nif [ "$1" = apply ]; then shift; set -- apply --validate=false "$@"; fi\n'
                    f'exec {KUBECTL} --kubeconfig {kubeconfig} --cache-dir {workdir / ".kube-cache"} "$@"\n')
    shim.chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
    for line in lines:
        if not line.startswith("#"):
            done = subprocess.run(["bash", "-euo", "pipefail", "-c", line], cwd=workdir, env=env,
                                  capture_output=True, text=True, timeout=60)
            assert done.returncode == 0, (line, done.stderr)


@needs_kubectl
def test_the_documented_tokens_reach_the_watcher_through_the_kubeconfig(tmp_path):
    with ApplyServer() as server:
        [account] = [o for o in render(BASE) if o["kind"] == "ServiceAccount"]
        server.update(account)   # the base's, applied
        admin = server.kubeconfig(tmp_path / "admin.kubeconfig")
        assert main(["certs", "--service", "dralint-webhook", "--namespace", "dralint", "--out",
                     str(tmp_path / "certs")]) == 0
        (tmp_path / "ca.crt").write_bytes((tmp_path / "certs" / "ca.crt").read_bytes())   # the cluster's CA
        kubeconfig = write(tmp_path, KUBECONFIG)
        kubeconfig.write_text(kubeconfig.read_text().replace("https://api.cluster.example.com:6443", server.url))

        bound = block(TOKENS, "# a bound token for the webhook's ServiceAccount")
        run_lines(bound, tmp_path, admin)
        endpoint = load_endpoint(str(kubeconfig))
        assert endpoint.authorization() == f"Bearer {server.tokens[-1]}"
        api = Api(endpoint, user_agent="dralint-webhook")
        try:
            assert api.get("/version", timeout=10)["major"] == "1"   # the header as the watcher sends it
            run_lines(bound, tmp_path, admin)                          # the renewal
            assert endpoint.authorization() == f"Bearer {server.tokens[-2]}"   # until a 401...
            assert endpoint.reload is not None
            endpoint.reload(endpoint.config)                           # ...loads the kubeconfig again
            assert endpoint.authorization() == f"Bearer {server.tokens[-1]}" and len(server.tokens) == 2

            write(tmp_path, TOKEN_SECRET)
            long_lived = block(TOKENS, "# a long-lived token")
            run_lines(long_lived[:2], tmp_path, admin)                 # the Secret applied...
            secret = server.get("Secret", "dralint-webhook-token", "dralint")
            assert secret is not None and secret["type"] == "kubernetes.io/service-account-token"
            annotations = secret["metadata"]["annotations"]
            assert annotations["kubernetes.io/service-account.name"] == account["metadata"]["name"]
            secret["data"] = {"token": base64.b64encode(b"a-long-lived-token").decode()}
            server.update(secret)                                      # ...filled by the token controller
            run_lines(long_lived[2:], tmp_path, admin)                 # waited for, and read
            endpoint.reload(endpoint.config)
            assert endpoint.authorization() == "Bearer a-long-lived-token"
            assert api.get("/version", timeout=10)["major"] == "1"
        finally:
            api.close()

    [serve] = block(TOKENS, "# serve outside the cluster")[1:]
    words = shlex.split(serve)
    args = build_parser().parse_args(words[1:])
    assert words[0] == "dralint-webhook" and args.command == "serve" and args.watch
    for path in (args.kubeconfig, args.cert, args.key):   # the files the blocks above made
        assert (tmp_path / path).is_file(), path
