"""Where pods may run, replicas beside each other, ``--together``, ``--node`` and ``--trace``."""
from __future__ import annotations

import io
import json

import pytest

from dralint.cli import main
from dralint.feasibility.judge import UnknownNode
from test_feasibility_search import CLASS, claim, gpus, messages, node_slice, req, run


def node(name: str, labels: dict | None = None, taints: list | None = None, cordoned: bool = False) -> str:
    spec: dict = {}
    if taints:
        spec["taints"] = taints
    if cordoned:
        spec["unschedulable"] = True
    return json.dumps({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels or {}},
                       "spec": spec})


def template(name: str, count: int = 1) -> str:
    return claim(name, [req(count=count)], kind="ResourceClaimTemplate")


def workload(name: str, spec: dict, kind: str = "Pod", replicas: int | None = None, claims=("gpu",),
             shared=()) -> str:
    entries = [{"name": t, "resourceClaimTemplateName": t} for t in claims]
    entries += [{"name": c, "resourceClaimName": c} for c in shared]
    pod = {"containers": [{"name": "c", "image": "x"}], "resourceClaims": entries, **spec}
    if kind == "Pod":
        return json.dumps({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"},
                           "spec": pod})
    body: dict = {"template": {"spec": pod}}
    if replicas is not None:
        body["replicas"] = replicas
    return json.dumps({"apiVersion": "apps/v1", "kind": kind, "metadata": {"name": name, "namespace": "default"},
                       "spec": body})


CLUSTER = [CLASS, node("node-1", {"zone": "a"}), node("node-2", {"zone": "b"}),
           node_slice("node-1", gpus(2)), node_slice("node-2", gpus(2))]


def test_node_selector_and_affinity_restrict_where_a_pod_is_allocated():
    for spec in ({"nodeSelector": {"zone": "b"}},
                 {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                     "nodeSelectorTerms": [{"matchExpressions": [
                         {"key": "zone", "operator": "In", "values": ["b"]}]}]}}}}):
        report = run(CLUSTER, [template("gpu"), workload("p", spec)], show_allocation=True)
        assert not report.problems, spec
        assert [a["node"] for a in report.allocations] == ["node-2"], spec


def allocated(name: str, node_name: str) -> str:
    """A claim the cluster state shows allocated on ``node_name``."""
    obj = json.loads(claim(name, [req()]))
    obj["status"] = {"allocation": {
        "devices": {"results": [{"request": "gpu", "driver": "gpu.example.com", "pool": node_name, "device": "gpu-0"}]},
        "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
            {"key": "metadata.name", "operator": "In", "values": [node_name]}]}]}}}
    return json.dumps(obj)


def test_a_pod_naming_its_node_gets_no_allocation_for_claims_only_the_scheduler_would_allocate():
    # The pod check reports it (DRA249); the judge neither allocates nor explains.
    for mine in ([template("gpu"), workload("p", {"nodeName": "node-2"})],
                 [claim("data", [req()]), workload("p", {"nodeName": "node-2"}, claims=(), shared=("data",))]):
        report = run(CLUSTER, mine, show_allocation=True)
        assert not report.problems and not report.allocations


def test_a_pod_naming_its_node_may_use_a_claim_allocated_there():
    pod = workload("p", {"nodeName": "node-2"}, claims=(), shared=("data",))
    assert not run(CLUSTER + [allocated("data", "node-2")], [pod]).problems
    (msg,) = messages(run(CLUSTER + [allocated("data", "node-1")], [pod]))
    assert msg == ("Pod default/p cannot run on any node: none of the 2 nodes can run it: "
                   "1 is not its nodeName, 1 is not where its allocated claims are")


def test_a_pod_naming_its_node_ignores_its_no_schedule_taints_but_not_no_execute_ones():
    pod = workload("p", {"nodeName": "node-1"}, claims=(), shared=("data",))
    for tainted in (node("node-1", taints=[{"key": "gpu", "value": "busy", "effect": "NoSchedule"}]),
                    node("node-1", cordoned=True)):
        assert not run([CLASS, tainted, node_slice("node-1", gpus(1)), allocated("data", "node-1")], [pod]).problems
    evicting = node("node-1", taints=[{"key": "gpu", "value": "busy", "effect": "NoExecute"}])
    (msg,) = messages(run([CLASS, evicting, node_slice("node-1", gpus(1)), allocated("data", "node-1")], [pod]))
    assert "1 has taint gpu=busy:NoExecute that it does not tolerate" in msg


def test_a_pod_no_node_can_run_is_reported():
    report = run(CLUSTER, [template("gpu"), workload("p", {"nodeSelector": {"zone": "c"}})])
    (msg,) = messages(report)
    assert msg == "Pod default/p cannot run on any node: none of the 2 nodes can run it: 2 do not match its nodeSelector"
    assert [str(p.path) for _, p in report.problems] == ["spec.nodeSelector"]


def test_one_node_that_cannot_run_a_pod_gets_singular_verbs():
    cluster = [CLASS, node("node-1", {"zone": "a"}), node_slice("node-1", gpus(1))]
    (msg,) = messages(run(cluster, [template("gpu"), workload("p", {"nodeSelector": {"zone": "c"}})]))
    assert msg.endswith("the 1 node cannot run it: 1 does not match its nodeSelector")


def test_node_taints_and_cordons_keep_pods_away_unless_tolerated():
    cluster = [CLASS, node("node-1", taints=[{"key": "gpu", "value": "busy", "effect": "NoSchedule"}]),
               node("node-2", cordoned=True), node_slice("node-1", gpus(1)), node_slice("node-2", gpus(1))]
    (msg,) = messages(run(cluster, [template("gpu"), workload("p", {})]))
    assert "1 is cordoned" in msg and "1 has taint gpu=busy:NoSchedule that it does not tolerate" in msg
    tolerant = {"tolerations": [{"key": "gpu", "operator": "Exists"}]}
    report = run(cluster, [template("gpu"), workload("p", tolerant)], show_allocation=True)
    assert [a["node"] for a in report.allocations] == ["node-1"]
    # A claim on its own has no pod yet: node taints say nothing about it.
    assert not run(cluster, [claim("alone", [req()])]).problems


def test_placement_narrows_the_explanation_to_the_nodes_the_pod_can_use():
    report = run(CLUSTER, [template("gpu", count=2), workload("p", {"nodeSelector": {"zone": "a"}}),
                           claim("held", [req(count=2)])])
    assert not report.problems  # node-1 has two GPUs
    full = [CLASS, node("node-1", {"zone": "a"}), node("node-2", {"zone": "b"}),
            node_slice("node-1", gpus(1)), node_slice("node-2", gpus(2))]
    report = run(full, [template("gpu", count=2), workload("p", {"nodeSelector": {"zone": "a"}})])
    # node-2 has two: the pod's nodeSelector is the cause, so the pod is told, not the template.
    ((obj, problem),) = report.problems
    assert (obj.kind, str(problem.path)) == ("Pod", "spec.resourceClaims[0]")
    assert "(on the 1 of 2 nodes the pod can run on)" in problem.message and "no node has 2" in problem.message


def test_a_failure_of_the_template_itself_stays_on_the_template():
    full = [CLASS, node("node-1", {"zone": "a"}), node("node-2", {"zone": "b"}),
            node_slice("node-1", gpus(1)), node_slice("node-2", gpus(1))]
    report = run(full, [template("gpu", count=2), workload("p", {"nodeSelector": {"zone": "a"}})])
    assert [(o.kind, str(p.path)) for o, p in report.problems] == [
        ("ResourceClaimTemplate", "spec.spec.devices.requests[0]"), ("Pod", "spec.resourceClaims[0]")]
    on_template, on_pod = (p.message for _, p in report.problems)
    # Explained over every node, with no word of the pod: the template fails for every pod.
    assert on_template == ("claim default/p-gpu cannot be allocated: request `gpu` needs 2 devices of class `gpu`: "
                           "the class matches 2 devices on 2 nodes; no node has 2")
    assert "see the finding on ResourceClaimTemplate default/gpu" in on_pod


def test_pods_sharing_a_template_are_each_told_what_their_placement_does():
    full = [CLASS, node("node-1", {"zone": "a"}), node("node-2", {"zone": "b"}),
            node_slice("node-1", gpus(1)), node_slice("node-2", gpus(2))]
    report = run(full, [template("gpu", count=2), workload("in-a", {"nodeSelector": {"zone": "a"}}),
                        workload("in-b", {"nodeSelector": {"zone": "b"}})])
    assert [(o.kind, o.name) for o, _ in report.problems] == [("Pod", "in-a")]


def test_replicas_are_placed_beside_each_other():
    three = workload("train", {}, kind="Deployment", replicas=3)
    report = run(CLUSTER, [template("gpu", count=2), three])
    (msg,) = messages(report)
    assert msg.startswith("Deployment default/train asks for 3 pods, but only 2 can get their devices at once")
    assert "other claims hold 4, which leaves none" in msg
    assert [str(p.path) for _, p in report.problems] == ["spec.replicas"]
    two = workload("train", {}, kind="Deployment", replicas=2)
    report = run(CLUSTER, [template("gpu", count=2), two], show_allocation=True)
    assert not report.problems
    assert sorted((a["replica"], a["node"]) for a in report.allocations) == [(1, "node-1"), (2, "node-2")]
    job = json.loads(workload("batch", {}, kind="Job"))
    job["apiVersion"], job["spec"]["parallelism"] = "batch/v1", 5
    (msg,) = messages(run(CLUSTER, [template("gpu"), json.dumps(job)]))
    assert "asks for 5 pods, but only 4" in msg


def test_replicas_share_a_claim_named_directly_on_its_node():
    cluster = [CLASS, node("node-1"), node("node-2"), node_slice("node-1", gpus(3)), node_slice("node-2", gpus(3))]
    shared = claim("data", [req()])
    report = run(cluster, [template("gpu"), shared,
                           workload("w", {}, kind="Deployment", replicas=2, shared=("data",))], show_allocation=True)
    assert not report.problems
    nodes = {a["node"] for a in report.allocations}
    assert nodes == {"node-1"}  # the second replica goes where claim `data` was allocated
    report = run(cluster, [template("gpu"), shared,
                           workload("w", {}, kind="Deployment", replicas=3, shared=("data",))])
    (msg,) = messages(report)
    assert "asks for 3 pods, but only 2" in msg  # node-2's GPUs are of no use: `data` is on node-1


def test_together_reports_claims_that_do_not_fit_beside_the_earlier_ones():
    mine = [claim("a", [req(count=2)]), claim("b", [req(count=2)]), claim("c", [req()])]
    assert not run(CLUSTER, mine).problems  # each fits alone
    report = run(CLUSTER, mine, together=True, show_allocation=True)
    (msg,) = messages(report)
    assert msg.startswith("ResourceClaim default/c does not fit beside the claims and pods judged before it "
                          "(--together): on its own it fits (on node-1), but with the devices of "
                          "ResourceClaim default/a, ResourceClaim default/b taken")
    picked = [d for a in report.allocations for devs in a["devices"].values() for d in devs]
    assert len(picked) == len(set(picked)) == 4  # never the same GPU twice


def _cli(*args: str, tmp_path) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(args) + ["--no-config"], stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def test_unknown_node_is_a_usage_error_naming_the_nodes(tmp_path):
    (tmp_path / "cluster.yaml").write_text("\n---\n".join(CLUSTER))
    (tmp_path / "claim.yaml").write_text(claim("c", [req()]).replace('"gpu"', '"gpu"'))
    code, _, err = _cli(str(tmp_path / "claim.yaml"), "--cluster", str(tmp_path / "cluster.yaml"), "--node",
                        "node-3", tmp_path=tmp_path)
    assert code == 2
    assert "--node: the cluster state has no node 'node-3'" in err and "node-1, node-2" in err


def test_trace_of_a_claim_not_in_the_run_says_so(tmp_path):
    (tmp_path / "cluster.yaml").write_text("\n---\n".join(CLUSTER))
    (tmp_path / "claim.yaml").write_text(claim("c", [req()]))
    code, out, _ = _cli(str(tmp_path / "claim.yaml"), "--cluster", str(tmp_path / "cluster.yaml"), "--trace",
                        "other", "--format", "json", tmp_path=tmp_path)
    traces = json.loads(out)["traces"]
    assert traces["other"] == ["no claim 'other' is judged in this run (claims judged: default/c)"]


# --- slices of nodes that have no Node object ------------------------------------------------------

GHOSTED = [CLASS, node("node-1"), node_slice("node-1", gpus(1)), node_slice("ghost", gpus(4))]


def test_slices_of_a_node_without_a_node_object_count_for_nothing_once_nodes_are_known():
    (msg,) = messages(run(GHOSTED, [claim("c", [req(count=2)])]))
    assert "the class matches 1 device on 1 node; no node has 2" in msg
    assert "4 matching devices are published for node ghost, which has no Node object" in msg
    (on_template, _) = messages(run(GHOSTED, [template("gpu", count=2), workload("p", {})]))
    assert "node ghost, which has no Node object" in on_template
    report = run(GHOSTED, [claim("c", [req(count=2)])])
    (details,) = [p.details for _, p in report.problems]
    assert details["requests"]["gpu"]["absent_nodes"] == {"ghost": 4}


def test_several_absent_nodes_are_named_with_their_devices():
    cluster = [CLASS, node("node-1"), node_slice("ghost", gpus(4)), node_slice("gone", gpus(1))]
    (msg,) = messages(run(cluster, [claim("c", [req(count=2)])]))
    assert "5 matching devices are published for nodes ghost (4), gone (1), which have no Node object" in msg


def test_without_node_objects_the_nodes_slices_name_still_count():
    # A cluster dump without Nodes says nothing about which nodes exist: its slices' nodes are the nodes.
    cluster = [CLASS, node_slice("node-1", gpus(1)), node_slice("ghost", gpus(4))]
    assert not run(cluster, [claim("c", [req(count=2)])]).problems


def test_node_flag_naming_a_node_without_a_node_object_says_so():
    with pytest.raises(UnknownNode, match="slices name it, but it has no Node object"):
        run(GHOSTED, [claim("c", [req()])], node="ghost")


def test_a_known_empty_node_list_gives_no_node_to_any_claim():
    # The webhook's watch lists every Node: a cluster without one places nothing, whatever its slices say.
    cluster = [CLASS, node_slice("ghost", gpus(4))]
    (msg,) = messages(run(cluster, [claim("c", [req(count=2)])], nodes_listed=True))
    assert msg.startswith("claim default/c cannot be allocated: the cluster state has no nodes; 4 matching devices "
                          "are published for node ghost, which has no Node object")
    (msg,) = messages(run(cluster, [template("gpu"), workload("p", {})], nodes_listed=True))
    assert msg.startswith("Pod default/p cannot run on any node: the cluster state has no nodes; 4 matching")
