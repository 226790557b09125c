"""DaemonSets judged per eligible node: one pod per node the controller gives it, each pinned there."""
from __future__ import annotations

import json

from test_feasibility_placement import node, workload
from test_feasibility_search import CLASS, claim, gpus, messages, node_slice, req, run

ALL = {"name": "gpu", "exactly": {"deviceClassName": "gpu", "allocationMode": "All"}}
MONITOR = claim("gpu", [ALL], kind="ResourceClaimTemplate")


def daemonset(spec: dict | None = None, **kw) -> str:
    return workload("mon", spec or {}, kind="DaemonSet", **kw)


def findings(report) -> list:
    return [p for _, p in report.problems if p.rule == "DRA710"]


def test_a_daemonset_asking_for_all_gpus_is_reported_on_each_gpu_less_node():
    cluster = [CLASS, node("gpu-1"), node("cpu-1"), node("cpu-2"), node_slice("gpu-1", gpus(2))]
    report = run(cluster, [MONITOR, daemonset()])
    (problem,) = findings(report)
    assert problem.message == (
        "DaemonSet default/mon runs a pod on 3 nodes, and on 2 of them the pod cannot get its devices and stays "
        "Pending: cpu-1, cpu-2 (on cpu-1 and cpu-2: claim default/mon-gpu: request `gpu` needs all devices of class "
        "`gpu`: the class matches no device in a usable pool)")
    assert str(problem.path) == "spec.template.spec.resourceClaims"
    assert problem.details["nodes"] == ["cpu-1", "cpu-2"]
    assert not messages(report)  # judged per node, not once as a pod that may land anywhere


def test_a_daemonset_whose_pod_fits_on_every_eligible_node_passes():
    cluster = [CLASS, node("gpu-1"), node("gpu-2"), node_slice("gpu-1", gpus(2)), node_slice("gpu-2", gpus(1))]
    assert not run(cluster, [MONITOR, daemonset()]).problems


def test_nodes_the_node_selector_excludes_are_not_reported():
    cluster = [CLASS, node("gpu-1", {"gpu": "yes"}), node("gpu-2", {"gpu": "yes"}), node("cpu-1"),
               node_slice("gpu-1", gpus(1))]
    (problem,) = findings(run(cluster, [MONITOR, daemonset({"nodeSelector": {"gpu": "yes"}})]))
    assert problem.details == {"eligible_nodes": 2, "failing_nodes": 1, "nodes": ["gpu-2"]}
    assert "runs a pod on 2 nodes, and on 1 of them" in problem.message


def test_required_node_affinity_decides_eligibility():
    affinity = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "gpu", "operator": "Exists"}]}]}}}
    cluster = [CLASS, node("gpu-1", {"gpu": "yes"}), node("cpu-1"), node_slice("gpu-1", gpus(1))]
    assert not run(cluster, [MONITOR, daemonset({"affinity": affinity})]).problems


def test_a_cordoned_node_still_runs_a_daemonset_pod():
    cluster = [CLASS, node("gpu-1", cordoned=True), node("cpu-1", cordoned=True), node_slice("gpu-1", gpus(1))]
    (problem,) = findings(run(cluster, [MONITOR, daemonset()]))
    assert problem.details["nodes"] == ["cpu-1"] and problem.details["eligible_nodes"] == 2


def test_a_no_schedule_taint_without_toleration_makes_a_node_ineligible():
    taint = {"key": "dedicated", "value": "db", "effect": "NoSchedule"}
    cluster = [CLASS, node("gpu-1"), node("cpu-1", taints=[taint]), node_slice("gpu-1", gpus(1))]
    assert not run(cluster, [MONITOR, daemonset()]).problems
    tolerated = daemonset({"tolerations": [{"key": "dedicated", "operator": "Exists"}]})
    (problem,) = findings(run(cluster, [MONITOR, tolerated]))
    assert problem.details["nodes"] == ["cpu-1"]


def test_the_controllers_default_tolerations_keep_condition_tainted_nodes_eligible():
    pressure = {"key": "node.kubernetes.io/disk-pressure", "effect": "NoSchedule"}
    network = {"key": "node.kubernetes.io/network-unavailable", "effect": "NoSchedule"}
    cluster = [CLASS, node("gpu-1"), node("cpu-1", taints=[pressure]), node("cpu-2", taints=[network]),
               node_slice("gpu-1", gpus(1))]
    (problem,) = findings(run(cluster, [MONITOR, daemonset()]))
    assert problem.details["nodes"] == ["cpu-1"]   # network-unavailable is tolerated on the host network only
    (problem,) = findings(run(cluster, [MONITOR, daemonset({"hostNetwork": True})]))
    assert problem.details["nodes"] == ["cpu-1", "cpu-2"]


def test_many_failing_nodes_are_named_first_and_counted():
    cluster = [CLASS, node("gpu-1"), node_slice("gpu-1", gpus(1))] + [node(f"cpu-{i:02}") for i in range(8)]
    (problem,) = findings(run(cluster, [MONITOR, daemonset()]))
    assert "on 8 of them the pod cannot get its devices and stays Pending: cpu-00, cpu-01, cpu-02 and 5 more (" \
        in problem.message
    assert problem.details["failing_nodes"] == 8


def test_without_node_objects_a_daemonset_is_judged_as_one_pod():
    cluster = [CLASS, node_slice("gpu-1", gpus(1)), node_slice("cpu-1", [])]
    report = run(cluster, [MONITOR, daemonset()])
    assert not report.problems


def test_network_attached_devices_taken_by_earlier_nodes_pods_stay_taken():
    shared = json.dumps({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": "fabric"},
                         "spec": {"driver": "gpu.example.com", "allNodes": True, "devices": gpus(2),
                                  "pool": {"name": "fabric", "generation": 1, "resourceSliceCount": 1}}})
    cluster = [CLASS, node("node-1"), node("node-2"), node("node-3"), shared]
    (problem,) = findings(run(cluster, [claim("gpu", [req()], kind="ResourceClaimTemplate"), daemonset()]))
    assert problem.details["nodes"] == ["node-3"]
    assert "other claims hold 2, which leaves none" in problem.message   # the pods on node-1 and node-2


def test_a_shared_claim_on_a_node_local_device_keeps_the_other_pods_pending():
    cluster = [CLASS, node("gpu-1"), node("gpu-2"), node_slice("gpu-1", gpus(1)), node_slice("gpu-2", gpus(1))]
    (problem,) = findings(run(cluster, [claim("one", [req()]), daemonset(claims=(), shared=("one",))]))
    assert problem.details["nodes"] == ["gpu-2"]
    assert "its shared claim default/one was allocated on gpu-1" in problem.message


def test_show_allocation_lists_the_pod_of_each_node_that_runs_one():
    cluster = [CLASS, node("gpu-1"), node("gpu-2"), node("cpu-1"), node_slice("gpu-1", gpus(2)),
               node_slice("gpu-2", gpus(1))]
    report = run(cluster, [MONITOR, daemonset()], show_allocation=True)
    assert [(a["node"], a["devices"]) for a in report.allocations] == [
        ("gpu-1", {"gpu": ["gpu.example.com/gpu-1/gpu-0", "gpu.example.com/gpu-1/gpu-1"]}),
        ("gpu-2", {"gpu": ["gpu.example.com/gpu-2/gpu-0"]})]
    assert findings(report)[0].details["nodes"] == ["cpu-1"]


def test_a_kept_world_that_lists_every_node_judges_a_daemonset_per_node():
    cluster = [CLASS, node("gpu-1"), node("cpu-1"), node_slice("gpu-1", gpus(1))]
    (problem,) = findings(run(cluster, [MONITOR, daemonset()], nodes_listed=True))
    assert problem.details["nodes"] == ["cpu-1"]
    # The webhook's watch lists the nodes even when there are none: no node, no DaemonSet pod.
    assert not run([CLASS, node_slice("gpu-1", gpus(1))], [MONITOR, daemonset()], nodes_listed=True).problems
