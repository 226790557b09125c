"""Device taints and request tolerations (§7), including DeviceTaintRules merged into devices."""
from __future__ import annotations

from collections import defaultdict
from typing import Iterable

from ..convert import Canonical
from .model import Alternative, Device, DeviceKey, Taint, read_taint

BLOCKING = frozenset({"NoSchedule", "NoExecute"})


def rule_taints(rules: Iterable[Canonical], slices: Iterable[Canonical], *,
                needs_selector: bool = True) -> dict[DeviceKey, tuple[Taint, ...]]:
    """Taints that DeviceTaintRules add, per device (the scheduler merges them before allocating).

    A rule selects by driver, pool and device name; an unset field matches everything. Rules of
    1.33-1.34 that also select by class or CEL are applied on driver/pool/device only. A rule
    without ``deviceSelector`` taints nothing when ``needs_selector`` (1.38, kubernetes#141648) and
    every device otherwise (the releases before).
    """
    out: dict[DeviceKey, list[Taint]] = defaultdict(list)
    picked = []
    for rule in rules:
        taint = read_taint(rule.get("spec", "taint"))
        sel = rule.get("spec", "deviceSelector", default=None)
        if sel is None and not needs_selector:
            sel = {}
        if taint is None or not isinstance(sel, dict):
            continue
        picked.append((taint, sel.get("driver"), sel.get("pool"), sel.get("device")))
    if not picked:
        return {}
    for s in slices:
        driver, pool = s.get("spec", "driver", default=""), s.get("spec", "pool", "name", default="")
        for raw in s.get("spec", "devices", default=[]) or []:
            name = raw.get("name", "") if isinstance(raw, dict) else ""
            for taint, d, p, n in picked:
                if (d in (None, "", driver)) and (p in (None, "", pool)) and (n in (None, "", name)):
                    out[(driver, pool, name)].append(taint)
    return {k: tuple(v) for k, v in out.items()}


def blocking_taint(device: Device, alt: Alternative) -> Taint | None:
    """The first NoSchedule/NoExecute taint the request does not tolerate, if any."""
    for taint in device.taints:
        if taint.effect in BLOCKING and not any(t.tolerates(taint) for t in alt.tolerations):
            return taint
    return None
