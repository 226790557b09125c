"""What one selector says about every device of the fleet, worked out once as an array.

A fleet has tens of thousands of devices but few distinct ones as far as an expression can tell:
an expression that reads ``model`` and ``healthy`` gives one answer per distinct (model, healthy,
driver, shape) however many GPUs share them. Devices are keyed by a *base* (driver, which
attributes exist and of what kind, capacities and versions, which every evaluation may touch)
plus one column per attribute id an expression names; the expression is evaluated once per
distinct key and the answer spread over all devices with numpy.

Answers are ``FALSE``, ``TRUE`` or ``ERROR`` per device uid; the error itself is kept per device,
so that the search raises it only where it evaluates that device, as the scheduler does. The
columns outlive one question (the webhook's fleet view), so only the most recently used ones are
kept; a column that left is worked out again when asked.
"""
from __future__ import annotations

import sys
from itertools import repeat
from operator import itemgetter
from typing import Any, Callable, Iterable

import numpy as np

from ..sizes import deep_size
from .lru import Lru
from .model import Device, shape_entry

FALSE, TRUE, ERROR = 0, 1, 2
# Bytes of columns kept: one int8 per device each (40 KB for 40,000 devices), with the expression
# and the errors it met (one dict entry per failing device).
COLUMN_BYTES = 64 << 20
ERROR_ENTRY_BYTES = 100
# Bytes of groupings of the whole fleet kept, one per set of attribute ids read: two int64 arrays.
GROUPING_BYTES = 32 << 20
# Values to number (see _ranks) spanning more than this many times their count are sorted instead (a
# table of presence as long as their span would cost more).
_RANKED_SPAN = 8

# (expression, device) -> bool; raises an exception carrying the error (see selection.py).
Evaluate = Callable[[str, Device], bool]


# What converting one attribute or capacity entry says: (table, name, raw value) -> problem or None.
EntryProblem = Callable[[str, str, Any], "str | None"]
# Problems kept, per (table, name, value): a fleet has few distinct versions and capacities.
PROBLEM_BYTES = 4 << 20
# Devices' entries (model.shape_entry) kept to be shared by the devices added later: a fleet repeats the
# same few values (50 MB of entries for the 17 MiB benchmark file's 24,000 devices, most alike).
# ENTRY_WEIGHT is about what one weighs with its key and its place in the dict: a key holds one
# attribute's or capacity's name and scalar value, which the API server keeps short (a slice it would
# refuse is not in the view). All are forgotten when they pass the budget; later devices make their own.
ENTRY_BYTES = 16 << 20
ENTRY_WEIGHT = 400

# What registering one attribute or capacity value takes (see Columns._record), kept by one ``add`` for
# its devices (not longer: records weigh twice what their entries do): (sort key, entry, what the base
# holds of it, attribute id, problem or None, part). The problem, (table, name, what is wrong), when a
# version or a capacity does not convert. The part, (sort key, what the base holds, problem), is all the
# base key reads of the record: one object per distinct part within one ``add`` (see _Registry).
_Record = tuple[tuple[str, str], tuple[str, str, Any, str], tuple, str, "tuple[str, str, str] | None", tuple]
_SORT_KEY, _ENTRY, _BASE_PART, _IDENT, _PROBLEM, _PART = map(itemgetter, range(6))
# The last entry of every device: whether it allows several allocations (its value is in the columns,
# not in the base).
_ALLOW_BASE = ("allowMultipleAllocations", "", None, "")
_TABLES = ("attributes", "capacity")


def _checked(table: str, entry: tuple[str, str, Any, str]) -> bool:
    """Whether an entry can fail to convert (a capacity or a version): the base says whether it does."""
    return table == "capacity" or "version" in entry[3]


def _single(named: Any) -> bool:
    """Whether a value of ``Columns._register``'s ``named`` is one entry (not a tuple of entries)."""
    return isinstance(named[0], str)


class _Registry:
    """What one ``Columns.add`` worked out of its devices' entries, for the devices after.

    An entry is looked up first as the object read (a file's equal entries are one object, see
    source/sharing.py), then by its value. Keys hold ids of objects that stay alive while the registry
    is used: the entries read, kept by the devices being added, and the parts, kept by the records here;
    so all of it is cleared at once.
    """

    def __init__(self) -> None:
        self.by_value: dict[tuple, _Record] = {}
        # Per (table, driver), per (name, id of the value read), its record.
        self.by_object: dict[tuple[str, str], dict[tuple[Any, int], _Record]] = {}
        self.parts: dict[tuple, tuple] = {}
        # Per (table, driver, name, key of a one-key value) whose entry is not checked, a record of it.
        self.alike: dict[tuple, _Record] = {}
        # Per (driver, ids of a device's records' parts in entry order), the code of its base key.
        self.bases: dict[tuple, int] = {}

    def clear(self) -> None:
        """Forget everything (the entries' budget was passed)."""
        self.by_value.clear()
        self.by_object.clear()
        self.parts.clear()
        self.alike.clear()
        self.bases.clear()


class Columns:
    """Selector answers for every registered device, one int8 array per expression."""

    def __init__(self, evaluate: Callable[[str, Device], bool], error_type: type[Exception],
                 names_of: Callable[[str], frozenset[str] | None],
                 driver_of: Callable[[str], str | None], entry_problem: EntryProblem | None = None) -> None:
        self._evaluate = evaluate
        self._entry_problem = entry_problem
        self._problems: Lru[tuple, tuple[str | None]] = Lru(PROBLEM_BYTES, lambda key, value: deep_size((key, value)))
        self._error_type = error_type
        self._names_of = names_of      # attribute ids an expression can read (None: cannot tell)
        self._driver_of = driver_of    # the driver an expression requires (None: any)
        self.devices: list[Device | None] = []
        self._base = np.zeros(0, np.int64)
        self._driver = np.zeros(0, np.int64)
        self._named: list[dict[str, Any]] = []
        self._entries: dict[tuple, tuple] = {}
        self._interned: dict[Any, int] = {}
        self._attr: dict[str, np.ndarray] = {}
        self._idents: set[str] = set()
        # Per expression its column, and per device uid the error where it failed. The table's callbacks
        # hold the errors, not these columns: a callback bound to them would make them a reference cycle,
        # freed only by a full walk of the collector (the webhook replaces worlds of a million objects).
        errors: dict[str, dict[int, Exception]] = {}
        self._errors = errors
        self._columns: Lru[str, np.ndarray] = Lru(COLUMN_BYTES, lambda expr, column: _column_bytes(errors, expr, column),
                                                  lambda expr, _: errors.pop(expr, None))
        self.alive = np.zeros(0, bool)       # per uid: a registered device, not forgotten
        self.bound = np.zeros(0, bool)       # per uid: the device has binding conditions
        self.evaluations = 0
        # Per set of attribute ids, the fleet's devices that look alike through them (see _grouping);
        # valid while no device is added or forgotten (``_version``).
        self._version = 0
        self._groupings: Lru[tuple[str, ...], tuple[int, np.ndarray, np.ndarray]] = Lru(
            GROUPING_BYTES, lambda idents, value: deep_size(idents) + value[1].nbytes + value[2].nbytes)

    @property
    def version(self) -> int:
        """Changes whenever a device is added or forgotten."""
        return self._version

    def drop_caches(self) -> int:
        """Forget the columns, groupings and problems (worked out again when asked); the bytes they
        held, as estimated. The devices and their keys stay."""
        freed = self._columns.clear() + self._groupings.clear() + self._problems.clear()
        freed += sum(a.nbytes for a in self._attr.values())
        self._errors.clear()
        self._attr.clear()
        self._entries.clear()
        return freed

    def _register(self, device: Device, registry: _Registry) -> tuple[int, dict[str, Any]]:
        """The code of a device's base key and, per attribute id, what an expression naming it sees: its
        one entry, or a tuple of its entries when the id has several (in different domains).

        Any evaluation on a device fails when one of its versions or capacities does not convert, so
        the base says which do not; without that knowledge (no ``entry_problem``) their values are
        part of it. The base holds of the other entries their domain and kind, in entry order.
        """
        driver, raw = device.key[0], device.raw
        records: list[_Record] = []
        for table in _TABLES:
            values = raw.get(table)
            if not isinstance(values, dict) or not values:
                continue
            seen = registry.by_object.get((table, driver))
            if seen is None:
                seen = registry.by_object[table, driver] = {}
            found: list[Any] = list(map(seen.get, zip(values, map(id, values.values()))))
            if None in found:
                for at, (name, value) in enumerate(values.items()):
                    if found[at] is None:
                        found[at] = seen[name, id(value)] = self._read_entry(driver, table, name, value, registry)
            records += found
        allow = ("allowMultipleAllocations", "", raw.get("allowMultipleAllocations"), "")
        named: dict[str, Any] = dict(zip(map(_IDENT, records), map(_ENTRY, records)))
        if len(named) < len(records) or "" in named:
            # Mostly one entry per id: the entry itself, shared by the devices that have it, not a tuple
            # of it per device (an entry is a 4-tuple of a string and more, never a tuple of entries).
            records.sort(key=_SORT_KEY)
            named = {}
            for ident, entry in [(record[3], record[1]) for record in records] + [("", allow)]:
                have = named.get(ident)
                named[ident] = entry if have is None else (have, entry) if _single(have) else have + (entry,)
        else:
            named[""] = allow
        # The base key follows from the parts in this order: devices that list the same parts share it.
        shape = (driver, *map(id, map(_PART, records)))
        code = registry.bases.get(shape)
        if code is None:
            records.sort(key=_SORT_KEY)
            if self._entry_problem is None:
                key = (driver, *map(_BASE_PART, records), _ALLOW_BASE)
            else:
                key = (driver, *map(_BASE_PART, records), _ALLOW_BASE, tuple(sorted(filter(None, map(_PROBLEM, records)))))
            code = registry.bases[shape] = self._intern(key)
        return code, named

    def _read_entry(self, driver: str, table: str, name: Any, value: Any, registry: _Registry) -> _Record:
        """The record of an entry not met before as this object: the one of an equal value met before, if
        it can be shared, else a new one."""
        if type(value) is dict and len(value) == 1:
            # The common case, one typed value ({"string": "a100"}, {"value": "80Gi"}); the key holds the
            # scalar's type, so 1, True and 1.0 stay apart.
            ((k, v),) = value.items()
            kind = type(v)
            if kind in _SCALARS:
                key = (table, driver, name, k, v) if kind is str else (table, driver, name, k, v, kind)
                record = registry.by_value.get(key)
                if record is None:
                    like = registry.alike.get(key[:4])
                    if like is None:
                        record = self._record(driver, table, name, value, key, registry)
                        if not _checked(table, record[1]):
                            registry.alike[key[:4]] = record
                    else:
                        # An unchecked entry's base and problem do not depend on its value: those of
                        # another value of the same name and kind, with an entry of its own.
                        entry = self._entries.get(key)
                        if entry is None:
                            entry = self._entries[key] = (like[1][0], like[3], ((str(k), v),), like[1][3])
                        record = (like[0], entry, like[2], like[3], None, like[5])
                    registry.by_value[key] = record
                return record
        return self._record(driver, table, name, value, None, registry)

    def _record(self, driver: str, table: str, name: Any, value: Any, key: tuple | None, registry: _Registry) -> _Record:
        """What registering the attribute or capacity ``name`` of a device of ``driver`` takes; ``key``:
        what its entry is kept by, if it can be shared."""
        entry = self._entries.get(key) if key is not None else None
        if entry is None:
            entry = shape_entry(driver, table, name, value)
            if key is not None:
                self._entries[key] = entry
        checked = _checked(table, entry)
        problem = None
        if self._entry_problem is None:
            base = entry if checked else (entry[0], "", None, entry[3])
        else:
            base = (entry[0], "", None, entry[3])
            if checked:
                key = (table, name, _hashable(value))
                have = self._problems.get(key)
                if have is None:
                    have = self._problems.put(key, (self._entry_problem(table, str(name), value),))
                if have[0] is not None:
                    problem = (table, str(name), have[0])
        part = ((entry[0], entry[1]), base, problem)
        part = registry.parts.setdefault(part, part)
        return (entry[0], entry[1]), entry, base, entry[1], problem, part

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
        self.alive = _grown(self.alive, size)
        self.bound = _grown(self.bound, size)
        registry = _Registry()
        bases: list[int] = []
        drivers: list[int] = []
        codes: dict[str, int] = {}     # per driver, its code (interned where its first device is)
        for d in new:
            if len(self._entries) * ENTRY_WEIGHT > ENTRY_BYTES:
                self._entries.clear()
                registry.clear()
            base_code, named = self._register(d, registry)
            self.devices[d.uid] = d
            self._named[d.uid] = named
            bases.append(base_code)
            code = codes.get(d.key[0])
            if code is None:
                code = codes[d.key[0]] = self._intern(("driver", d.key[0]))
            drivers.append(code)
            self._idents.update(named)
        uids = [d.uid for d in new]
        base[uids] = bases
        driver[uids] = drivers
        self.alive[uids] = True
        self.bound[uids] = [bool(d.binding_conditions) for d in new]
        self._base, self._driver = base, driver
        for ident in list(self._attr):
            self._attr[ident] = self._fill_attr(ident, self._attr[ident], size, uids)
        self._version += 1
        # Columns are extended to the new devices when next asked (see column).

    def remove(self, uids: Iterable[int]) -> None:
        """Forget devices; their slots stay (uids are never reused)."""
        for uid in uids:
            if 0 <= uid < len(self.devices):
                self.devices[uid] = None
                self._named[uid] = {}
                self.alive[uid] = False
                for errors in self._errors.values():
                    errors.pop(uid, None)
        self._version += 1

    def _fill_attr(self, ident: str, col: np.ndarray | None, size: int, uids: list[int] | None) -> np.ndarray:
        """``col`` of attribute id ``ident`` grown to ``size`` and filled for ``uids`` (None: all devices)."""
        out = np.resize(col, size) if col is not None else np.zeros(size, np.int64)
        named = self._named if uids is None else [self._named[uid] for uid in uids]
        entries = list(map(dict.get, named, repeat(ident)))
        # Devices share their entries (one object per distinct value, see _record): each distinct object
        # is interned once, in the order of its first device (the codes interning one by one gives).
        _, first, inverse = np.unique(np.fromiter(map(id, entries), np.uint64, len(entries)),
                                      return_index=True, return_inverse=True)
        codes = np.empty(len(first), np.int64)
        for distinct in np.argsort(first).tolist():
            codes[distinct] = self._intern(("attr", entries[first[distinct]]))
        out[slice(None) if uids is None else uids] = codes[inverse.reshape(-1)]
        return out

    def _attr_column(self, ident: str) -> np.ndarray:
        col = self._attr.get(ident)
        if col is None:
            col = self._attr[ident] = self._fill_attr(ident, None, len(self.devices), None)
        return col

    def column(self, expr: str) -> np.ndarray:
        """The answer of ``expr`` for every registered device (FALSE for forgotten ones)."""
        col = self._columns.get(expr)
        if col is None:
            col = np.zeros(len(self.devices), np.int8)
            self._fill(expr, col, np.nonzero(self.alive)[0], whole=True)
            self._columns.put(expr, col)
        elif len(col) < len(self.devices):
            covered = len(col)
            col = np.resize(col, len(self.devices))
            col[covered:] = FALSE
            self._fill(expr, col, covered + np.nonzero(self.alive[covered:])[0])
            self._columns.put(expr, col)
        return col

    def warm(self, expressions: Iterable[str]) -> None:
        """Work out the columns of ``expressions`` now, in order, as long as half of what the columns
        may keep holds them (so that the first ones are not pushed out by the last)."""
        room = COLUMN_BYTES // 2
        done: set[str] = set()
        for expr in expressions:
            if expr in done:
                continue
            room -= sys.getsizeof(expr) + len(self.devices)
            if room < 0:
                return
            done.add(expr)
            self.column(expr)

    def error(self, expr: str, uid: int) -> Exception:
        """The error of ``expr`` on device ``uid`` (its column says ERROR there)."""
        return self._errors[expr][uid]

    def _grouping(self, idents: tuple[str, ...], uids: np.ndarray, whole: bool) -> tuple[np.ndarray, np.ndarray]:
        """The devices of ``uids`` that look alike to an expression reading ``idents``: per group the
        place in ``uids`` of its first device, and per device its group. ``whole``: ``uids`` are all
        the registered devices, and the answer is kept for the next expression reading the same."""
        if whole:
            have = self._groupings.get(idents)
            if have is not None and have[0] == self._version:
                return have[1], have[2]
        # One attribute at a time, each step numbering the distinct (group so far, value) pairs:
        # numbering numbers is far cheaper than sorting rows.
        inverse = _ranks(self._base[uids])
        for ident in idents:
            values = _ranks(self._attr_column(ident)[uids])
            inverse = _ranks(inverse * (int(values.max(initial=0)) + 1) + values)
        first = _firsts(inverse)
        if whole:
            self._groupings.put(idents, (self._version, first, inverse))
        return first, inverse

    def _fill(self, expr: str, col: np.ndarray, uids: np.ndarray, whole: bool = False) -> None:
        """Answer ``expr`` for the devices ``uids`` (``whole``: every registered device)."""
        if not len(uids):
            return
        names = self._names_of(expr)
        if names is not None:
            first, inverse = self._grouping(tuple(sorted(names & self._idents)), uids, whole)
            first = uids[first]                       # a device of each group
        driver = self._driver_of(expr)
        if driver is not None:
            # Devices of another driver fail `device.driver == "..." && ...` without evaluating the rest.
            col[uids] = FALSE
            mine = self._driver[uids] == self._intern(("driver", driver))
            uids = uids[mine]
            if names is not None:
                # The driver is part of every device's base: a group is all of that driver or none of it.
                keep = np.zeros(len(first), bool)
                keep[inverse[mine]] = True
                first, inverse = first[keep], (np.cumsum(keep) - 1)[inverse[mine]]
            if not len(uids):
                return
        if names is None:
            for uid in uids:
                col[uid] = self._one(expr, int(uid))
            return
        answers = np.zeros(len(first), np.int8)
        for row, at in enumerate(first):
            answers[row] = answer = self._one(expr, int(at))
            if answer == ERROR:
                errors = self._errors[expr]
                exc = errors[int(at)]
                for m in uids[inverse == row]:
                    errors[int(m)] = exc
        col[uids] = answers[inverse]

    def _one(self, expr: str, uid: int) -> int:
        device = self.devices[uid]
        assert device is not None
        self.evaluations += 1
        try:
            return TRUE if self._evaluate(expr, device) else FALSE
        except self._error_type as exc:
            self._errors.setdefault(expr, {})[uid] = exc
            return ERROR


def _ranks(values: np.ndarray) -> np.ndarray:
    """Per item of ``values`` (integers, none negative) its rank among the distinct values: what
    ``np.unique(values, return_inverse=True)`` numbers them, without its sort when they span a range
    of at most a few times their count (interned codes, ranks combined)."""
    top = int(values.max(initial=0))
    if top > _RANKED_SPAN * len(values) + 1024:
        return np.unique(values, return_inverse=True)[1].reshape(-1)
    present = np.zeros(top + 1, bool)
    present[values] = True
    return (np.cumsum(present) - 1)[values]


def _firsts(ranks: np.ndarray) -> np.ndarray:
    """Per rank of ``ranks`` (from ``_ranks``: every rank up to the largest occurs), the place of its
    first item: what ``np.unique(ranks, return_index=True)`` gives, without its sort."""
    first = np.full(int(ranks.max(initial=-1)) + 1, len(ranks), np.int64)
    np.minimum.at(first, ranks, np.arange(len(ranks)))
    return first


def _grown(flags: np.ndarray, size: int) -> np.ndarray:
    """``flags`` extended with False up to ``size``."""
    out = np.zeros(size, bool)
    out[:len(flags)] = flags[:size]
    return out


_SCALARS = frozenset({str, int, float, bool, type(None)})


def _hashable(value: Any) -> Any:
    """``value`` (a device's entry, as read) in a form that can key a dict."""
    if type(value) is dict and len(value) == 1:
        # The common case, one typed value ({"version": "1.2.3"}, {"value": "80Gi"}): no sorting.
        ((k, v),) = value.items()
        if type(k) is str and type(v) in _SCALARS:
            return ((k, v),)
    if isinstance(value, dict):
        return tuple(sorted((str(k), _hashable(v)) for k, v in value.items()))
    if isinstance(value, list):
        return tuple(_hashable(v) for v in value)
    return value if isinstance(value, (str, int, float, bool, type(None))) else repr(value)


def _column_bytes(errors: dict[str, dict[int, Exception]], expr: str, column: np.ndarray) -> int:
    """What a column and the errors it remembers keep."""
    return sys.getsizeof(expr) + column.nbytes + ERROR_ENTRY_BYTES * len(errors.get(expr, ()))
