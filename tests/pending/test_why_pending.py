"""``dralint why-pending``: a Pod's claims judged against a fake API server's live state, over TLS.

The Pods and events are written in the shapes kube-apiserver v1.36 serves them (a Pending Pod's
``PodScheduled`` condition, ``status.resourceClaimStatuses`` for claims made from templates, core/v1
Events from ``default-scheduler``), as the recorded fixtures of ``../shared/fixtures/apiserver-1.36``.
"""
from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Iterator

import pytest

from dralint.cli import main
from fakeapi import FakeApiServer, FakeCluster
from test_cluster_live import TOKEN, kubeconfig, slice_of

GPU = "gpu.example.com"


def claim(name: str, count: int = 1, namespace: str = "ml", **extra: object) -> dict:
    return {"metadata": {"name": name, "namespace": namespace},
            "spec": {"devices": {"requests": [{"name": "gpus", "exactly": {"deviceClassName": GPU, "count": count}}]}},
            **extra}


def allocated(name: str, node: str, devices: list[str], pod: str, count: int = 1) -> dict:
    """A claim the scheduler allocated on ``node`` and reserved for ``pod``."""
    return claim(name, count, status={
        "allocation": {"devices": {"results": [{"request": "gpus", "driver": GPU, "pool": node, "device": d}
                                               for d in devices]},
                       "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
                           {"key": "metadata.name", "operator": "In", "values": [node]}]}]}},
        "reservedFor": [{"resource": "pods", "name": pod, "uid": f"uid-{pod}"}]})


def pod(name: str, claims: list[dict], phase: str = "Pending", namespace: str = "ml", **status: object) -> dict:
    """A Pod as the API server stores it; Pending ones carry the scheduler's Unschedulable condition."""
    conditions = [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                   "lastTransitionTime": "2026-06-11T10:00:00Z",
                   "message": "0/2 nodes are available: 2 cannot allocate all claims. preemption: 0/2 nodes are "
                              "available: 2 Preemption is not helpful for scheduling."}] if phase == "Pending" else []
    return {"metadata": {"name": name, "namespace": namespace, "creationTimestamp": "2026-06-11T10:00:00Z"},
            "spec": {"containers": [{"name": "main", "image": "registry.example/train:1",
                                     "resources": {"claims": [{"name": c["name"]} for c in claims]}}],
                     "resourceClaims": claims, "restartPolicy": "Always", "schedulerName": "default-scheduler",
                     "tolerations": [{"key": "node.kubernetes.io/not-ready", "operator": "Exists",
                                      "effect": "NoExecute", "tolerationSeconds": 300}]},
            "status": {"phase": phase, "qosClass": "BestEffort", "conditions": conditions, **status}}


def event(pod_name: str, n: int, reason: str = "FailedScheduling", message: str = "0/2 nodes are available: 2 "
          "cannot allocate all claims.", namespace: str = "ml") -> dict:
    """A core/v1 Event about ``pod_name`` as the scheduler writes it (the ``n``-th, later ones newer)."""
    return {"metadata": {"name": f"{pod_name}.18{n:014d}", "namespace": namespace,
                         "creationTimestamp": f"2026-06-11T10:0{n}:00Z"},
            "involvedObject": {"kind": "Pod", "namespace": namespace, "name": pod_name, "uid": f"uid-{pod_name}",
                               "apiVersion": "v1", "resourceVersion": "120"},
            "reason": reason, "message": message, "source": {"component": "default-scheduler"},
            "firstTimestamp": f"2026-06-11T10:0{n}:00Z", "lastTimestamp": f"2026-06-11T10:0{n}:00Z",
            "count": n + 1, "type": "Warning", "reportingComponent": "default-scheduler", "reportingInstance": ""}


@pytest.fixture
def cluster() -> FakeCluster:
    """Two nodes of two GPUs each, one GPU class."""
    c = FakeCluster()
    c.create("namespaces", {"metadata": {"name": "ml"}})
    for n in range(2):
        c.create("nodes", {"metadata": {"name": f"node-{n}", "labels": {"kubernetes.io/hostname": f"node-{n}"}}})
        c.create("resourceslices", slice_of(f"node-{n}"))
    c.create("deviceclasses", {"metadata": {"name": GPU},
                               "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{GPU}"'}}]}})
    return c


@pytest.fixture
def server(cluster: FakeCluster, certs: Path) -> Iterator[FakeApiServer]:
    with FakeApiServer(cluster, tls=(str(certs / "tls.crt"), str(certs / "tls.key"))) as srv:
        srv.faults.token = TOKEN
        yield srv


@pytest.fixture
def config(tmp_path: Path, server: FakeApiServer, certs: Path) -> Path:
    return kubeconfig(tmp_path / "kubeconfig", server.url, certs)


def why(config: Path, *argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(["why-pending", "--kubeconfig", str(config), *argv], stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def test_a_claim_for_more_gpus_than_any_node_has_is_named_with_its_request_and_cause(cluster, config):
    cluster.create("resourceclaims", claim("big", count=4))
    cluster.create("pods", pod("train", [{"name": "gpu", "resourceClaimName": "big"}]))
    for n in range(3):
        cluster.create("events", event("train", n))
    code, out, err = why(config, "-n", "ml", "train")
    lines = out.splitlines()
    assert code == 1 and err == ""
    assert lines[0] == "Pod ml/train (Pending): 1 of 1 claim(s) cannot be allocated"
    assert lines[1] == "  claim ml/big (the Pod's `gpu`): cannot be allocated"
    assert lines[2].startswith("    request `gpus` [DRA701]: claim ml/big cannot be allocated: request `gpus` needs "
                               "4 devices of class `gpu.example.com`")
    assert "no node has 4" in lines[2]
    # The scheduler's own words beside it, newest first.
    assert "recent events (newest first):" in out
    assert out.index("FailedScheduling (default-scheduler, 3x)") < out.index("FailedScheduling (default-scheduler, 2x)")


def test_a_claim_whose_devices_other_pods_hold_says_they_are_taken(cluster, config):
    for n in range(2):
        cluster.create("resourceclaims", allocated(f"held-{n}", f"node-{n}", ["gpu-0", "gpu-1"], f"other-{n}", 2))
    cluster.create("resourceclaims", claim("mine"))
    cluster.create("pods", pod("train", [{"name": "gpu", "resourceClaimName": "mine"}]))
    code, out, _ = why(config, "-n", "ml", "train")
    assert code == 1
    lines = out.splitlines()
    assert lines[1] == "  claim ml/mine (the Pod's `gpu`): cannot be allocated"
    assert lines[2].startswith("    request `gpus` [DRA701]: claim ml/mine cannot be allocated")
    assert "other claims hold 4 (ml/held-0, ml/held-1)" in lines[2]
    assert lines[3:5] == ["      ml/held-0 is allocated, reserved for Pod ml/other-0",
                          "      ml/held-1 is allocated, reserved for Pod ml/other-1"]


def test_a_pod_whose_node_selector_matches_no_node_is_told_on_the_pod(cluster, config):
    cluster.create("resourceclaims", claim("mine"))
    placed = pod("train", [{"name": "gpu", "resourceClaimName": "mine"}])
    placed["spec"]["nodeSelector"] = {"pool": "b"}
    cluster.create("pods", placed)
    code, out, _ = why(config, "-n", "ml", "train")
    assert code == 1
    assert out.splitlines()[:3] == [
        "Pod ml/train (Pending): its claims cannot be allocated, because of the Pod itself",
        "  claim ml/mine (the Pod's `gpu`): not allocated; devices for it exist, but the Pod keeps it from being "
        "allocated (below)",
        "  the Pod [DRA701]: Pod ml/train cannot run on any node: none of the 2 nodes can run it: 2 do not match its "
        "nodeSelector"]


def test_a_tainted_device_is_the_cause(cluster, config):
    for n in range(2):
        tainted = slice_of(f"node-{n}")
        for device in tainted["spec"]["devices"]:
            device["taints"] = [{"key": "example.com/broken", "value": "ecc", "effect": "NoSchedule"}]
        cluster.update("resourceslices", tainted)
    cluster.create("resourceclaims", claim("mine"))
    cluster.create("pods", pod("train", [{"name": "gpu", "resourceClaimName": "mine"}]))
    code, out, _ = why(config, "-n", "ml", "train")
    assert code == 1
    assert "4 have taint `example.com/broken=ecc:NoSchedule` that the request does not tolerate" in out.splitlines()[2]


def test_a_device_taint_rule_is_the_cause(cluster, config):
    cluster.create("devicetaintrules", {"metadata": {"name": "drain-gpus"},
                                        "spec": {"deviceSelector": {"driver": GPU},
                                                 "taint": {"key": "example.com/drain", "effect": "NoSchedule"}}})
    cluster.create("resourceclaims", claim("mine"))
    cluster.create("pods", pod("train", [{"name": "gpu", "resourceClaimName": "mine"}]))
    code, out, err = why(config, "-n", "ml", "train", "--feature-gates", "DRADeviceTaintRules=true")
    assert (code, err) == (1, "")
    assert "4 have taint `example.com/drain=:NoSchedule` that the request does not tolerate" in out.splitlines()[2]
    # Served, but the release's default keeps the gate off: the rule is not applied, and a note says so.
    code, _, err = why(config, "-n", "ml", "train")
    assert code == 0
    assert "dralint: note: the API server holds 1 DeviceTaintRule(s) but the DRADeviceTaintRules feature gate" in err


def test_a_pod_that_names_its_node_never_gets_its_claims_allocated(cluster, config):
    cluster.create("resourceclaims", claim("mine"))
    pinned = pod("train", [{"name": "gpu", "resourceClaimName": "mine"}])
    pinned["spec"]["nodeName"] = "node-0"
    cluster.create("pods", pinned)
    code, out, _ = why(config, "-n", "ml", "train")
    assert code == 1
    assert out.splitlines()[2].startswith("  the Pod [DRA249]: spec.nodeName 'node-0' bypasses the scheduler")


def test_scheduling_gates_are_named(cluster, config):
    cluster.create("resourceclaims", allocated("mine", "node-0", ["gpu-0"], "train"))
    gated = pod("train", [{"name": "gpu", "resourceClaimName": "mine"}])
    gated["spec"]["schedulingGates"] = [{"name": "example.com/queue"}]
    cluster.create("pods", gated)
    code, out, _ = why(config, "-n", "ml", "train")
    assert code == 0
    assert ("  the Pod has scheduling gates (example.com/queue): the scheduler does not look at it until they are "
            "removed") in out


def test_allocated_claims_are_not_what_holds_the_pod(cluster, config):
    cluster.create("resourceclaims", allocated("mine", "node-0", ["gpu-0"], "train"))
    cluster.create("pods", pod("train", [{"name": "gpu", "resourceClaimName": "mine"}]))
    cluster.create("events", event("train", 0, "FailedScheduling", "0/2 nodes are available: 2 Insufficient memory."))
    code, out, _ = why(config, "-n", "ml", "train")
    assert code == 0
    assert out.startswith("Pod ml/train (Pending): every claim is allocated; what holds it is not its claims")
    assert "claim ml/mine (the Pod's `gpu`): allocated (gpu.example.com/node-0/gpu-0); reserved for Pod ml/train" in out
    assert "Insufficient memory" in out


def test_a_claim_made_from_a_template_is_found_through_the_pods_status(cluster, config):
    cluster.create("resourceclaims", claim("train-gpu-x7k2q", count=3))
    cluster.create("pods", pod("train", [{"name": "gpu", "resourceClaimTemplateName": "four-gpus"}],
                               resourceClaimStatuses=[{"name": "gpu", "resourceClaimName": "train-gpu-x7k2q"}]))
    code, out, _ = why(config, "-n", "ml", "train")
    assert code == 1
    assert out.splitlines()[1] == ("  claim ml/train-gpu-x7k2q (the Pod's `gpu`, from template four-gpus): "
                                   "cannot be allocated")


def test_a_template_whose_claim_is_not_made_yet_is_judged_from_the_template(cluster, config):
    cluster.create("resourceclaimtemplates", {"metadata": {"name": "big", "namespace": "ml"},
                                              "spec": {"spec": claim("x", count=5)["spec"]}})
    cluster.create("pods", pod("train", [{"name": "gpu", "resourceClaimTemplateName": "big"}]))
    code, out, _ = why(config, "-n", "ml", "train")
    assert code == 1
    assert out.splitlines()[1] == "  the claim of template big (not made yet) (the Pod's `gpu`): cannot be allocated"
    assert "needs 5 devices" in out.splitlines()[2]


def test_a_claim_that_does_not_exist(cluster, config):
    cluster.create("pods", pod("train", [{"name": "gpu", "resourceClaimName": "gone"}]))
    code, out, _ = why(config, "-n", "ml", "train")
    assert code == 1
    assert out.splitlines()[1] == "  claim ml/gone (the Pod's `gpu`): does not exist; the scheduler waits for it"


def test_a_pod_that_does_not_exist_is_a_clear_error(config):
    code, out, err = why(config, "-n", "ml", "nope")
    assert (code, out) == (2, "")
    assert err == "dralint: error: pod 'nope' not found in namespace 'ml' (give -n NAMESPACE)\n"


def test_forbidden_pods_name_the_missing_permission(server, cluster, config):
    server.faults.forbidden = {"pods"}
    code, _, err = why(config, "-n", "ml", "train")
    assert code == 2
    assert err.startswith("dralint: error: forbidden: dralint needs `get pods` (namespace ml)")
    assert len(err.splitlines()) == 1


def test_forbidden_events_are_a_note_and_the_answer_stands(server, cluster, config):
    cluster.create("resourceclaims", claim("big", count=4))
    cluster.create("pods", pod("train", [{"name": "gpu", "resourceClaimName": "big"}]))
    server.faults.forbidden = {"events"}
    code, out, _ = why(config, "-n", "ml", "train")
    assert code == 1
    assert "events not read: forbidden: dralint needs `list events` (namespace ml)" in out


def test_events_are_ordered_by_the_time_they_name_not_its_text(cluster, config):
    # Second and microsecond precision side by side, and an offset: as text the order would be
    # 10:05:00Z, 10:05:00.500000Z, 12:04:00+02:00 from newest; by time it is the reverse.
    cluster.create("resourceclaims", claim("big", count=4))
    cluster.create("pods", pod("train", [{"name": "gpu", "resourceClaimName": "big"}]))
    plain = event("train", 1, reason="Plain")
    plain["lastTimestamp"] = "2026-06-11T10:05:00Z"
    series = event("train", 2, reason="Series")
    series["series"] = {"count": 4, "lastObservedTime": "2026-06-11T10:05:00.500000Z"}
    offset = event("train", 3, reason="Offset")
    offset["lastTimestamp"] = "2026-06-11T12:06:00+02:00"
    unreadable = event("train", 4, reason="Unreadable")
    unreadable["lastTimestamp"] = "yesterday"
    for e in (plain, series, offset, unreadable):
        cluster.create("events", e)
    out = why(config, "-n", "ml", "train")[1]
    assert [out.index(f" {r} (") for r in ("Offset", "Series", "Plain", "Unreadable")] == \
        sorted(out.index(f" {r} (") for r in ("Offset", "Series", "Plain", "Unreadable"))


def test_the_namespace_defaults_to_the_contexts(tmp_path, server, cluster, certs):
    cluster.create("resourceclaims", allocated("mine", "node-0", ["gpu-0"], "train"))
    cluster.create("pods", pod("train", [{"name": "gpu", "resourceClaimName": "mine"}]))
    config = kubeconfig(tmp_path / "kubeconfig", server.url, certs)
    text = config.read_text().replace("user: fake", "user: fake\n    namespace: ml")
    config.write_text(text)
    assert why(config, "train")[0] == 0
    assert "not found in namespace 'default'" in why(kubeconfig(tmp_path / "plain", server.url, certs), "train")[2]


@pytest.mark.parametrize("argv", [(), ("train", "--all-pending"), ("-A", "train"), ("--events", "-1", "train")])
def test_usage_errors(config, argv):
    code, _, err = why(config, *argv)
    assert code == 2 and err.startswith("dralint: error: ") and len(err.splitlines()) == 1


def test_unreachable_server(tmp_path, certs):
    code, _, err = why(kubeconfig(tmp_path / "k", "https://127.0.0.1:9", certs), "-n", "ml", "train")
    assert code == 2 and err.startswith("dralint: error: cannot reach the API server https://127.0.0.1:9")


def all_pending_cluster(cluster: FakeCluster) -> None:
    cluster.create("resourceclaims", claim("big", count=4))
    cluster.create("resourceclaims", claim("small"))
    cluster.create("resourceclaims", allocated("running", "node-1", ["gpu-1"], "serve"))
    cluster.create("pods", pod("train", [{"name": "gpu", "resourceClaimName": "big"}]))
    cluster.create("pods", pod("infer", [{"name": "gpu", "resourceClaimName": "small"}]))
    cluster.create("pods", pod("serve", [{"name": "gpu", "resourceClaimName": "running"}], phase="Running"))
    cluster.create("pods", pod("web", []))   # Pending, but for no claim of its own
    cluster.create("namespaces", {"metadata": {"name": "other"}})
    cluster.create("resourceclaims", claim("big", count=4, namespace="other"))
    cluster.create("pods", pod("train", [{"name": "gpu", "resourceClaimName": "big"}], namespace="other"))


def test_all_pending_pods_with_claims_of_a_namespace(cluster, config):
    all_pending_cluster(cluster)
    code, out, _ = why(config, "--all-pending", "-n", "ml")
    assert code == 1
    heads = [line for line in out.splitlines() if line.startswith("Pod ")]
    assert heads == ["Pod ml/infer (Pending): the allocator finds devices for every claim now; the scheduler may not "
                     "have tried again since they were freed, or the Pod waits for " + heads[0].split("waits for ")[1],
                     "Pod ml/train (Pending): 1 of 1 claim(s) cannot be allocated"]


def test_all_pending_in_every_namespace(cluster, config):
    all_pending_cluster(cluster)
    code, out, _ = why(config, "--all-pending", "-A", "-o", "json")
    assert code == 1
    assert [(p["namespace"], p["name"]) for p in json.loads(out)["pods"]] == [
        ("ml", "infer"), ("ml", "train"), ("other", "train")]


def test_all_pending_when_none_waits(cluster, config):
    code, out, _ = why(config, "--all-pending", "-n", "ml")
    assert (code, out) == (0, "no Pending Pod with ResourceClaims in namespace ml\n")


def test_json_output_shape(cluster, config, server):
    cluster.create("resourceclaims", claim("big", count=4))
    cluster.create("resourceclaims", allocated("fine", "node-0", ["gpu-0"], "train"))
    cluster.create("pods", pod("train", [{"name": "gpu", "resourceClaimName": "big"},
                                         {"name": "other", "resourceClaimName": "fine"}]))
    cluster.create("events", event("train", 0))
    code, out, _ = why(config, "-n", "ml", "train", "-o", "json")
    body = json.loads(out)
    assert code == 1
    assert body["version"] == 1 and body["server"] == server.url and body["release"] == "1.36"
    [p] = body["pods"]
    assert {k: p[k] for k in ("namespace", "name", "phase", "nodeName", "blocked", "podCauses", "eventsProblem")} == {
        "namespace": "ml", "name": "train", "phase": "Pending", "nodeName": "", "blocked": True, "podCauses": [],
        "eventsProblem": ""}
    big, fine = p["claims"]
    assert {k: big[k] for k in ("entry", "claim", "template", "state", "reservedFor", "devices")} == {
        "entry": "gpu", "claim": "ml/big", "template": "", "state": "unallocatable", "reservedFor": [], "devices": []}
    [cause] = big["causes"]
    assert set(cause) == {"rule", "request", "severity", "message", "heldBy"} and cause["heldBy"] == []
    assert (cause["rule"], cause["request"], cause["severity"]) == ("DRA701", "gpus", "error")
    assert fine["state"] == "allocated" and fine["reservedFor"] == ["Pod ml/train"]
    assert fine["devices"] == ["gpu.example.com/node-0/gpu-0"] and fine["causes"] == []
    [e] = p["events"]
    assert e == {"type": "Warning", "reason": "FailedScheduling", "source": "default-scheduler", "count": 1,
                 "last": "2026-06-11T10:00:00Z", "message": "0/2 nodes are available: 2 cannot allocate all claims."}


def test_a_claim_two_pending_pods_share_is_judged_for_both(cluster, config):
    cluster.create("resourceclaims", claim("shared", count=4))
    for name in ("a", "b"):
        cluster.create("pods", pod(name, [{"name": "gpu", "resourceClaimName": "shared"}]))
    code, out, _ = why(config, "--all-pending", "-n", "ml", "-o", "json")
    pods = json.loads(out)["pods"]
    assert code == 1
    assert [(p["name"], p["claims"][0]["state"], [c["rule"] for c in p["claims"][0]["causes"]]) for p in pods] == [
        ("a", "unallocatable", ["DRA701"]), ("b", "unallocatable", ["DRA701"])]


def test_a_search_out_of_budget_is_undecided_not_allocatable(cluster, config):
    from dralint.cluster.connect import connect
    from dralint.cluster.state import list_cluster
    from dralint.kube.releases import Release
    from dralint.options import Options
    from dralint.pending.diagnose import diagnose
    from dralint.pending.gather import gather, read_pod
    from dralint.pending.render import text

    for n in range(2):   # DRA709's own example: a pair on one NUMA node, with a budget of 2 steps
        numa = slice_of(f"node-{n}")
        for device in numa["spec"]["devices"]:
            device["attributes"] = {"numa": {"int": 0}}
        cluster.update("resourceslices", numa)
    c = claim("mine", count=2)
    c["spec"]["devices"]["constraints"] = [{"matchAttribute": f"{GPU}/numa"}]
    cluster.create("resourceclaims", c)
    cluster.create("pods", pod("train", [{"name": "gpu", "resourceClaimName": "mine"}]))
    api = connect(str(config))
    snapshot = list_cluster(api)
    case = gather(api, snapshot, read_pod(api, "ml", "train"))
    [d] = diagnose(snapshot, [case], Options(release=Release(36), max_steps=2))
    assert d.claims[0].state == "undecided" and [c.rule for c in d.pod_causes] == ["DRA709"]
    assert not d.blocked
    out = io.StringIO()
    text([d], out)
    assert out.getvalue().startswith("Pod ml/train (Pending): undecided: the allocator's search ran past its budget")
