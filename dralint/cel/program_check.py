"""What fails when cel-go plans the program, after a clean compile: Kubernetes' regex library
(``library/regex.go``) asks for ``cel.OptimizeRegex(FindRegexOptimization,
FindAllRegexOptimization)``, so the pattern of a ``find``/``findAll`` call that is a string
literal is compiled by ``env.Program``. A bad one makes Kubernetes' ``CompileCELExpression``
fail with "program instantiation failed: <Go's regexp error>" (an internal-error result; the API
server refuses the object with it). The base environment's ``OptOptimize`` precompiles a
literal ``matches`` pattern the same way, but the validators have refused a bad one already
("invalid matches argument").

``OptOptimize`` also evaluates a type conversion (``int``, ``uint``, ``double``, ``string``,
``bytes``, ``bool``, ``timestamp``, ``duration``) whose argument is a constant — a literal or a
conversion folded before it — and a failure ends ``env.Program`` the same way, with the error
the evaluation would give ("program instantiation failed: type conversion error from 'string' to 'int'").
"""
from __future__ import annotations

from typing import Any

from . import ast as A
from .checker import CheckResult
from .errors import CelRuntimeError
from .lib_std import FUNCTIONS as STD_FUNCTIONS
from .regex import RegexError, compile_regex

_OPTIMIZED = frozenset({"find", "findAll"})
# dyn() and type() are conversions too, but cannot fail.
_CONVERSIONS = frozenset({"int", "uint", "double", "string", "bytes", "bool", "timestamp", "duration"})
_NOT_CONSTANT = object()


def program_error(root: A.Expr, checked: CheckResult) -> tuple[int, str] | None:
    """(offset of the pattern, message) for the first call the planner fails on, or None.

    The planner builds a call after its arguments, so the first failure is the first in
    post-order.
    """
    constants: dict[int, Any] = {}  # node id -> value, for the constants the planner folded
    # Iterative post-order walk: deep trees cannot overflow.
    stack: list[tuple[A.Expr, bool]] = [(root, False)]
    while stack:
        e, expanded = stack.pop()
        if not expanded:
            stack.append((e, True))
            stack.extend((c, False) for c in reversed(A.children(e)))
            continue
        if isinstance(e, A.Literal):
            constants[e.id] = e.value
        if not isinstance(e, A.Call) or e.id in checked.namespaced:
            continue
        if e.function in _OPTIMIZED and e.target is not None and e.args:
            pattern = e.args[0]
            if isinstance(pattern, A.Literal) and isinstance(pattern.value, str):
                try:
                    compile_regex(pattern.value)
                except RegexError as exc:
                    return pattern.offset, f"program instantiation failed: {exc}"
        elif e.function in _CONVERSIONS and e.target is None and len(e.args) == 1:
            value = constants.get(e.args[0].id, _NOT_CONSTANT)
            if value is _NOT_CONSTANT:
                continue
            try:
                constants[e.id] = STD_FUNCTIONS[(e.function, False)](value)
            except CelRuntimeError as exc:
                return e.offset, f"program instantiation failed: {exc.message}"
    return None
