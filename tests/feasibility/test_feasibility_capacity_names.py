"""Consumable capacity named with or without the driver's domain: the same capacity from 1.38
(kubernetes#142202), only the exact key before."""
from __future__ import annotations

from dralint.feasibility.capacity import consumed_by, fits
from dralint.feasibility.model import Alternative, read_device
from dralint.paths import FieldPath

GIB = 1 << 30


def _device(name: str, either_way: bool):
    raw = {"name": "gpu-0", "allowMultipleAllocations": True, "capacity": {name: {"value": "40Gi"}}}
    return read_device(0, "gpu.example.com", "node-a", raw, (), either_way)


def _asking(name: str, amount: int) -> Alternative:
    return Alternative(name="gpu", parent="", class_name="gpu.example.com", selectors=(), mode="ExactCount",
                       count=1, admin_access=None, tolerations=(), capacity={name: amount * 10**9}, has_capacity=True,
                       path=FieldPath(()))


def test_a_fully_qualified_request_matches_an_unqualified_capacity_from_1_38_only():
    asked = _asking("gpu.example.com/memory", 10 * GIB)
    assert fits(asked, _device("memory", either_way=False), None, None) is None
    assert fits(asked, _device("memory", either_way=True), None, None) is True
    assert consumed_by(asked, _device("memory", either_way=True)) == {"memory": 10 * GIB * 10**9}


def test_an_unqualified_request_matches_a_fully_qualified_capacity_from_1_38():
    asked = _asking("memory", 10 * GIB)
    assert fits(asked, _device("gpu.example.com/memory", either_way=False), None, None) is None
    assert fits(asked, _device("gpu.example.com/memory", either_way=True), None, None) is True


def test_another_drivers_domain_is_not_the_same_capacity():
    asked = _asking("nic.example.com/memory", GIB)
    assert fits(asked, _device("memory", either_way=True), None, None) is None


def test_what_allocations_hold_counts_under_either_spelling():
    device = _device("memory", either_way=True)
    held = {"gpu.example.com/memory": 35 * GIB * 10**9}
    assert fits(_asking("memory", 10 * GIB), device, held, None) is False
    assert fits(_asking("memory", 5 * GIB), device, held, None) is True
