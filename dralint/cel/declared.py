"""CEL with declared variables instead of the selector's ``device``: an admission policy's
expressions (``object``, ``request``, ``namespaceObject``, ...), compiled, type-checked,
cost-estimated and evaluated by the same parser, checker, coster and runtime as DRA selectors.

The variables' types are given by the caller (the API server declares ``object`` and friends as
``dyn`` for admission policies). A dyn value has no size cel-go could know, so the caller also
gives the worst-case sizes of the paths its expressions iterate or measure (:class:`Sizes`: the
API's own validation limits, such as 32 requests per claim); a path without one is unbounded,
and so is the estimate of whatever depends on it.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from . import types as T
from .checker import check
from .compiler import compile_program
from .cost import ONE, AstNode, CallEstimate, Range, estimate_cost
from .cost_libs import KubernetesEstimator, overload_estimators
from .env import CelEnv, model
from .errors import CelIssue, CelRuntimeError, issue_text
from .parser import ParseError, parse
from .program_check import program_error
from .validators import validate

ANY_SEGMENT = "*"
ANY_PREFIX = "**"
INT64_DIGITS = 20


@dataclass(frozen=True)
class Sizes:
    """Worst-case sizes by field path (``("object", "spec", "devices", "requests")``); a segment
    ``*`` matches any one segment (a field name, or the coster's ``@items``), and a pattern that
    starts with ``**`` matches the end of a path. The first pattern that matches wins."""

    table: Mapping[tuple[str, ...], int] = field(default_factory=dict)

    def estimate_size(self, node: AstNode) -> Range | None:
        path = node.path
        if not path:
            return None
        for pattern, size in self.table.items():
            if pattern[:1] == (ANY_PREFIX,):
                pattern = pattern[1:]
                if len(pattern) > len(path):
                    continue
                tail = path[len(path) - len(pattern):]
            elif len(pattern) == len(path):
                tail = path
            else:
                continue
            if all(p in (ANY_SEGMENT, s) for p, s in zip(pattern, tail)):
                return (0, size)
        return None

    def estimate_call_cost(self, function: str, overload_id: str, target: AstNode | None,
                           args: list[AstNode]) -> None:
        return None


@dataclass(frozen=True)
class _Estimator:
    """Kubernetes' estimator over the declared sizes, and the digits of ``string(int)``: cel-go
    leaves that result's size unknown, so every message built with an index would be unbounded;
    an int64 has at most 20 characters."""

    base: KubernetesEstimator

    def estimate_size(self, node: AstNode) -> Range | None:
        return self.base.estimate_size(node)

    def estimate_call_cost(self, function: str, overload_id: str, target: AstNode | None,
                           args: list[AstNode]) -> CallEstimate | None:
        if overload_id == "int64_to_string":
            return CallEstimate(ONE, (1, INT64_DIGITS))
        return self.base.estimate_call_cost(function, overload_id, target, args)


@dataclass(frozen=True)
class Declarations:
    """The top-level identifiers (name → type, in frame order) and the sizes of what they hold."""

    variables: tuple[tuple[str, T.Type], ...]
    sizes: Sizes = field(default_factory=Sizes)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(name for name, _ in self.variables)


class DeclaredProgram:
    """One compiled expression: its issues, output type, estimated worst-case cost and program."""

    def __init__(self, expression: str, issues: tuple[CelIssue, ...], output: T.Type | None = None,
                 cost: int | None = None, program: Any = None, slots: int = 2,
                 names: tuple[str, ...] = ()) -> None:
        self.expression = expression
        self.issues = issues
        self.output = output
        self.cost = cost
        self.ok = not issues
        self._program = program
        self._slots = slots
        self._names = names

    def error_text(self) -> str:
        """Kubernetes' wording of the first issue (``compilation failed: ERROR: ...``)."""
        for issue in self.issues:
            if issue.code in ("syntax", "check"):
                return "compilation failed: " + issue_text(self.expression, issue)
            return issue.message
        return ""

    def evaluate(self, bindings: Mapping[str, Any], budget: int) -> tuple[Any, int]:
        """(value, actual cost) with ``bindings`` for the declared names (a missing one is null).

        Raises :class:`CelRuntimeError` (Kubernetes' wording), ``CostLimitExceeded`` past ``budget``.
        """
        if self._program is None:
            raise CelRuntimeError(self.error_text() or "expression did not compile")
        frame: list[Any] = [budget, None] + [bindings.get(name) for name in self._names]
        frame += [None] * (self._slots - len(frame))
        try:
            value = self._program(frame)
        except CelRuntimeError:
            raise
        except RecursionError:
            raise CelRuntimeError("evaluation recursion limit exceeded") from None
        return value, budget - frame[0]


def compile_declared(expression: str, env: CelEnv, declarations: Declarations) -> DeclaredProgram:
    """Compile ``expression`` with ``declarations`` in ``env``'s libraries (never raises)."""
    try:
        return _compile(expression, env, declarations)
    except RecursionError:
        return DeclaredProgram(expression, (CelIssue("syntax", "error", "expression recursion limit exceeded: 250",
                                                     0),))


def _compile(expression: str, env: CelEnv, declarations: Declarations) -> DeclaredProgram:
    try:
        parsed = parse(expression)
    except ParseError as exc:
        return DeclaredProgram(expression, (CelIssue("syntax", "error", exc.message, exc.offset),))
    m = model(env)
    checked = check(parsed.root, m, dict(declarations.variables))
    if checked.errors:
        return DeclaredProgram(expression, tuple(CelIssue("check", "error", msg, off) for off, msg in checked.errors))
    found = validate(parsed.root, checked, m)
    if found:
        return DeclaredProgram(expression, tuple(CelIssue(code, "error", msg, off) for off, msg, code in found))
    failed = program_error(parsed.root, checked)
    if failed:
        return DeclaredProgram(expression, (CelIssue("program", "error", failed[1], failed[0]),))
    estimator = _Estimator(KubernetesEstimator(declarations.sizes))
    cost = estimate_cost(parsed.root, checked, estimator, overload_estimators(m.libraries))[1]
    program, slots = compile_program(parsed.root, checked, declarations.names)
    return DeclaredProgram(expression, (), checked.type_of(parsed.root), cost, program, slots, declarations.names)
