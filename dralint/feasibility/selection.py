"""Which devices a request can take: DeviceClass selectors, then request selectors (§5).

Results are cached per (expression, device) for the whole run, errors included, so a device is
converted and an expression compiled at most once. A cached error is only *raised* when the
search reaches that device, which keeps Kubernetes' laziness: a CEL runtime error is fatal, but
only for devices the scheduler actually evaluates.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Mapping

from ..convert import Canonical
from ..paths import FieldPath
from ..releases import Release
from .fatal import FatalError
from .model import Alternative, ClaimSpec, Device


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
    for sel in obj.get("spec", "selectors", default=[]) if isinstance(obj.get("spec", "selectors"), list) else []:
        expr = sel.get("cel", {}).get("expression") if isinstance(sel, dict) and isinstance(sel.get("cel"), dict) else None
        selectors.append(expr if isinstance(expr, str) else None)
    return DeviceClassInfo(obj, obj.name, tuple(selectors))


def cel_evaluator(release: Release) -> Evaluator:
    """Evaluate with dralint's CEL in the scheduler's environment (StoredExpressions of the release)."""
    from ..cel import CelRuntimeError, compile_selector, device_from_api, env_for

    gates = {g: release.gate(g) for g in release.known_gates()}
    env = env_for(release.version, gates, stored=True)
    programs: dict[str, object] = {}
    converted: dict[int, object] = {}

    def evaluate(expression: str, device: Device) -> bool:
        program = programs.get(expression)
        if program is None:
            program = programs[expression] = compile_selector(expression, env)
        if not program.ok:  # type: ignore[attr-defined]
            issues = [i for i in program.issues if getattr(i, "severity", "error") == "error"]  # type: ignore[attr-defined]
            text = "; ".join(i.message for i in issues) or "the expression does not compile"
            raise SelectorError(f"CEL compile error: {text}", compile_error=True)
        cel_device = converted.get(device.uid)
        if cel_device is None:
            cel_device = converted[device.uid] = device_from_api(device.key[0], device.raw)
        try:
            return program.evaluate(cel_device) is True  # type: ignore[attr-defined]
        except CelRuntimeError as exc:
            raise SelectorError(f"CEL runtime error: {exc}") from exc

    return evaluate


class Selection:
    """Selector results of one run; ``matches`` raises FatalError for a failing selector."""

    def __init__(self, evaluate: Evaluator, binding_conditions: bool) -> None:
        self._evaluate = evaluate
        self._binding = binding_conditions
        self._results: dict[tuple[str, int], bool | SelectorError] = {}
        self.evaluations = 0

    def expression(self, expression: str, device: Device) -> bool:
        """One selector on one device (cached); raises SelectorError."""
        key = (expression, device.uid)
        result = self._results.get(key)
        if result is None:
            self.evaluations += 1
            try:
                result = self._evaluate(expression, device)
            except SelectorError as exc:
                result = exc
            self._results[key] = result
        if isinstance(result, SelectorError):
            raise result
        return result

    def probe(self, expression: str, device: Device) -> bool | None:
        """Like ``expression`` but None for an error (explanations never raise)."""
        try:
            return self.expression(expression, device)
        except SelectorError:
            return None

    def matches(self, cls: DeviceClassInfo, alt: Alternative, claim: ClaimSpec, device: Device) -> bool:
        """Class selectors, then request selectors, as ``isSelectable`` (without per-device node selection)."""
        if not self._binding and device.binding_conditions:
            return False
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
