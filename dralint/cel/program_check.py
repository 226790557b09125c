"""What fails when cel-go plans the program, after a clean compile: Kubernetes' regex library
(``library/regex.go``) asks for ``cel.OptimizeRegex(FindRegexOptimization,
FindAllRegexOptimization)``, so the pattern of a ``find``/``findAll`` call that is a string
literal is compiled by ``env.Program``. A bad one makes Kubernetes' ``CompileCELExpression``
fail with "program instantiation failed: <Go's regexp error>" (an internal-error result; the API
server refuses the object with it). The base environment's ``OptOptimize`` precompiles a
literal ``matches`` pattern the same way, but the validators have refused a bad one already
("invalid matches argument").
"""
from __future__ import annotations

from . import ast as A
from .checker import CheckResult
from .regex import RegexError, compile_regex

_OPTIMIZED = frozenset({"find", "findAll"})


def program_error(root: A.Expr, checked: CheckResult) -> tuple[int, str] | None:
    """(offset of the pattern, message) for the first call the planner fails on, or None.

    The planner builds a call after its arguments, so the first failure is the first in
    post-order.
    """
    # Iterative post-order walk: deep trees cannot overflow.
    stack: list[tuple[A.Expr, bool]] = [(root, False)]
    while stack:
        e, expanded = stack.pop()
        if not expanded:
            stack.append((e, True))
            stack.extend((c, False) for c in reversed(A.children(e)))
            continue
        if not (isinstance(e, A.Call) and e.function in _OPTIMIZED and e.target is not None and e.args
                and e.id not in checked.namespaced):
            continue
        pattern = e.args[0]
        if isinstance(pattern, A.Literal) and isinstance(pattern.value, str):
            try:
                compile_regex(pattern.value)
            except RegexError as exc:
                return pattern.offset, f"program instantiation failed: {exc}"
    return None
