"""Which devices a request can take: DeviceClass selectors, then request selectors (§5).

Results are cached per (expression, device) for the whole run, errors included, so a device is
converted and an expression compiled at most once. A cached error is only *raised* when the
search reaches that device, which keeps Kubernetes' laziness: a CEL runtime error is fatal, but
only for devices the scheduler actually evaluates.
"""
from __future__ import annotations

import re
import sys
import weakref
from dataclasses import dataclass

import numpy as np
from typing import Any, Callable, Iterable, Mapping

from ..convert import Canonical
from ..paths import FieldPath
from ..kube.releases import Release
from ..sizes import deep_size
from .columns import ERROR, FALSE, TRUE, Columns
from .lru import Lru
from .fatal import FatalError
from .model import Alternative, ClaimSpec, Device


# Answers of selector lists, one byte per device each, with their keys; the filter counts read theirs
# here too. Worked out again from the cached columns in a few numpy passes: on the 17 MiB benchmark
# file 16 MB (not 128) missed 5,000 more of 38,000 asks at no CPU seen, and kept the peak 45 MB lower;
# 12 MB misses 356 more of 10,958 (the benchmark corpus: 343 more of 9,113) and keeps it 4 MB lower.
MAX_COMBINED_BYTES = 12 << 20
# Per start of a selector list, the devices its selectors all take and those where one fails first
# (uids): a class's selectors start the list of every request for it, so a request's own selectors are
# read on what the class keeps, not over the whole fleet. Kept are the starts that many lists share
# (about 250 classes' on the benchmark corpus, of a few thousand uids each).
MAX_KEPT_BYTES = 4 << 20
EXPRESSION_FACT_BYTES = 4 << 20  # per expression, the names it reads and the driver it requires


class SelectorError(Exception):
    """A selector that cannot be compiled, or fails on one device."""

    def __init__(self, message: str, *, compile_error: bool = False) -> None:
        super().__init__(message)
        self.message = message
        self.compile_error = compile_error


# (expression, device) -> bool; raises SelectorError. The scheduler's CEL, or a test double.
Evaluator = Callable[[str, Device], bool]


@dataclass(frozen=True)
class DeviceClassInfo:
    obj: Canonical
    name: str
    selectors: tuple[str | None, ...]


def read_class(obj: Canonical) -> DeviceClassInfo:
    selectors = []
    raw = obj.get("spec", "selectors")
    for sel in raw if isinstance(raw, list) else []:
        cel = sel.get("cel") if isinstance(sel, dict) else None
        expr = cel.get("expression") if isinstance(cel, dict) else None
        selectors.append(expr if isinstance(expr, str) else None)
    return DeviceClassInfo(obj, obj.name, tuple(selectors))


def cel_evaluator(release: Release) -> Evaluator:
    """Evaluate with dralint's CEL in the scheduler's environment (StoredExpressions of the release)."""
    from ..cel import CelRuntimeError, compile_selector, device_from_api, env_for
    from ..cel import Device as CelDevice

    gates = {g: release.gate(g) for g in release.known_gates()}
    env = env_for(release.version, gates, stored=True)
    converted: dict[int, CelDevice] = {}

    def evaluate(expression: str, device: Device) -> bool:
        program = compile_selector(expression, env)  # cached by the CEL package
        if not program.ok:
            raise SelectorError(f"CEL compile error: {program.error_text()}", compile_error=True)
        cel_device = converted.get(device.uid)
        if cel_device is None:
            cel_device = converted[device.uid] = device_from_api(device.key[0], device.raw)
        try:
            return program.evaluate(cel_device)
        except CelRuntimeError as exc:
            raise SelectorError(f"CEL runtime error: {exc}") from exc

    return evaluate


def cel_entry_problem(table: str, name: str, value: object) -> str | None:
    """What the scheduler's conversion of a device says about one of its attributes or capacities
    (``table``: "attributes" or "capacity"); None when it converts."""
    from ..cel import device_from_api

    return device_from_api("", {table: {name: value}}).error


def cel_required_driver(release: Release) -> Callable[[str], str | None]:
    """For an expression that compiles in the scheduler's environment, the driver its devices must
    have (see :func:`required_driver`); None when it does not compile, so its error still surfaces."""
    from ..cel import compile_selector, env_for

    gates = {g: release.gate(g) for g in release.known_gates()}
    env = env_for(release.version, gates, stored=True)

    def driver_of(expression: str) -> str | None:
        return required_driver(expression) if compile_selector(expression, env).ok else None

    return driver_of


def required_driver(expression: str) -> str | None:
    """``name`` when ``device.driver == "name"`` (either order) is a top-level conjunct of ``expression``.

    CEL's ``&&`` is false as soon as one operand is false, even if another one fails at run time,
    so such an expression is false on every device of another driver without evaluating it: most
    selectors start with their driver, and most devices of a run belong to other drivers.
    """
    from ..cel import ast as A
    from ..cel.parser import ParseError, parse

    try:
        root = parse(expression).root
    except (ParseError, RecursionError):
        return None
    conjuncts, drivers = [root], set()
    while conjuncts:
        node = conjuncts.pop()
        if isinstance(node, A.Call) and node.target is None and len(node.args) == 2:
            if node.function == "_&&_":
                conjuncts.extend(node.args)
            elif node.function == "_==_":
                left, right = node.args
                for field, literal in ((left, right), (right, left)):
                    if (isinstance(field, A.Select) and not field.test_only and field.field == "driver"
                            and isinstance(field.operand, A.Ident) and field.operand.name == "device"
                            and isinstance(literal, A.Literal) and type(literal.value) is str):
                        drivers.add(literal.value)
    # Two different required drivers: false everywhere, which evaluation finds out as well.
    return next(iter(drivers)) if len(drivers) == 1 else None


# Constructs through which an expression can see attributes it does not name: iteration and size
# of maps, computed keys, conversions of whole values. Expressions using them are evaluated per device.
_OPAQUE_WORDS = frozenset({"all", "exists", "exists_one", "existsOne", "map", "filter", "size", "sortBy",
                           "transformList", "transformMap", "transformMapEntry", "string", "dyn", "type", "bind"})
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_STRING = re.compile(r'"([^"]*)"')
_MAP_INDEX = re.compile(r"\b(?:attributes|capacity)\s*\[")


# `"name" in device.attributes["domain"]`: a membership test of a literal key reads that key only.
_LITERAL_IN = re.compile(r'"[^"\\]*"\s+in\s+device\.$')


def _whole_map_used(expression: str) -> bool:
    """True when some ``attributes[...]``/``capacity[...]`` is used as a value, not indexed further
    (nor tested for a literal key)."""
    for m in _MAP_INDEX.finditer(expression):
        depth, i = 1, m.end()
        while i < len(expression) and depth:
            depth += {"[": 1, "]": -1}.get(expression[i], 0)
            i += 1
        rest = expression[i:].lstrip()
        if not rest.startswith((".", "[")) and not _LITERAL_IN.search(expression[:m.start()]):
            return True
    return False


def names_read(expression: str) -> frozenset[str] | None:
    """Attribute and capacity ids ``expression`` can read, or None when that cannot be told from its text."""
    if "\\" in expression or "'" in expression or '"""' in expression or "+" in expression:
        return None
    literals = _STRING.findall(expression)
    bare = _STRING.sub('""', expression)
    words = set(_WORD.findall(bare))
    if words & _OPAQUE_WORDS:
        return None
    if _whole_map_used(expression):
        return None
    for lit in literals:
        words.update(lit.split("/"))
    return frozenset(words)


def _alive(method: "weakref.WeakMethod[Any]") -> Callable[..., Any]:
    """The method a weak reference holds; its object owns the caller, so it is alive while called."""
    return method()  # type: ignore[return-value]


def expressions_bytes(expressions: tuple[str | None, ...]) -> int:
    """Bytes of a selector list (a None counts its 16 bytes), as ``deep_size`` finds them for
    distinct expressions; summed, not walked: the caches keyed by selector lists weigh thousands
    of keys a run."""
    return sys.getsizeof(expressions) + sum(sys.getsizeof(expr) for expr in expressions)


def _fact_bytes(expression: str, fact: tuple) -> int:
    return deep_size((expression, fact))


class Selection:
    """Selector results of one run (or of the webhook's fleet); ``matches`` raises FatalError for a
    failing selector.

    Each expression is answered for every device at once (see columns.py) the first time any
    device asks: a fleet of identical GPUs costs one evaluation per distinct model, not per GPU.
    """

    def __init__(self, evaluate: Evaluator, binding_conditions: bool,
                 driver_of: Callable[[str], str | None] | None = None,
                 entry_problem: Callable[[str, str, object], str | None] | None = None) -> None:
        self._binding = binding_conditions
        # The driver an expression requires (None: any); only given with the real CEL semantics.
        self._driver_of = driver_of
        # Per expression (boxed: None is an answer), the driver it requires and the names it reads.
        self._drivers: Lru[str, tuple[str | None]] = Lru(EXPRESSION_FACT_BYTES, _fact_bytes)
        self._names: Lru[str, tuple[frozenset[str] | None]] = Lru(EXPRESSION_FACT_BYTES, _fact_bytes)
        # Weak, as the columns live inside this selection: bound methods would make it a reference cycle,
        # freed only by a full walk of the collector (the webhook replaces selections with their worlds).
        names_read, required = weakref.WeakMethod(self._names_read), weakref.WeakMethod(self._required)
        self.columns = Columns(evaluate, SelectorError, lambda e: _alive(names_read)(e), lambda e: _alive(required)(e),
                               entry_problem)
        # Per selector list (class, then request), its answers; bounded by bytes, like the filter counts.
        self._combined: Lru[tuple[str | None, ...], np.ndarray] = Lru(
            MAX_COMBINED_BYTES, lambda expressions, answers: expressions_bytes(expressions) + answers.nbytes)
        self._kept: Lru[tuple[str | None, ...], tuple[int, np.ndarray, np.ndarray]] = Lru(
            MAX_KEPT_BYTES, lambda expressions, kept: expressions_bytes(expressions) + kept[1].nbytes + kept[2].nbytes)

    def _names_read(self, expression: str) -> frozenset[str] | None:
        have = self._names.get(expression)
        if have is None:
            have = self._names.put(expression, (names_read(expression),))
        return have[0]

    def _required(self, expression: str) -> str | None:
        if self._driver_of is None:
            return None
        have = self._drivers.get(expression)
        if have is None:
            have = self._drivers.put(expression, (self._driver_of(expression),))
        return have[0]

    def drop_caches(self) -> int:
        """Forget every selector answer and fact about expressions (worked out again when asked);
        the bytes they held, as estimated."""
        return (self._combined.clear() + self._kept.clear() + self._drivers.clear() + self._names.clear()
                + self.columns.drop_caches())

    @property
    def evaluations(self) -> int:
        return self.columns.evaluations

    def expression(self, expression: str, device: Device) -> bool:
        """One selector on one device; raises SelectorError."""
        columns = self.columns
        if device.uid >= len(columns.devices) or columns.devices[device.uid] is None:
            columns.add([device])
        answer = columns.column(expression)[device.uid]
        if answer == ERROR:
            raise columns.error(expression, device.uid)
        return bool(answer)

    def probe(self, expression: str, device: Device) -> bool | None:
        """Like ``expression`` but None for an error (explanations never raise)."""
        try:
            return self.expression(expression, device)
        except SelectorError:
            return None

    def combined(self, expressions: tuple[str | None, ...]) -> np.ndarray:
        """Per device uid, the answer of ``expressions`` in order (class selectors, then the
        request's): FALSE at the first false one, ERROR where one fails before that. Devices with
        binding conditions are FALSE without evaluating anything when the feature is off."""
        have = self._cached(expressions)
        if have is not None:
            return have
        return self._combine(expressions, *self._survivors(expressions, remember=False))

    def selected(self, expressions: tuple[str | None, ...]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``combined``'s answers, with the uids where they are TRUE and those where they are ERROR (in
        no particular order): for the filter counts, which count those devices alone."""
        have = self._cached(expressions)
        if have is not None:
            return have, np.flatnonzero(have == TRUE), np.flatnonzero(have == ERROR)
        kept, failed = self._survivors(expressions, remember=False)
        return self._combine(expressions, kept, failed), kept, failed

    def taken(self, expressions: tuple[str | None, ...]) -> np.ndarray:
        """The uids where ``combined``'s answers are TRUE, ascending (``selected``'s second part,
        without listing the failing ones)."""
        have = self._cached(expressions)
        if have is not None:
            return (have == TRUE).nonzero()[0]
        kept, failed = self._survivors(expressions, remember=False)
        self._combine(expressions, kept, failed)
        return kept

    def _combine(self, expressions: tuple[str | None, ...], kept: np.ndarray, failed: np.ndarray) -> np.ndarray:
        out = np.zeros(len(self.columns.devices), np.int8)     # FALSE
        out[kept] = TRUE
        out[failed] = ERROR
        out.flags.writeable = False      # shared: the filter counts read it through this cache
        return self._combined.put(expressions, out)

    def _cached(self, expressions: tuple[str | None, ...]) -> np.ndarray | None:
        """The combined answers of ``expressions`` kept for every device registered now, if any."""
        have = self._combined.get(expressions)
        return have if have is not None and len(have) == len(self.columns.devices) else None

    def _survivors(self, expressions: tuple[str | None, ...], remember: bool = True) -> tuple[np.ndarray, np.ndarray]:
        """The uids every selector of ``expressions`` takes, in order, and those where one fails before
        any says false (devices with binding conditions are taken by none while the feature is off).
        Its starts are remembered; itself only when ``remember``."""
        columns = self.columns
        have = self._kept.get(expressions)
        if have is not None and have[0] == columns.version:
            return have[1], have[2]
        if not expressions:
            n = len(columns.devices)
            everyone = np.arange(n) if self._binding else np.flatnonzero(columns.alive & ~columns.bound)
            kept, failed = everyone.astype(np.int32), np.zeros(0, np.int32)
        else:
            kept, failed = self._survivors(expressions[:-1])
            expr = expressions[-1]
            if expr is not None:
                answers = columns.column(expr)[kept]
                fails = answers == ERROR
                if fails.any():
                    failed = np.concatenate([failed, kept[fails]])
                kept = kept[answers == TRUE]
        if remember:
            self._kept.put(expressions, (columns.version, kept, failed))
        return kept, failed

    def answers(self, cls: DeviceClassInfo, alt: Alternative) -> memoryview:
        """Per device uid, the answer of the class's then the request's selectors (TRUE, FALSE,
        ERROR), for a caller asking about many devices: one lookup, then plain indexing (a view
        answers one device without numpy's overhead)."""
        return self.combined(cls.selectors + alt.selectors).data   # memoryview(array), as numpy's stubs say

    def answers_among(self, cls: DeviceClassInfo, alt: Alternative, uids: Iterable[int]
                      ) -> tuple[memoryview | dict[int, int], int]:
        """``answers`` for a caller that asks about the devices ``uids`` alone (one node's): the
        cached answers over the fleet when there are, else those of ``uids`` only, read off the
        selectors' columns as ``combined`` combines them (a pass over every device costs a search
        more than all its steps). With them, the uids answered: past it, ERROR (unregistered)."""
        expressions = cls.selectors + alt.selectors
        columns = self.columns
        n = len(columns.devices)
        have = self._cached(expressions)
        if have is not None:
            return have.data, n
        cols = [columns.column(expr).data for expr in expressions if expr is not None]
        alive, bound, binding = columns.alive, columns.bound, self._binding
        out: dict[int, int] = {}
        for uid in uids:
            if uid >= n:
                continue
            answer = TRUE if binding or (alive[uid] and not bound[uid]) else FALSE
            if answer == TRUE:
                for col in cols:
                    value = col[uid]
                    if value != TRUE:
                        answer = ERROR if value == ERROR else FALSE
                        break
            out[uid] = answer
        return out, n

    def matches(self, cls: DeviceClassInfo, alt: Alternative, claim: ClaimSpec, device: Device) -> bool:
        """Class selectors, then request selectors, as ``isSelectable`` (without per-device node selection)."""
        answer = self.answers(cls, alt)[device.uid]
        if answer != ERROR:
            return answer == TRUE
        # Which selector fails, for the scheduler's message.
        for i, expr in enumerate(cls.selectors):
            if expr is None:
                continue
            try:
                if not self.expression(expr, device):
                    return False
            except SelectorError as exc:
                raise FatalError("cel", f"class {cls.name}: selector #{i} on device {device.label}: {exc.message}",
                                 cls.obj, FieldPath(("spec", "selectors", i, "cel", "expression")),
                                 fallback=(claim.obj, alt.path.child("deviceClassName")),
                                 compile_error=exc.compile_error) from exc
        for i, expr in enumerate(alt.selectors):
            if expr is None:
                continue
            try:
                if not self.expression(expr, device):
                    return False
            except SelectorError as exc:
                path = alt.path.child("selectors", i, "cel", "expression")
                raise FatalError("cel", f"claim {claim.display}: selector #{i} on device {device.label}: {exc.message}",
                                 claim.obj, path, fallback=(claim.obj, path), compile_error=exc.compile_error) from exc
        return True


def class_lookup(classes: Mapping[str, Canonical]) -> dict[str, DeviceClassInfo]:
    """DeviceClasses by name, read once."""
    return {name: read_class(obj) for name, obj in classes.items()}
