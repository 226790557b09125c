"""Equal device entries of a file's ResourceSlices made one object.

A slice publishes the same few attribute and capacity values on each of its devices (``{"bool":
true}``, ``{"string": "pci0000:00"}``, ``{"value": "16Gi"}``), and a fleet's slices repeat them
from one to the next: in a 17 MiB file of slices, 225,000 such one-key mappings hold 24,000
distinct values. The reader makes each anew; sharing them as they are read keeps about 35 MB less
alive while the file is judged (the duplicates' memory goes back to the next document's parse).
Values are never modified after reading, so an entry shared by several devices reads as it did.
"""
from __future__ import annotations

from typing import Any

# The device tables whose entries are one-key mappings of a scalar.
_TABLES = ("attributes", "capacity")


class DeviceEntries:
    """The distinct device entries met so far in one file: each equal one is replaced by the first."""

    def __init__(self) -> None:
        # Keyed with the scalar's type, so that ``{"int": 1}`` and ``{"int": true}`` stay apart.
        self._first: dict[tuple[str, Any, type], dict[str, Any]] = {}

    def share(self, value: Any) -> None:
        """Replace, in a ResourceSlice ``value``, each device entry equal to one met before by that one."""
        if type(value) is not dict or value.get("kind") != "ResourceSlice":
            return
        spec = value.get("spec")
        devices = spec.get("devices") if type(spec) is dict else None
        if type(devices) is not list:
            return
        first = self._first
        for device in devices:
            if type(device) is not dict:
                continue
            for table in _TABLES:
                entries = device.get(table)
                if type(entries) is not dict:
                    continue
                for name, entry in entries.items():
                    if type(entry) is dict and len(entry) == 1:
                        for key, scalar in entry.items():
                            kind = type(scalar)
                            if kind is str or kind is int or kind is bool:
                                met = first.setdefault((key, scalar, kind), entry)
                                if met is not entry:
                                    entries[name] = met
