"""``compile_selector``: length check, parse, type-check, validate, output type, program
instantiation, cost, program.

The stages and their order are those of Kubernetes' ``CompileCELExpression`` plus the API
server's length check (docs/cel.md §1.5-1.6). Compiled programs are cached per
(expression, env) in a bounded LRU cache.
"""
from __future__ import annotations

from typing import Any

from ..bounded_cache import bounded_cache
from . import types as T
from .checker import check
from .compiler import compile_program
from .cost_dra import estimate
from .device import Device
from .env import GATE_LIST_ATTRS, CelEnv, model
from .errors import CelIssue, CelRuntimeError, issue_text
from .parser import ParseError, parse
from .program_check import program_error
from .runtime import type_name
from .validators import validate

MAX_LENGTH = 10 * 1024          # CELSelectorExpressionMaxLength, in bytes
MAX_COST = 1_000_000            # CELSelectorExpressionMaxCost
# DeviceClaimDerivedAttributeCELMaxCost (1.37, DRADerivedAttributes): the budget all derived-attribute
# expressions of one claim share; each one alone may cost at most min(MAX_COST, this). The value is
# not in any source read (validation.go @009801d9 uses the constant, its definition was not found);
# one selector's budget is assumed.
DERIVED_CLAIM_MAX_COST = 1_000_000
DERIVED_MAX_COST = min(MAX_COST, DERIVED_CLAIM_MAX_COST)

_QUANTITY_HINT = ("quantities and semantic versions have no relational operators: "
                  "use a.compareTo(b) < 0, a.isLessThan(b) or a.isGreaterThan(b)")
_DEVICE_FIELDS_HINT = "a device has the fields driver, attributes, capacity"
_ALLOW_MULTI_HINT = "allowMultipleAllocations needs Kubernetes 1.34+ with the DRAConsumableCapacity feature gate"
_EQUALS_HINT = "CEL compares with '==' ('=' is no CEL operator)"


class Compiled:
    """A compiled selector: its issues, worst-case cost and a fast ``evaluate``."""

    def __init__(self, expression: str, env: CelEnv, issues: tuple[CelIssue, ...], cost: int | None,
                 program: Any = None, slots: int = 2) -> None:
        self.expression = expression
        self.env = env
        self.issues = issues
        self.cost = cost
        self.ok = not any(i.severity == "error" for i in issues)
        self._program = program
        self._frame = [MAX_COST, None] + [None] * max(0, slots - 2)
        # With DRAListTypeAttributes off, 1.36 refuses a device with list values at evaluation;
        # 1.37 (dynamic-resource-allocation @3d03671) passes them through whatever the gate.
        self._list_attrs = model(env).attribute_type == T.DYN or env.kube_minor >= 37

    def __repr__(self) -> str:
        return f"Compiled({self.expression!r}, ok={self.ok}, cost={self.cost})"

    @property
    def runnable(self) -> bool:
        """A program exists: the expression compiled (perhaps over the estimated cost)."""
        return self._program is not None

    def error_text(self) -> str:
        """Kubernetes' text for the first error issue (``compilation failed: ERROR: ...``)."""
        for issue in self.issues:
            if issue.severity != "error":
                continue
            if issue.code in ("syntax", "check"):
                return "compilation failed: " + issue_text(self.expression, issue)
            return issue.message
        return ""

    def evaluate(self, device: Device) -> bool:
        """Evaluate against ``device``; raises CelRuntimeError (Kubernetes wording) on any failure."""
        if self._program is None:
            raise CelRuntimeError(self.error_text() or "expression did not compile")
        if device.error is not None:
            raise CelRuntimeError(device.error)
        if device.list_attribute is not None and not self._list_attrs:
            domain, _, ident = device.list_attribute.partition("/")
            name = ident if domain == device.driver else device.list_attribute
            raise CelRuntimeError(f"attribute {name}: unsupported attribute value")
        frame: list[Any] = self._frame.copy()
        frame[1] = device.view
        try:
            result = self._program(frame)
        except CelRuntimeError:
            raise
        except RecursionError:
            raise CelRuntimeError("evaluation recursion limit exceeded") from None
        except Exception as exc:  # a library bug must still surface as a CEL runtime error
            raise CelRuntimeError(f"internal evaluation error: {type(exc).__name__}: {exc}") from None
        if result is True or result is False:
            return result
        name = type_name(result)
        raise CelRuntimeError(f"CEL result of type {name} could not be converted to bool: "
                              f"type conversion error from '{name}' to 'bool'")


# Compiled programs and parse trees weigh about 25-45 bytes per character of their expression
# (measured with tracemalloc, 100 B to 10 KB expressions); the caches count 48, plus a fixed part.
BYTES_PER_CHARACTER = 48
EXPRESSION_CACHE_BYTES = 24 << 20


def expression_bytes(expression: str) -> int:
    """Estimated bytes of what is cached for ``expression`` (its program, or its parse tree)."""
    return BYTES_PER_CHARACTER * len(expression) + 4096


def compile_selector(expression: str, env: CelEnv) -> Compiled:
    """Compile ``expression`` in ``env`` (never raises; problems are in ``Compiled.issues``)."""
    if not isinstance(expression, str):
        return Compiled(str(expression), env, (CelIssue("syntax", "error", "expression must be a string", None),), None)
    return _compile_cached(expression, env, False)


def compile_derived_attribute(expression: str, env: CelEnv) -> Compiled:
    """Compile a derived attribute's ``expression`` as ``CompileCELExpression`` does with
    ``DerivedAttribute: true``: the same environment and estimate, its own output rule (a scalar,
    or a list of scalars where list-type attributes exist) and cost limit (``DERIVED_MAX_COST``).
    The claim-wide budget is the caller's to sum: ``Compiled.cost`` of each that compiled.
    """
    if not isinstance(expression, str):
        return Compiled(str(expression), env, (CelIssue("syntax", "error", "expression must be a string", None),), None)
    return _compile_cached(expression, env, True)


# Bounded by bytes: a compiled 10 KB expression is a hundred times the size of a 100-byte one.
@bounded_cache(EXPRESSION_CACHE_BYTES, lambda expression, env, derived: expression_bytes(expression))
def _compile_cached(expression: str, env: CelEnv, derived: bool) -> Compiled:
    if len(expression.encode("utf-8", "surrogatepass")) > MAX_LENGTH:
        return Compiled(expression, env, (CelIssue("too-long", "error",
                                                   f"Too long: may not be more than {MAX_LENGTH} bytes", None),), None)
    try:
        return _compile(expression, env, derived)
    except RecursionError:
        return Compiled(expression, env, (CelIssue("syntax", "error", "expression recursion limit exceeded: 250", 0),), None)


def _compile(expression: str, env: CelEnv, derived: bool) -> Compiled:
    try:
        parsed = parse(expression)
    except ParseError as exc:
        hint = _EQUALS_HINT if "token recognition error at: '=" in exc.message else ""
        return Compiled(expression, env, (CelIssue("syntax", "error", exc.message, exc.offset, hint),), None)
    m = model(env)
    checked = check(parsed.root, m)
    if checked.errors:
        return Compiled(expression, env, tuple(CelIssue("check", "error", msg, off, _teach(msg))
                                                for off, msg in checked.errors), None)
    found = validate(parsed.root, checked, m)
    if found:
        return Compiled(expression, env, tuple(CelIssue(code, "error", msg, off) for off, msg, code in found), None)
    out = checked.type_of(parsed.root)
    wrong = _derived_output_error(out, env) if derived else _selector_output_error(out, m.attribute_type)
    if wrong:
        return Compiled(expression, env, (CelIssue("output-type", "error", wrong, None),), None)
    failed = program_error(parsed.root, checked)
    if failed:
        return Compiled(expression, env, (CelIssue("program", "error", failed[1], failed[0]),), None)
    cost = estimate(parsed.root, checked, m)[1]
    issues: tuple[CelIssue, ...] = ()
    if cost > (DERIVED_MAX_COST if derived else MAX_COST):
        issues = (CelIssue("cost", "error", "too complex, exceeds cost limit", None),)
    program, slots = compile_program(parsed.root, checked)
    return Compiled(expression, env, issues, cost, program, slots)


def _selector_output_error(out: T.Type, attribute_type: T.Type) -> str:
    """``validateOutputType`` for a selector: exactly bool or exactly the attribute type."""
    if out == T.BOOL or out == T.ANY or (out == T.DYN and attribute_type == T.DYN):
        return ""
    return f"must evaluate to bool or the unknown type, not {T.declared_name(out)}"


_DERIVED_SCALARS = (T.BOOL, T.INT, T.STRING, T.ANY, T.DYN, T.SEMVER)


def _derived_output_error(out: T.Type, env: CelEnv) -> str:
    """``validateOutputType`` for a derived attribute: a scalar the constraints can compare, or a
    list of them when the compiler has list-type attributes (the gate, or StoredExpressions)."""
    lists = GATE_LIST_ATTRS in env.gates or env.stored
    if out in _DERIVED_SCALARS or (lists and out.kind == "list" and len(out.params) == 1
                                   and out.params[0] in _DERIVED_SCALARS):
        return ""
    allowed = "a primitive scalar (string, integer, boolean, semver)"
    if lists:
        allowed += " or a list of these scalars"
    return f"must evaluate to {allowed}, not {T.declared_name(out)}"


def _teach(message: str) -> str:
    """A hint for cel-go's message where the fix is not obvious from it ("" when none)."""
    if message.startswith("found no matching overload for '_") and ("kubernetes.Quantity" in message or
                                                                     "kubernetes.Semver" in message):
        op = message.split("'")[1]
        if op in ("_<_", "_<=_", "_>_", "_>=_"):
            return _QUANTITY_HINT
    if message == "undefined field 'allowMultipleAllocations'":
        return _ALLOW_MULTI_HINT
    if message.startswith("undefined field '"):
        return _DEVICE_FIELDS_HINT
    return ""
