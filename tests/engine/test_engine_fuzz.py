"""Property tests: mutated real-world manifests and random documents never crash the engine.

An uncaught exception, or an internal-error finding (DRA000), anywhere in the engine is a bug.
The default run tries a few hundred inputs; ``-m slow`` runs the long suite (over 10,000 inputs
together with the source, schema and CEL suites).
"""
from __future__ import annotations

import copy
import random

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dralint.engine import Options, lint_text, review
from dralint.kube.releases import Release, parse_version

from conftest import REPO, SHARED


def _seed_documents() -> list[dict]:
    docs: list[dict] = []
    folders = [REPO / "examples", SHARED / "realworld"]
    for folder in folders:
        for path in sorted(folder.rglob("*.yaml")) if folder.is_dir() else ():
            try:
                docs += [d for d in yaml.safe_load_all(path.read_text(encoding="utf-8")) if isinstance(d, dict)]
            except yaml.YAMLError:
                continue
    return docs


SEEDS = _seed_documents()
SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-2**70, 2**70), st.floats(allow_nan=False),
                    st.text(max_size=30), st.sampled_from(["", "0", "-1", "All", "ExactCount", "a/b/c", "x" * 300,
                                                           "device.driver == 1", "1Gi", "NoSchedule", "*"]))
JSONISH = st.recursive(SCALARS, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                        st.dictionaries(st.text(max_size=12), inner, max_size=4)),
                       max_leaves=20)


def _paths(value, prefix=()):
    yield prefix
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _paths(v, prefix + (k,))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _paths(v, prefix + (i,))


def _mutate(doc: dict, rnd: random.Random, replacement) -> dict:
    doc = copy.deepcopy(doc)
    paths = [p for p in _paths(doc) if p]
    if not paths:
        return doc
    path = rnd.choice(paths)
    parent = doc
    for seg in path[:-1]:
        parent = parent[seg]
    action = rnd.random()
    if action < 0.6:
        parent[path[-1]] = replacement
    elif action < 0.8 and isinstance(parent, dict):
        del parent[path[-1]]
    elif isinstance(parent, list):
        parent.append(copy.deepcopy(parent[path[-1]]))
    else:
        parent[path[-1] + "x" if isinstance(path[-1], str) else path[-1]] = replacement
    return doc


def _check(findings) -> None:
    internal = [f.message for f in findings if f.rule == "DRA000"]
    assert not internal, internal


def _run_mutation(data, seed: int) -> None:
    rnd = random.Random(seed)
    base = rnd.choice(SEEDS)
    doc = base
    for _ in range(rnd.randint(1, 4)):
        doc = _mutate(doc, rnd, data.draw(JSONISH))
    version = rnd.choice(["1.30", "1.32", "1.33", "1.34", "1.35", "1.36", "1.37"])
    text = yaml.safe_dump(doc, sort_keys=False)
    _check(lint_text(text, Options(release=Release(parse_version(version)))))
    _check(review(doc, base if rnd.random() < 0.3 else None, "UPDATE" if rnd.random() < 0.3 else "CREATE",
                  rnd.choice(["", "status"]), Options(release=Release(parse_version(version)))))


@pytest.mark.skipif(not SEEDS, reason="no seed manifests")
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data(), st.integers(0, 2**32))
def test_mutated_manifests_never_crash(data, seed):
    _run_mutation(data, seed)


@pytest.mark.slow
@pytest.mark.skipif(not SEEDS, reason="no seed manifests")
@settings(max_examples=4000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data(), st.integers(0, 2**32))
def test_mutated_manifests_never_crash_long(data, seed):
    _run_mutation(data, seed)


KINDS = st.sampled_from(["ResourceClaim", "ResourceClaimTemplate", "DeviceClass", "ResourceSlice", "DeviceTaintRule",
                         "Pod", "Deployment", "ResourceClass"])
VERSIONS = st.sampled_from(["resource.k8s.io/v1", "resource.k8s.io/v1beta1", "resource.k8s.io/v1beta2",
                            "resource.k8s.io/v1alpha3", "resource.k8s.io/v1alpha2", "v1", "apps/v1"])


@settings(max_examples=150, deadline=None)
@given(KINDS, VERSIONS, JSONISH, JSONISH)
def test_random_objects_never_crash(kind, api_version, spec, status):
    obj = {"apiVersion": api_version, "kind": kind, "metadata": {"name": "x", "namespace": "ns"}, "spec": spec,
           "status": status}
    _check(review(obj, None, "CREATE", "", Options()))
    _check(lint_text(yaml.safe_dump(obj), Options()))


@pytest.mark.slow
@settings(max_examples=3000, deadline=None)
@given(KINDS, VERSIONS, JSONISH, JSONISH)
def test_random_objects_never_crash_long(kind, api_version, spec, status):
    obj = {"apiVersion": api_version, "kind": kind, "metadata": {"name": "x"}, "spec": spec, "status": status}
    _check(review(obj, obj, "UPDATE", "status", Options()))
