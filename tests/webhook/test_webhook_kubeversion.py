"""The release reviews are judged as: the policy's pin, else the API server's ``/version``; and
Namespace labels from the cluster over the policy's static ones. Against the fake API server."""
from __future__ import annotations

import logging
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Iterator

import pytest

from dralint.cluster.discovery import server_minor
from dralint.kube.releases import DEFAULT_MINOR, NEWEST_MINOR
from dralint_webhook.app import Settings, Webhook, build_webhook, create_app
from dralint_webhook.kubeversion import ReleaseCheck, metric_lines, release_in_force
from dralint_webhook.logs import LOGGER
from dralint_webhook.policy import parse_policy
from fakeapi import VERSION_1_36, FakeApiServer, FakeCluster, version_info
from test_webhook_app import answer, claim, review
from test_webhook_watch import FAST, TOKEN, Running, slice_of, wait_for

# A claim valid on 1.36 (DRADeviceTaints on by default): a 1.34 API server would drop its tolerations.
TOLERATING = claim(tolerations=[{"key": "maintenance", "operator": "Exists", "effect": "NoSchedule"}])


# --- reading /version and choosing the release --------------------------------------------------------

@pytest.mark.parametrize("info, minor", [
    (VERSION_1_36, 36),
    ({**VERSION_1_36, "emulationMinor": "35"}, 35),          # --emulated-version=1.35: the API of 1.35
    ({"major": "1", "minor": "36+", "gitVersion": "v1.36.2-gke.100"}, 36),
    ({"gitVersion": "v1.35.4"}, 35),
    ({"major": "2", "minor": "0"}, None),
    ({}, None),
])
def test_server_minor_reads_the_emulated_release_first(info, minor):
    assert server_minor(info) == minor


def test_an_unpinned_policy_follows_the_server():
    policy, check = release_in_force(parse_policy({}), 36)
    assert policy.options.release.version == "1.36" and check == ReleaseCheck(36, None, 36)
    assert not check.mismatch and check.message() == ""
    policy, check = release_in_force(parse_policy({}), None)             # no watch: dralint's default
    assert policy.options.release.version == f"1.{DEFAULT_MINOR}" and not check.message()


def test_a_pin_older_than_the_server_is_honoured_and_reported_loudly():
    policy, check = release_in_force(parse_policy({"kubeVersion": "1.34"}), 36)
    assert policy.options.release.version == "1.34" and check.mismatch and check.level() == logging.ERROR
    assert check.message().startswith("the policy pins kubeVersion 1.34 but the API server is 1.36: reviews are "
                                      "judged as 1.34, so fields and features the server has are refused")
    _, newer = release_in_force(parse_policy({"kubeVersion": "1.37"}), 36)
    assert newer.mismatch and newer.level() == logging.WARNING and "not have yet" in newer.message()
    _, same = release_in_force(parse_policy({"kubeVersion": "1.36"}), 36)
    assert not same.mismatch and same.message() == ""


def test_a_server_newer_than_dralint_knows_is_judged_as_the_newest_known():
    policy, check = release_in_force(parse_policy({}), NEWEST_MINOR + 2)
    assert policy.options.release.version == f"1.{NEWEST_MINOR}" and not check.mismatch
    assert f"which dralint does not know: reviews are judged as 1.{NEWEST_MINOR}" in check.message()


def test_gates_that_do_not_fit_the_servers_release_keep_the_policys_and_say_so():
    policy = parse_policy({"featureGates": {"DRAConsumableCapacity": True}})
    kept, check = release_in_force(policy, 30)
    assert kept is policy and check.in_force == DEFAULT_MINOR and "featureGates" in check.message()


def test_the_mismatch_gauge():
    lines = metric_lines(ReleaseCheck(34, 34, 36))
    assert lines[-1] == 'dralint_webhook_kube_version_mismatch{policy="1.34",server="1.36",in_force="1.34"} 1'
    assert metric_lines(ReleaseCheck(36, None, 36))[-1].endswith('{policy="",server="1.36",in_force="1.36"} 0')


# --- against the fake API server --------------------------------------------------------------------

@pytest.fixture
def server() -> Iterator[FakeApiServer]:
    cluster = FakeCluster()
    cluster.create("namespaces", {"metadata": {"name": "ml"}})
    cluster.create("namespaces", {"metadata": {"name": "gpu-debug", "labels": {"team": "infra"}}})
    cluster.create("nodes", {"metadata": {"name": "node-0"}})
    cluster.create("deviceclasses", {"metadata": {"name": "gpu.example.com"}, "spec": {}})
    cluster.create("resourceslices", slice_of("node-0"))
    with FakeApiServer(cluster) as srv:
        srv.faults.token = TOKEN
        yield srv


@contextmanager
def webhook(tmp_path: Path, server: FakeApiServer, policy: str) -> Iterator[Webhook]:
    """A webhook with ``--watch`` whose watcher reads ``server`` (its /version again every 0.2 s)."""
    running = Running(tmp_path, server, timing=replace(FAST, rediscover=0.2))
    (tmp_path / "policy.yaml").write_text(policy)
    hook = build_webhook(Settings(policy_file=str(tmp_path / "policy.yaml"), state_dir=str(running.folder),
                                  reload_interval=0))
    assert hook.live is not None
    hook.live.interval = 0.05
    hook.live.start()
    try:
        wait_for(lambda: hook.readiness() == [], what="the webhook to be ready")
        yield hook
    finally:
        hook.live.stop()
        running.close()


def warnings_of(hook: Webhook, obj: dict, namespace: str = "ml") -> list[str]:
    return answer(create_app(hook).test_client(), review(obj, namespace=namespace)).get("warnings", [])


def test_without_a_pin_reviews_follow_the_api_servers_release_and_its_upgrade(tmp_path, server):
    with webhook(tmp_path, server, "feasibility: warn\n") as hook:
        assert wait_for(lambda: hook.policy().options.release.version == "1.36", what="the server's release")
        assert not [w for w in warnings_of(hook, TOLERATING) if "DRA802" in w]   # no false "silently dropped"
        assert hook.release_check() == ReleaseCheck(36, None, 36)
        server.version = version_info("v1.37.0")                  # the control plane is upgraded
        wait_for(lambda: hook.policy().options.release.version == "1.37", what="the upgraded release")
        assert 'dralint_webhook_kube_version_mismatch{policy="",server="1.37",in_force="1.37"} 0' in \
            hook.exposition()


def test_a_pin_older_than_the_api_server_is_logged_counted_and_shown_by_readyz(tmp_path, server, caplog):
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        with webhook(tmp_path, server, 'kubeVersion: "1.34"\nfeasibility: warn\n') as hook:
            assert wait_for(lambda: hook.release_check().mismatch, what="the server's release beside the pin")
            assert hook.policy().options.release.version == "1.34"              # honoured
            assert [w for w in warnings_of(hook, TOLERATING) if "DRA802" in w]
            assert 'dralint_webhook_kube_version_mismatch{policy="1.34",server="1.36",in_force="1.34"} 1' in \
                hook.exposition()
            ready = create_app(hook).test_client().get("/readyz")
            assert ready.status_code == 200
            assert "kubeVersion: the policy pins kubeVersion 1.34 but the API server is 1.36" in ready.text
            for _ in range(3):
                hook.policy()
    logged = [r for r in caplog.records if "pins kubeVersion 1.34" in r.getMessage()]
    assert len(logged) == 1 and logged[0].levelno == logging.ERROR                  # once, loudly


def test_a_server_that_hides_its_version_leaves_the_default_release(tmp_path, server):
    server.version = None                                                         # /version: 404
    with webhook(tmp_path, server, "{}\n") as hook:
        assert hook.live is not None and hook.live.server_release() is None
        assert hook.policy().options.release.version == f"1.{DEFAULT_MINOR}"


ADMIN_POLICY = """
namespaceLabels:
  gpu-debug: {dra.example.com/admin-access: "true"}
  not-watched: {dra.example.com/admin-access: "true"}
organization:
  adminAccessNamespaceLabels: {dra.example.com/admin-access: "true"}
"""


def admin_claim(namespace: str) -> dict:
    obj = claim(adminAccess=True)
    obj["metadata"]["namespace"] = namespace
    return obj


def test_a_real_namespaces_labels_win_over_the_policys_static_ones(tmp_path, server):
    with webhook(tmp_path, server, ADMIN_POLICY) as hook:
        client = create_app(hook).test_client()
        # gpu-debug exists without the label: the policy's entry does not grant adminAccess there.
        denied = answer(client, review(admin_claim("gpu-debug"), namespace="gpu-debug"))
        assert denied["allowed"] is False and "DRA952" in denied["status"]["message"]
        # A namespace the cluster state does not have: the static entry is all there is.
        elsewhere = answer(client, review(admin_claim("not-watched"), namespace="not-watched"))
        assert elsewhere["allowed"] is True, elsewhere["status"]["message"]
