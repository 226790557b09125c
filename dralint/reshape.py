"""Text edits between the two shapes of DRA objects: flat (v1beta1, v1alpha3) and v1 (v1, v1beta2).

The same differences :mod:`dralint.convert` bridges on values, made on the text the user wrote:
a request's fields under ``exactly:`` or beside its name, a slice device's fields under
``basic:`` or beside its name, and the bare capacity quantities of v1alpha3. ``dralint migrate``
and the fixes of ``dralint --fix`` both use them.
"""
from __future__ import annotations

from typing import Callable

from .kube.shapes import FLAT_REQUEST_FIELDS
from .yamltext.edits import EditRefused, Splice, hoist_entry, wrap_entries, wrap_value
from .yamltext.layout import Layout, Node

__all__ = ["EditRefused", "device_from_basic", "device_to_basic", "request_from_exactly", "request_to_exactly",
           "bare_capacities"]


def request_to_exactly(layout: Layout, request: Node, step: int) -> list[Splice]:
    """``- name: gpu / count: 2`` → ``- name: gpu / exactly: {count: 2}``: the flat fields under ``exactly``."""
    if request.kind != "map":
        return []
    return _naming("request", request, lambda: wrap_entries(layout, request, FLAT_REQUEST_FIELDS, "exactly", step))


def request_from_exactly(layout: Layout, request: Node) -> list[Splice]:
    """The reverse: the fields of ``exactly`` beside the request's name."""
    if request.kind != "map":
        return []
    return _naming("request", request, lambda: hoist_entry(layout, request, "exactly"))


def device_from_basic(layout: Layout, device: Node) -> list[Splice]:
    """A slice device's ``basic:`` wrapper removed, its fields beside the device's name."""
    if device.kind != "map":
        return []
    return _naming("device", device, lambda: hoist_entry(layout, device, "basic"))


def device_to_basic(layout: Layout, device: Node, step: int) -> list[Splice]:
    """The reverse: every field but ``name`` under ``basic``."""
    if device.kind != "map":
        return []
    fields = [k.value for k, _ in device.entries if k.value != "name"]
    return _naming("device", device, lambda: wrap_entries(layout, device, fields, "basic", step))


def _naming(what: str, node: Node, edit: Callable[[], list[Splice]]) -> list[Splice]:
    """``edit()``, whose refusal names the request or device it concerns and its line (a slice may
    hold hundreds of devices)."""
    try:
        return edit()
    except EditRefused as error:
        name = node.find(("name",))
        called = f" `{name.value}`" if name is not None and name.kind == "scalar" and name.value else ""
        raise EditRefused(f"{what}{called} at line {node.line + 1}: {error}") from None


def bare_capacities(layout: Layout, capacity: Node, step: int) -> list[Splice]:
    """v1alpha3 of 1.31 wrote capacities as bare quantities: ``memory: 80Gi`` → ``memory: {value: 80Gi}``."""
    if capacity.kind != "map":
        return []
    splices = []
    for key, value in capacity.entries:
        if value.kind == "scalar" and key.value is not None:
            splices += wrap_value(layout, capacity, key.value, "value", step)
    return splices
