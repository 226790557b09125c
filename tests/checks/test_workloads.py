"""Workload CRDs (dralint/workloads.py): their pod templates are judged like a Deployment's, with the
pods each runs, and objects of unknown kinds whose pods ask for devices are named once per run."""
from __future__ import annotations

import io
import json

import pytest
import yaml

from dralint.cli import main
from dralint.kube.releases import Release
from dralint.engine import Options, lint_text
from dralint.paths import FieldPath
from dralint.workloads import pod_templates
from test_feasibility_placement import CLUSTER, template
from test_feasibility_search import messages, run

TEMPLATE = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
            "metadata": {"name": "gpu", "namespace": "default"},
            "spec": {"spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com"}}]}}}}


def pod(container_claim: str = "gpu", template_name: str = "gpu") -> dict:
    return {"resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": template_name}],
            "containers": [{"name": "main", "image": "busybox", "resources": {"claims": [{"name": container_claim}]}}]}


def jobset(spec: dict, replicas: int = 1, parallelism: int = 1) -> dict:
    return {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "metadata": {"name": "train", "namespace": "default"},
            "spec": {"replicatedJobs": [
                {"name": "driver", "template": {"spec": {"template": {"spec": pod()}}}},
                {"name": "workers", "replicas": replicas,
                 "template": {"spec": {"parallelism": parallelism, "template": {"spec": spec}}}}]}}


def lws(leader: dict | None, worker: dict, replicas: int = 1, size: int = 1) -> dict:
    lwt: dict = {"size": size, "workerTemplate": {"spec": worker}}
    if leader is not None:
        lwt["leaderTemplate"] = {"spec": leader}
    return {"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet",
            "metadata": {"name": "serve", "namespace": "default"},
            "spec": {"replicas": replicas, "leaderWorkerTemplate": lwt}}


def pytorchjob(spec: dict) -> dict:
    return {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "metadata": {"name": "pt", "namespace": "default"},
            "spec": {"pytorchReplicaSpecs": {"Master": {"replicas": 1, "template": {"spec": pod()}},
                                             "Worker": {"replicas": 3, "template": {"spec": spec}}}}}


def raycluster(spec: dict) -> dict:
    return {"apiVersion": "ray.io/v1", "kind": "RayCluster", "metadata": {"name": "ray", "namespace": "default"},
            "spec": {"headGroupSpec": {"template": {"spec": pod()}},
                     "workerGroupSpecs": [{"groupName": "gpu", "replicas": 2, "numOfHosts": 2,
                                           "template": {"spec": spec}}]}}


def volcano(spec: dict) -> dict:
    return {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "metadata": {"name": "vc", "namespace": "default"},
            "spec": {"tasks": [{"name": "ps", "replicas": 1, "template": {"spec": pod()}},
                               {"name": "worker", "replicas": 4, "template": {"spec": spec}}]}}


def text_of(objects: tuple[dict, ...]) -> str:
    return "---\n".join(yaml.safe_dump(o, sort_keys=False) for o in (TEMPLATE, *objects))


def findings(*objects: dict) -> list[tuple[str, str, int]]:
    return sorted((f.rule, f.field, f.line) for f in lint_text(text_of(objects), Options(release=Release(34))))


def line_of(objects: tuple[dict, ...], needle: str) -> int:
    """The line of the first ``needle`` in the text ``findings`` lints."""
    return next(i for i, line in enumerate(text_of(objects).splitlines(), 1) if needle in line)


KINDS = {
    "JobSet": (lambda spec: jobset(spec), "spec.replicatedJobs[1].template.spec.template.spec"),
    "LeaderWorkerSet": (lambda spec: lws(pod(), spec, size=2), "spec.leaderWorkerTemplate.workerTemplate.spec"),
    "PyTorchJob": (pytorchjob, "spec.pytorchReplicaSpecs.Worker.template.spec"),
    "RayCluster": (raycluster, "spec.workerGroupSpecs[0].template.spec"),
    "Volcano Job": (volcano, "spec.tasks[1].template.spec"),
}


@pytest.mark.parametrize("kind", KINDS)
def test_container_claim_typo_in_a_workload_crd_is_an_error_at_its_line(kind):
    make, spec = KINDS[kind]
    assert findings(make(pod())) == []
    objects = (make(pod(container_claim="gpus")),)
    assert findings(*objects) == [("DRA244", f"{spec}.containers[0].resources.claims[0]", line_of(objects, "name: gpus"))]


@pytest.mark.parametrize("kind", KINDS)
def test_missing_claim_template_in_a_workload_crd_is_reported_at_its_line(kind):
    make, spec = KINDS[kind]
    objects = (make(pod(template_name="gpux")),)
    # As for a Deployment: a warning, since the template may exist in the cluster.
    assert findings(*objects) == [("DRA602", f"{spec}.resourceClaims[0].resourceClaimTemplateName",
                                   line_of(objects, "resourceClaimTemplateName: gpux"))]


def test_lws_without_leader_template_runs_every_pod_from_the_worker_template():
    (worker,) = pod_templates("leaderworkerset.x-k8s.io", "LeaderWorkerSet", lws(None, pod(), replicas=2, size=4))
    assert (worker.count, str(worker.count_path)) == (8, "spec.leaderWorkerTemplate.size")
    leader, worker = pod_templates("leaderworkerset.x-k8s.io", "LeaderWorkerSet", lws(pod(), pod(), replicas=2, size=4))
    assert (leader.count, worker.count) == (2, 6)


def test_pod_counts_of_each_kind():
    counts = {
        ("jobset.x-k8s.io", "JobSet"): (jobset(pod(), replicas=3, parallelism=2), [1, 6]),
        ("kubeflow.org", "PyTorchJob"): (pytorchjob(pod()), [1, 3]),
        ("ray.io", "RayCluster"): (raycluster(pod()), [1, 4]),
        ("batch.volcano.sh", "Job"): (volcano(pod()), [1, 4]),
    }
    for (group, kind), (value, expected) in counts.items():
        assert [t.count for t in pod_templates(group, kind, value)] == expected, kind


def test_rayjob_and_training_runtime_templates_are_found_under_their_cluster_and_jobset_specs():
    rayjob = {"spec": {"rayClusterSpec": raycluster(pod())["spec"], "submitterPodTemplate": {"spec": pod()}}}
    assert [str(t.spec) for t in pod_templates("ray.io", "RayJob", rayjob)] == [
        "spec.rayClusterSpec.headGroupSpec.template.spec", "spec.rayClusterSpec.workerGroupSpecs[0].template.spec",
        "spec.submitterPodTemplate.spec"]
    runtime = {"spec": {"template": {"spec": jobset(pod())["spec"]}}}
    assert pod_templates("trainer.kubeflow.org", "TrainingRuntime", runtime)[1].spec == FieldPath.parse(
        "spec.template.spec.replicatedJobs[1].template.spec.template.spec")


def test_jobset_pods_are_placed_beside_each_other():
    value = jobset(pod(), replicas=3, parallelism=2)
    value["spec"]["replicatedJobs"] = value["spec"]["replicatedJobs"][1:]
    (msg,) = messages(run(CLUSTER, [template("gpu"), json.dumps(value)]))
    assert msg.startswith("JobSet default/train asks for 6 pods, but only 4 can get their devices at once")


def test_unknown_kinds_whose_pods_ask_for_devices_are_named_once_per_run(tmp_path):
    workflow = {"apiVersion": "example.com/v1", "kind": "Trainer", "metadata": {"name": "t"},
                "spec": {"template": {"spec": pod()}}}
    plain = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}, "spec": {"size": 1}}
    path = tmp_path / "m.yaml"
    path.write_text("---\n".join(json.dumps(o) + "\n" for o in (workflow, workflow, plain)))
    out, err = io.StringIO(), io.StringIO()
    assert main([str(path)], stdout=out, stderr=err) == 0
    notes = [line for line in err.getvalue().splitlines() if line.startswith("dralint: note:")]
    assert len(notes) == 2
    assert "did not read 2 object(s) whose pod templates carry resourceClaims" in notes[0]
    assert "Trainer (example.com/v1) ×2" in notes[0] and "Widget" not in notes[0]
    # Every other kind is named once too, in its own note.
    assert notes[1] == ("dralint: note: did not judge 1 object(s) of kinds dralint does not read: Widget "
                        "(example.com/v1) (docs/usage.md lists what is read)")
    assert "2 object(s) of unknown workload kinds not read" in out.getvalue()


def test_the_kinds_not_judged_are_named_once_most_frequent_first(tmp_path):
    kinds = [f"Kind{i}" for i in range(10)] + ["ConfigMap"] * 3
    path = tmp_path / "chart.yaml"
    path.write_text("---\n".join(json.dumps({"apiVersion": "v1", "kind": k, "metadata": {"name": f"o{i}"}}) + "\n"
                                  for i, k in enumerate(kinds)))
    out, err = io.StringIO(), io.StringIO()
    assert main([str(path)], stdout=out, stderr=err) == 0
    (note,) = [line for line in err.getvalue().splitlines() if "did not judge" in line]
    assert note.startswith("dralint: note: did not judge 13 object(s) of kinds dralint does not read: "
                           "ConfigMap (v1) ×3, Kind0 (v1), ")
    assert note.endswith("and 3 more kind(s) (docs/usage.md lists what is read)")


def test_cluster_files_of_kinds_not_judged_are_not_named(tmp_path):
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(json.dumps({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}) + "\n")
    linted = tmp_path / "pod.yaml"
    linted.write_text(json.dumps({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": pod()}) + "\n")
    out, err = io.StringIO(), io.StringIO()
    main(["--cluster", str(cluster), str(linted)], stdout=out, stderr=err)
    assert "did not judge" not in err.getvalue()
