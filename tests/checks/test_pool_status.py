"""ResourcePoolStatusRequest as the API server of 1.36 and 1.37 validates it: its declarative formats
(``k8s-long-name`` for driver and node names), not the handwritten rules they cover."""
from __future__ import annotations

import yaml

from dralint.engine import Options, lint_text
from dralint.kube.releases import Release

GATES = {"DRAResourcePoolStatus": True}


def request(spec: dict, status: dict | None = None) -> str:
    obj: dict = {"apiVersion": "resource.k8s.io/v1alpha3", "kind": "ResourcePoolStatusRequest",
                 "metadata": {"name": "ask"}, "spec": spec}
    if status is not None:
        obj["status"] = status
    return yaml.safe_dump(obj)


def rules(text: str, minor: int = 36, old: str | None = None) -> list[tuple[str, str]]:
    findings = lint_text(text, Options(release=Release(minor, dict(GATES))), old_text=old)
    return sorted((f.rule, f.field) for f in findings if f.severity.value == "error")


def test_a_driver_name_longer_than_a_slices_is_taken():
    long_driver = ".".join(["a" * 60] * 3) + ".example.com"     # 195 characters: a DNS subdomain
    for minor in (36, 37):
        assert rules(request({"driver": long_driver}), minor) == []


def test_a_driver_is_a_lowercase_dns_subdomain_of_at_most_253_characters():
    assert rules(request({"driver": "GPU.example.com"})) == [("DRA460", "spec.driver")]
    assert rules(request({"driver": "a." * 127 + "com"})) == [("DRA460", "spec.driver")]
    assert rules(request({"driver": ""})) == [("DRA460", "spec.driver")]


def test_a_status_is_judged_in_the_released_shape_and_complete_once_written():
    old = request({"driver": "gpu.example.com"})
    pool = {"driver": "gpu.example.com", "poolName": "node-1", "nodeName": "Node_1", "resourceSliceCount": 0,
            "totalDevices": 8, "validationError": "slices of generation 2 still missing"}
    status = {"poolCount": -1, "pools": [pool]}
    found = rules(request({"driver": "gpu.example.com"}, status), old=old)
    assert found == [("DRA461", "status.poolCount"), ("DRA461", "status.pools[0].nodeName"),
                     ("DRA461", "status.pools[0].resourceSliceCount")]
    written = request({"driver": "gpu.example.com"}, {"poolCount": 0})
    assert rules(request({"driver": "gpu.example.com"}, {"poolCount": 1}), old=written) == [("DRA461", "status")]
