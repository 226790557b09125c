"""Values of a wrong type anywhere in a claim, its status or a pod never crash the claim checks."""
from __future__ import annotations

import copy

import pytest
import yaml

from dralint.engine import Options, lint_text

BASE = """
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: c, namespace: default}
spec:
  devices:
    requests:
    - name: gpu
      exactly:
        deviceClassName: gpu.example.com
        tolerations: [{key: a, operator: Exists}]
        capacity: {requests: {memory: 1Gi}}
    - name: alt
      firstAvailable: [{name: a, deviceClassName: gpu.example.com}]
    constraints: [{requests: [gpu, alt/a], matchAttribute: example.com/x}]
    config: [{requests: [gpu], opaque: {driver: gpu.example.com, parameters: {a: 1}}}]
status:
  allocation:
    devices:
      results: [{request: gpu, driver: gpu.example.com, pool: p, device: d, bindingConditions: [a],
                 bindingFailureConditions: [b], skipNodeOperations: [NodePrepareResources]}]
      config: [{source: FromClaim, requests: [gpu], opaque: {driver: d.com, parameters: {}}}]
  reservedFor: [{resource: pods, name: p, uid: u}]
  devices: [{driver: gpu.example.com, pool: p, device: d, data: {a: 1}, networkData: {ips: [1.2.3.4/24]},
             conditions: [{type: A, status: "True", reason: R, lastTransitionTime: "2025-01-01T00:00:00Z"}]}]
---
apiVersion: v1
kind: Pod
metadata: {name: p, namespace: default}
spec:
  resourceClaims: [{name: gpu, resourceClaimName: c}]
  containers: [{name: c, image: x, resources: {claims: [{name: gpu, request: gpu}]}}]
"""
ODD_VALUES = [None, 7, [{}], {"x": [1]}]


def _paths(value, prefix=()):
    yield prefix
    children = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, child in children:
        yield from _paths(child, prefix + (key,))


def _mutants():
    docs = list(yaml.safe_load_all(BASE))
    for d, doc in enumerate(docs):
        for path in _paths(doc):
            if len(path) < 2 or path[0] in ("apiVersion", "kind", "metadata"):
                continue
            for odd in ODD_VALUES:
                mutant = copy.deepcopy(docs)
                node = mutant[d]
                for seg in path[:-1]:
                    node = node[seg]
                node[path[-1]] = odd
                yield yaml.safe_dump_all(mutant)


@pytest.mark.slow
def test_no_internal_errors_on_odd_values():
    old = yaml.safe_dump(next(yaml.safe_load_all(BASE)))
    for text in _mutants():
        for old_text in (None, old):
            crashes = [f.message for f in lint_text(text, Options(), old_text=old_text) if f.rule == "DRA000"]
            assert not crashes, (crashes, text)
