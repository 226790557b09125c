"""cel-go's AST validators that Kubernetes enables: homogeneous aggregate literals, the
duration / timestamp / regex literal checks and the strings extension's ``format`` check.
They run only after a clean type check."""
from __future__ import annotations

from . import ast as A
from . import types as T
from .checker import CheckResult
from .env import EnvModel
from .errors import CelRuntimeError
from .format_check import PANIC, check_format, is_format_call
from .lib_std import to_duration, to_timestamp
from .regex import RegexError, compile_regex

# Functions whose list arguments may mix types (ext.Strings marks "format" exempt).
_EXEMPT = frozenset({"format"})


def validate(root: A.Expr, checked: CheckResult, model: EnvModel) -> list[tuple[int, str, str]]:
    """(offset, message, code) for every validator finding, ordered by offset as cel-go prints
    its issues. ``code`` is ``check``, or ``panic`` where the release's cel-go crashes instead."""
    out: list[tuple[int, str]] = []
    panics: list[tuple[int, str, str]] = []
    literal_checks = model.has("literal_validators")
    formats = model.has("strings")
    # Iterative walk carrying "inside an exempt call" so deep trees cannot overflow.
    stack: list[tuple[A.Expr, bool]] = [(root, False)]
    while stack:
        e, exempt = stack.pop()
        if isinstance(e, A.ListLit) and not exempt:
            _homogeneous(out, checked, [(x, i in e.optional_indices) for i, x in enumerate(e.elements)])
        elif isinstance(e, A.MapLit) and not exempt:
            if not _homogeneous(out, checked, [(ent.key, False) for ent in e.entries]):
                _homogeneous(out, checked, [(ent.value, ent.optional) for ent in e.entries])
        elif isinstance(e, A.Call):
            if literal_checks:
                _literal_args(out, e, checked)
            if formats and is_format_call(e, checked):
                _format(out, panics, e, checked, model)
        child_exempt = exempt or (isinstance(e, A.Call) and e.function in _EXEMPT)
        stack.extend((c, child_exempt) for c in reversed(A.children(e)))
    if panics:
        return panics[:1]  # the crash ends the compilation: nothing else is reported
    return sorted(((offset, message, "check") for offset, message in out), key=lambda f: f[0])


def _format(out: list[tuple[int, str]], panics: list[tuple[int, str, str]], e: A.Call, checked: CheckResult,
            model: EnvModel) -> None:
    target = e.target
    if isinstance(target, A.Literal) and isinstance(target.value, str):
        problem = check_format(e, target.value, e.args[0].elements, checked)  # type: ignore[union-attr]
        if problem is not None:
            out.append(problem)
    elif "format_nonliteral_panic" in model.quirks and target is not None and checked.type_of(target) == T.STRING:
        panics.append((e.offset, PANIC, "panic"))


def _homogeneous(out: list[tuple[int, str]], checked: CheckResult, elems: list[tuple[A.Expr, bool]]) -> bool:
    first: T.Type | None = None
    for x, optional in elems:
        t = checked.type_of(x)
        if optional and T.is_optional(t):
            t = t.params[0]
        if first is None:
            first = t
            continue
        if t != first:
            out.append((x.offset, f"expected type '{T.fmt(first)}' but found '{T.fmt(t)}'"))
            return True
    return False


def _literal_args(out: list[tuple[int, str]], e: A.Call, checked: CheckResult) -> None:
    fn = e.function
    if fn == "matches":
        arg = e.args[0] if e.target is not None else (e.args[1] if len(e.args) > 1 else None)
        if isinstance(arg, A.Literal) and isinstance(arg.value, str):
            try:
                compile_regex(arg.value)
            except RegexError:
                out.append((arg.offset, "invalid matches argument"))
    elif fn in ("duration", "timestamp") and e.target is None and len(e.args) == 1:
        arg = e.args[0]
        # cel-go evaluates the call (evalCall): any literal, so timestamp(<int>) out of range and
        # a duration beyond its range are refused too.
        if isinstance(arg, A.Literal):
            try:
                (to_duration if fn == "duration" else to_timestamp)(arg.value)
            except CelRuntimeError:
                out.append((arg.offset, f"invalid {fn} argument"))
