"""Verdicts against a live cluster that changes: the default policy (``{}``) and the shipped one
(deploy/base/policy.yaml) admit what Kubernetes admits when the cause is a state the request's author
does not own (a class that arrives a moment later, a device published without an attribute).

The cluster is :mod:`fakeapi`'s; the replica's watcher runs in a thread (as in test_webhook_watch)
and the webhook is the one ``serve --watch`` builds (``build_webhook`` with the watcher's folder),
answered through its test client.
"""
from __future__ import annotations

import json
import logging
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

import pytest

from dralint_webhook.app import Settings, Webhook, build_webhook, create_app
from dralint_webhook.logs import LOGGER
from fakeapi import FakeApiServer, FakeCluster
from test_webhook_watch import TOKEN, Running, wait_for

SHIPPED_POLICY = Path(__file__).resolve().parents[2] / "webhook" / "deploy" / "base" / "policy.yaml"
# The shipped policy lets every namespace but ml-training use this class alone.
CLASS_NAME = "gpu.example.com"
SELECTOR = f'device.attributes["{CLASS_NAME}"].model == "a100"'


def device_class() -> dict:
    return {"metadata": {"name": CLASS_NAME},
            "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{CLASS_NAME}"'}}]}}


def resource_slice(node: str, devices: list[dict]) -> dict:
    return {"metadata": {"name": f"{node}-gpu"},
            "spec": {"driver": CLASS_NAME, "nodeName": node,
                     "pool": {"name": node, "generation": 1, "resourceSliceCount": 1}, "devices": devices}}


def gpu(name: str, model: str | None = "a100") -> dict:
    return {"name": name, "attributes": {"model": {"string": model}}} if model else {"name": name}


def claim(name: str = "train", selectors: tuple[str, ...] = ()) -> dict:
    exactly: dict[str, Any] = {"deviceClassName": CLASS_NAME}
    if selectors:
        exactly["selectors"] = [{"cel": {"expression": s}} for s in selectors]
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"devices": {"requests": [{"name": "gpu", "exactly": exactly}]}}}


def pod_with_template(template: str) -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "trainer", "namespace": "default"},
            "spec": {"containers": [{"name": "app", "image": "registry.example.com/trainer:1.0",
                                     "resources": {"claims": [{"name": "gpus"}]}}],
                     "resourceClaims": [{"name": "gpus", "resourceClaimTemplateName": template}]}}


def review(obj: dict, uid: str = "u-1") -> dict:
    group, _, version = obj["apiVersion"].rpartition("/")
    kind = obj["kind"]
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {
        "uid": uid, "kind": {"group": group, "version": version, "kind": kind},
        "resource": {"group": group, "version": version, "resource": kind.lower() + "s"},
        "operation": "CREATE", "namespace": obj["metadata"].get("namespace", ""), "name": obj["metadata"]["name"],
        "object": obj, "userInfo": {"username": "argocd"}}}


class Replica:
    """The watcher of one replica in a thread, and the webhook a worker of ``serve --watch`` holds."""

    def __init__(self, tmp: Path, server: FakeApiServer, policy: str | Path) -> None:
        self.running = Running(tmp, server)
        wait_for(self.running.synced, what="the watcher's first full sync")
        policy_file = policy if isinstance(policy, Path) else tmp / "policy.yaml"
        if not isinstance(policy, Path):
            policy_file.write_text(policy)
        self.hook: Webhook = build_webhook(Settings(policy_file=str(policy_file), state_dir=str(self.running.folder)))
        assert self.hook.live is not None
        self.hook.live.interval = 0.05
        self.hook.start_worker()
        self.client = create_app(self.hook).test_client()

    def answer(self, obj: dict) -> dict:
        resp = self.client.post("/validate", json=review(obj))
        assert resp.status_code == 200, resp.get_data(as_text=True)
        return resp.get_json()["response"]

    def metrics(self) -> str:
        """``/metrics`` as the monitoring reads it (the health port's requests are marked so)."""
        return self.client.get("/metrics", environ_base={"dralint.health": True}).get_data(as_text=True)

    def close(self) -> None:
        assert self.hook.live is not None
        self.hook.live.stop()
        self.running.close()


@pytest.fixture
def cluster() -> FakeCluster:
    c = FakeCluster()
    c.create("namespaces", {"metadata": {"name": "default"}})
    c.create("nodes", {"metadata": {"name": "node-0"}})
    return c


@pytest.fixture
def server(cluster: FakeCluster) -> Iterator[FakeApiServer]:
    with FakeApiServer(cluster) as srv:
        srv.faults.token = TOKEN
        yield srv


@pytest.fixture(params=["default", "shipped"])
def policy(request: pytest.FixtureRequest) -> str | Path:
    """The default policy (an empty file's `{}`) and the shipped one, as it is on this branch."""
    return "{}\n" if request.param == "default" else SHIPPED_POLICY


@contextmanager
def replica(tmp: Path, server: FakeApiServer, policy: str | Path) -> Iterator[Replica]:
    running = Replica(tmp, server, policy)
    try:
        yield running
    finally:
        running.close()


def test_a_class_and_a_claim_applied_together_are_admitted_at_once(tmp_path, cluster, server, policy):
    cluster.create("resourceslices", resource_slice("node-0", [gpu("gpu-0")]))
    cluster.create("resourceclaimtemplates", {"metadata": {"name": "cpus", "namespace": "default"},
                                              "spec": {"spec": claim()["spec"]}})
    with replica(tmp_path, server, policy) as hook:
        # One `kubectl apply` of a chart: the claim reaches the API server a moment before its class.
        first = hook.answer(claim())
        assert first["allowed"] is True, first
        assert any("DRA703" in w for w in first["warnings"])
        # A template of the same chart, whose class is not there yet either: admitted with a warning too.
        template = hook.answer({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
                                "metadata": {"name": "gpus", "namespace": "default"},
                                "spec": {"spec": claim()["spec"]}})
        assert template["allowed"] is True, template
        assert any(CLASS_NAME in w for w in template["warnings"])
        assert hook.answer({"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
                            **device_class()})["allowed"] is True
        cluster.create("deviceclasses", device_class())
        later = wait_for(lambda: (lambda r: r if not any(CLASS_NAME in w for w in r.get("warnings", [])) else None)(
            hook.answer(claim())), seconds=10, what="the class to reach the webhook")
        assert later["allowed"] is True and not [w for w in later.get("warnings", []) if "DRA" in w], later
        # A Pod naming a template that is not there yet (the cluster has others): a warning too, as Kubernetes
        # admits it.
        pod = hook.answer(pod_with_template("gpus"))
        assert pod["allowed"] is True and any("DRA602" in w for w in pod["warnings"])


def test_a_missing_class_is_refused_only_where_the_policy_asks_for_it(tmp_path, cluster, server):
    cluster.create("resourceslices", resource_slice("node-0", [gpu("gpu-0")]))
    with replica(tmp_path, server, "feasibility: deny\n") as hook:
        refused = hook.answer(claim())
        assert refused["allowed"] is False and "DRA703" in refused["status"]["message"]


def test_feasibility_dryrun_admits_silently_and_counts_what_it_would_refuse(tmp_path, cluster, server, caplog):
    cluster.create("resourceslices", resource_slice("node-0", [gpu("gpu-0")]))
    with replica(tmp_path, server, "feasibility: dryrun\n") as hook:
        with caplog.at_level(logging.INFO, logger=LOGGER):
            assert hook.answer(claim()) == {"uid": "u-1", "allowed": True}
        text = hook.metrics()
        assert 'dralint_webhook_would_deny_total{rule="DRA703",enforcement="dryrun"} 1' in text
        (line,) = [r for r in caplog.records if r.getMessage() == "would deny"]
        fields = line.fields   # type: ignore[attr-defined]
        assert (fields["uid"], fields["namespace"], fields["name"], fields["rules"]) == \
            ("u-1", "default", "train", ["DRA703"])


def test_a_device_without_an_attribute_does_not_turn_valid_claims_into_denials(tmp_path, cluster, server, policy,
                                                                                caplog):
    cluster.create("deviceclasses", device_class())
    # Somebody else's driver publishes one device without `model`: the scheduler's CEL errors on it.
    cluster.create("resourceslices", resource_slice("node-0", [gpu("bare", model=None), gpu("gpu-0"), gpu("gpu-1")]))
    with replica(tmp_path, server, policy) as hook:
        with caplog.at_level(logging.INFO, logger=LOGGER):
            answers = [hook.answer(claim(f"train-{i}", (SELECTOR,))) for i in range(5)]
        assert all(a["allowed"] for a in answers), answers
        assert all(any("DRA702" in w for w in a["warnings"]) for a in answers)
        # Recorded as would-be denials of DRA702, under warn.
        text = hook.metrics()
        assert 'dralint_webhook_would_deny_total{rule="DRA702",enforcement="warn"} 5' in text
        lines = [r for r in caplog.records if r.getMessage() == "would deny"]
        assert len(lines) == 5 and lines[0].fields["enforcement"] == {"DRA702": "warn"}


def test_feasibility_deny_still_refuses_the_selector_that_fails(tmp_path, cluster, server):
    cluster.create("deviceclasses", device_class())
    cluster.create("resourceslices", resource_slice("node-0", [gpu("bare", model=None), gpu("gpu-0")]))
    with replica(tmp_path, server, "feasibility: deny\n") as hook:
        refused = hook.answer(claim(selectors=(SELECTOR,)))
        assert refused["allowed"] is False and "DRA702" in json.dumps(refused["status"])


def test_severities_dra_warning_means_every_rule_against_the_live_cluster(tmp_path, cluster, server):
    # The warn-only rollout written with a severity: every rule, cluster-state and organisation ones included,
    # even under `feasibility: deny` (enforcement acts on errors, and there are none left).
    cluster.create("resourceslices", resource_slice("node-0", [gpu("gpu-0")]))
    policy = "severities: {DRA: warning}\nfeasibility: deny\norganization: {maxDevicesPerClaim: 1}\n"
    with replica(tmp_path, server, policy) as hook:
        bad = claim()
        bad["spec"]["devices"]["requests"][0]["exactly"].update(allocationMode="ExactCount", count=2)
        bad["spec"]["devices"]["requests"][0]["exactly"]["selectors"] = [{"cel": {"expression": "device.driver"}}]
        answered = hook.answer(bad)
        assert answered["allowed"] is True, answered
        rules = {w.rsplit("(", 1)[1].split()[0] for w in answered["warnings"] if "(" in w}
        # A selector the API server refuses (DRA501), a class not there yet (DRA703), an organisation rule (DRA951).
        assert {"DRA501", "DRA703", "DRA951"} <= rules, answered["warnings"]


def test_an_annotation_is_told_it_cannot_suppress_an_organisation_rule_under_the_shipped_policy(tmp_path, cluster,
                                                                                                 server):
    cluster.create("deviceclasses", device_class())
    with replica(tmp_path, server, SHIPPED_POLICY) as hook:
        for token in ("DRA950", "device-class-not-allowed"):
            obj = claim()
            obj["spec"]["devices"]["requests"][0]["exactly"]["deviceClassName"] = "fpga.example.com"
            obj["metadata"]["annotations"] = {"dralint.io/ignore": token}
            answered = hook.answer(obj)
            assert answered["allowed"] is False and "DRA950" in answered["status"]["message"]
            (told,) = [w for w in answered["warnings"] if "DRA910" in w]
            assert "an organisation rule of the cluster's policy: an object cannot suppress it" in told, told
            assert "did you mean" not in told


def test_enforcement_by_name_and_prefix_against_the_live_cluster(tmp_path, cluster, server, caplog):
    cluster.create("resourceslices", resource_slice("node-0", [gpu("bare", model=None), gpu("gpu-0")]))
    policy = "enforcement: {DRA70: dryrun, allocation-device-class-missing: deny}\n"
    with replica(tmp_path, server, policy) as hook:
        refused = hook.answer(claim())
        assert refused["allowed"] is False and "DRA703" in refused["status"]["message"]
        cluster.create("deviceclasses", device_class())
        wait_for(lambda: hook.answer(claim())["allowed"], seconds=10, what="the class to reach the webhook")
        with caplog.at_level(logging.INFO, logger=LOGGER):
            # The selector errs on the bare device (DRA702): admitted without a word, the would-be denial recorded.
            assert hook.answer(claim("train-2", (SELECTOR,))) == {"uid": "u-1", "allowed": True}
        text = hook.metrics()
        assert 'dralint_webhook_would_deny_total{rule="DRA702",enforcement="dryrun"} 1' in text
        (line,) = [r for r in caplog.records if r.getMessage() == "would deny"]
        assert line.fields["rules"] == ["DRA702"] and line.fields["name"] == "train-2"   # type: ignore[attr-defined]
