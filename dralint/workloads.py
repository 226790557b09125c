"""Where the batch and serving workloads of other projects (CRDs) keep their pod templates, and how
many pods each template runs.

Their paths depend on the object (``replicatedJobs[2]``, the roles of a PyTorchJob), so they are
worked out from its value. The shapes follow the projects' Go types:

- JobSet (jobset.x-k8s.io): ``spec.replicatedJobs[].template`` is a Job template; each replicated
  job runs ``replicas`` Jobs of ``parallelism`` pods.
- LeaderWorkerSet (leaderworkerset.x-k8s.io): ``spec.leaderWorkerTemplate.leaderTemplate`` (optional;
  the leader uses the worker template without it) and ``workerTemplate``; each of ``spec.replicas``
  groups has ``size`` pods, one of them the leader.
- Kubeflow training jobs (kubeflow.org): ``spec.<x>ReplicaSpecs.<Role>.template`` with ``replicas``.
- Kubeflow Trainer's TrainingRuntime (trainer.kubeflow.org): ``spec.template`` is a JobSet template.
  A TrainJob carries only overrides of a runtime's pods, no pod template of its own.
- KubeRay (ray.io): a RayCluster's ``spec.headGroupSpec.template`` (one pod) and
  ``spec.workerGroupSpecs[].template`` (``replicas`` × ``numOfHosts`` pods); a RayJob's cluster
  under ``spec.rayClusterSpec`` (and its ``spec.submitterPodTemplate``), a RayService's under
  ``spec.rayClusterConfig``.
- Volcano (batch.volcano.sh): a Job's ``spec.tasks[].template`` with ``replicas``.

Argo Workflows has no pod template: its templates describe containers, and pod-level fields such
as ``resourceClaims`` can only come in through ``podSpecPatch``, a string; it is not read.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterator

from .paths import FieldPath


@dataclass(frozen=True)
class PodTemplate:
    """One pod spec of a workload and how many pods run from it at once."""

    spec: FieldPath                 # the PodSpec inside the object
    count: int                      # pods from this spec at once
    count_path: FieldPath | None    # where the object says how many (for findings on the count)


def _count(value: Any, default: int = 1) -> int:
    """A replica-like count as written (``default`` when absent or nonsense)."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else default


def _mapping(value: Any) -> dict:
    return value if isinstance(value, dict) else {}


def _listed(value: Any) -> list:
    return value if isinstance(value, list) else []


def _jobset(spec: dict, base: FieldPath) -> Iterator[PodTemplate]:
    """The pods of a JobSet spec (also a TrainingRuntime's JobSet template) at ``base``."""
    for i, job in enumerate(_listed(spec.get("replicatedJobs"))):
        job = _mapping(job)
        job_spec = _mapping(_mapping(job.get("template")).get("spec"))
        path = base.child("replicatedJobs", i)
        yield PodTemplate(path.child("template", "spec", "template", "spec"),
                          _count(job.get("replicas")) * _count(job_spec.get("parallelism")), path.child("replicas"))


def _leader_worker_set(spec: dict, base: FieldPath) -> Iterator[PodTemplate]:
    groups = _count(spec.get("replicas"))
    lwt = _mapping(spec.get("leaderWorkerTemplate"))
    size = _count(lwt.get("size"))
    path = base.child("leaderWorkerTemplate")
    workers = size
    if "leaderTemplate" in lwt:
        yield PodTemplate(path.child("leaderTemplate", "spec"), groups, base.child("replicas"))
        workers = max(size - 1, 0)
    yield PodTemplate(path.child("workerTemplate", "spec"), groups * workers, path.child("size"))


def _replica_specs(field: str) -> Callable[[dict, FieldPath], Iterator[PodTemplate]]:
    def templates(spec: dict, base: FieldPath) -> Iterator[PodTemplate]:
        for role, replica in _mapping(spec.get(field)).items():
            path = base.child(field, role)
            yield PodTemplate(path.child("template", "spec"), _count(_mapping(replica).get("replicas")),
                              path.child("replicas"))
    return templates


def _ray_cluster(spec: dict, base: FieldPath) -> Iterator[PodTemplate]:
    if "headGroupSpec" in spec:
        yield PodTemplate(base.child("headGroupSpec", "template", "spec"), 1, None)
    for i, group in enumerate(_listed(spec.get("workerGroupSpecs"))):
        group = _mapping(group)
        path = base.child("workerGroupSpecs", i)
        # Without replicas the operator starts minReplicas of them.
        key = "replicas" if "replicas" in group else "minReplicas"
        yield PodTemplate(path.child("template", "spec"),
                          _count(group.get(key)) * _count(group.get("numOfHosts")), path.child(key))


def _ray_job(spec: dict, base: FieldPath) -> Iterator[PodTemplate]:
    yield from _ray_cluster(_mapping(spec.get("rayClusterSpec")), base.child("rayClusterSpec"))
    if "submitterPodTemplate" in spec:
        yield PodTemplate(base.child("submitterPodTemplate", "spec"), 1, None)


def _ray_service(spec: dict, base: FieldPath) -> Iterator[PodTemplate]:
    yield from _ray_cluster(_mapping(spec.get("rayClusterConfig")), base.child("rayClusterConfig"))


def _volcano_job(spec: dict, base: FieldPath) -> Iterator[PodTemplate]:
    for i, task in enumerate(_listed(spec.get("tasks"))):
        path = base.child("tasks", i)
        yield PodTemplate(path.child("template", "spec"), _count(_mapping(task).get("replicas")), path.child("replicas"))


def _training_runtime(spec: dict, base: FieldPath) -> Iterator[PodTemplate]:
    yield from _jobset(_mapping(_mapping(spec.get("template")).get("spec")), base.child("template", "spec"))


# (group, kind) -> the pod templates of the object's ``spec``.
_KINDS: dict[tuple[str, str], Callable[[dict, FieldPath], Iterator[PodTemplate]]] = {
    ("jobset.x-k8s.io", "JobSet"): _jobset,
    ("leaderworkerset.x-k8s.io", "LeaderWorkerSet"): _leader_worker_set,
    ("kubeflow.org", "PyTorchJob"): _replica_specs("pytorchReplicaSpecs"),
    ("kubeflow.org", "TFJob"): _replica_specs("tfReplicaSpecs"),
    ("kubeflow.org", "MPIJob"): _replica_specs("mpiReplicaSpecs"),
    ("kubeflow.org", "XGBoostJob"): _replica_specs("xgbReplicaSpecs"),
    ("kubeflow.org", "PaddleJob"): _replica_specs("paddleReplicaSpecs"),
    ("kubeflow.org", "JAXJob"): _replica_specs("jaxReplicaSpecs"),
    ("trainer.kubeflow.org", "TrainingRuntime"): _training_runtime,
    ("ray.io", "RayCluster"): _ray_cluster,
    ("ray.io", "RayJob"): _ray_job,
    ("ray.io", "RayService"): _ray_service,
    ("batch.volcano.sh", "Job"): _volcano_job,
}

WORKLOAD_KINDS = frozenset(kind for _, kind in _KINDS)


def is_workload_kind(group: str, kind: str) -> bool:
    """Whether dralint reads the pod templates of this (group, kind)."""
    return (group, kind) in _KINDS


def pod_templates(group: str, kind: str, value: dict) -> tuple[PodTemplate, ...]:
    """The pod templates of an object of a workload kind above, in the order it lists them (none for
    other kinds)."""
    templates = _KINDS.get((group, kind))
    if templates is None:
        return ()
    return tuple(templates(_mapping(value.get("spec")), FieldPath(("spec",))))


def carries_pod_claims(value: Any) -> bool:
    """Whether a pod spec with ``resourceClaims`` sits anywhere in ``value`` (a mapping with a
    ``containers`` list and a ``resourceClaims`` list): an object of a kind dralint does not read
    that asks for devices."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            if isinstance(item.get("containers"), list) and isinstance(item.get("resourceClaims"), list):
                return True
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return False
