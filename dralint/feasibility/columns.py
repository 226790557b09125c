"""What one selector says about every device of the fleet, worked out once as an array.

A fleet has tens of thousands of devices but few distinct ones as far as an expression can tell:
an expression that reads ``model`` and ``healthy`` gives one answer per distinct (model, healthy,
driver, shape) however many GPUs share them. Devices are keyed by a *base* (driver, which
attributes exist and of what kind, capacities and versions, which every evaluation may touch)
plus one column per attribute id an expression names; the expression is evaluated once per
distinct key and the answer spread over all devices with numpy.

Answers are ``FALSE``, ``TRUE`` or ``ERROR`` per device uid; the error itself is kept per device,
so that the search raises it only where it evaluates that device, as the scheduler does.
"""
from __future__ import annotations

from typing import Any, Callable, Iterable

import numpy as np

from .model import Device

FALSE, TRUE, ERROR = 0, 1, 2

# (expression, device) -> bool; raises an exception carrying the error (see selection.py).
Evaluate = Callable[[str, Device], bool]


def _base_and_columns(device: Device) -> tuple[tuple, dict[str, tuple]]:
    """The base key of a device and, per attribute id, what an expression naming it sees."""
    base: list[Any] = [device.key[0]]
    named: dict[str, list] = {}
    for entry in device.shape:
        table, ident, _, kind = entry
        if table.startswith("capacity:") or "version" in kind:
            base.append(entry)
        else:
            base.append((table, "", None, kind))
        named.setdefault(ident, []).append(entry)
    return tuple(base), {k: tuple(v) for k, v in named.items()}


class Columns:
    """Selector answers for every registered device, one int8 array per expression."""

    def __init__(self, evaluate: Callable[[str, Device], bool], error_type: type[Exception],
                 names_of: Callable[[str], frozenset[str] | None],
                 driver_of: Callable[[str], str | None]) -> None:
        self._evaluate = evaluate
        self._error_type = error_type
        self._names_of = names_of      # attribute ids an expression can read (None: cannot tell)
        self._driver_of = driver_of    # the driver an expression requires (None: any)
        self.devices: list[Device | None] = []
        self._base = np.zeros(0, np.int64)
        self._driver = np.zeros(0, np.int64)
        self._named: list[dict[str, tuple]] = []
        self._interned: dict[Any, int] = {}
        self._attr: dict[str, np.ndarray] = {}
        self._idents: set[str] = set()
        self._columns: dict[str, np.ndarray] = {}
        self.errors: dict[tuple[str, int], Exception] = {}
        self.evaluations = 0

    def _intern(self, value: Any) -> int:
        have = self._interned.get(value)
        if have is None:
            have = self._interned[value] = len(self._interned)
        return have

    def add(self, devices: Iterable[Device]) -> None:
        """Register devices (uids must be new); existing columns are extended to them."""
        new = sorted(devices, key=lambda d: d.uid)
        if not new:
            return
        size = max(len(self.devices), new[-1].uid + 1)
        self.devices += [None] * (size - len(self.devices))
        self._named += [{}] * (size - len(self._named))
        base = np.resize(self._base, size)
        driver = np.resize(self._driver, size)
        for d in new:
            key, named = _base_and_columns(d)
            self.devices[d.uid] = d
            self._named[d.uid] = named
            base[d.uid] = self._intern(key)
            driver[d.uid] = self._intern(("driver", d.key[0]))
            self._idents.update(named)
        self._base, self._driver = base, driver
        for ident in list(self._attr):
            self._attr[ident] = self._fill_attr(ident, self._attr[ident], size, [d.uid for d in new])
        uids = np.array([d.uid for d in new], np.int64)
        for expr, col in list(self._columns.items()):
            col = np.resize(col, size)
            self._fill(expr, col, uids)
            self._columns[expr] = col

    def remove(self, uids: Iterable[int]) -> None:
        """Forget devices; their slots stay (uids are never reused)."""
        for uid in uids:
            if 0 <= uid < len(self.devices):
                self.devices[uid] = None
                self._named[uid] = {}
                for expr in self._columns:
                    self.errors.pop((expr, uid), None)

    def _fill_attr(self, ident: str, col: np.ndarray | None, size: int, uids: Iterable[int]) -> np.ndarray:
        out = np.resize(col, size) if col is not None else np.zeros(size, np.int64)
        for uid in uids:
            out[uid] = self._intern(("attr", self._named[uid].get(ident)))
        return out

    def _attr_column(self, ident: str) -> np.ndarray:
        col = self._attr.get(ident)
        if col is None:
            col = self._attr[ident] = self._fill_attr(ident, None, len(self.devices), range(len(self.devices)))
        return col

    def column(self, expr: str) -> np.ndarray:
        """The answer of ``expr`` for every registered device (FALSE for forgotten ones)."""
        col = self._columns.get(expr)
        if col is None:
            col = np.zeros(len(self.devices), np.int8)
            alive = np.array([i for i, d in enumerate(self.devices) if d is not None], np.int64)
            self._fill(expr, col, alive)
            self._columns[expr] = col
        return col

    def _fill(self, expr: str, col: np.ndarray, uids: np.ndarray) -> None:
        if not len(uids):
            return
        driver = self._driver_of(expr)
        if driver is not None:
            # Devices of another driver fail `device.driver == "..." && ...` without evaluating the rest.
            col[uids] = FALSE
            uids = uids[self._driver[uids] == self._intern(("driver", driver))]
            if not len(uids):
                return
        names = self._names_of(expr)
        if names is None:
            for uid in uids:
                col[uid] = self._one(expr, int(uid))
            return
        keys = [self._base[uids]] + [self._attr_column(i)[uids] for i in sorted(names & self._idents)]
        _, first, inverse = np.unique(np.stack(keys, axis=1), axis=0, return_index=True, return_inverse=True)
        inverse = inverse.reshape(-1)
        answers = np.zeros(len(first), np.int8)
        for row, at in enumerate(first):
            answers[row] = answer = self._one(expr, int(uids[at]))
            if answer == ERROR:
                exc = self.errors[(expr, int(uids[at]))]
                for m in uids[inverse == row]:
                    self.errors[(expr, int(m))] = exc
        col[uids] = answers[inverse]

    def _one(self, expr: str, uid: int) -> int:
        device = self.devices[uid]
        assert device is not None
        self.evaluations += 1
        try:
            return TRUE if self._evaluate(expr, device) else FALSE
        except self._error_type as exc:
            self.errors[(expr, uid)] = exc
            return ERROR
