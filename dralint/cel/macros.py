"""Parse-time macro expansion, shaped exactly like cel-go's (so costs and errors agree).

Macros are matched by name, argument count and call style; anything else stays a plain call.
Which macros the environment allows is checked later by the checker (two-variable forms and
``sortBy`` are library features), so the parser can be shared by every release.
"""
from __future__ import annotations

from typing import Callable

from . import ast as A

_ACCU = A.ACCU


class MacroError(ValueError):
    def __init__(self, message: str, offset: int | None) -> None:
        super().__init__(message)
        self.message = message
        self.offset = offset


def expand_macro(name: str, target: A.Expr | None, args: list[A.Expr], offset: int,
                 nid: Callable[[], int]) -> A.Expr | None:
    """The expansion of ``name(args)`` / ``target.name(args)``, or None when it is no macro."""
    n = len(args)
    if target is None:
        if name == "has" and n == 1:
            arg = args[0]
            if not isinstance(arg, A.Select) or arg.test_only:
                raise MacroError("invalid argument to has() macro", offset)
            return A.Select(nid(), offset, arg.operand, arg.field, test_only=True)
        return None
    qualified = A.qualified_name(target)
    if qualified == "cel" and name == "bind" and n == 3:
        var = _simple(args[0], "cel.bind() variable names must be simple identifiers")
        return A.Comprehension(nid(), offset, "#unused", A.ListLit(nid(), offset, []), var, args[1],
                               A.Literal(nid(), offset, False), A.Ident(nid(), offset, var), args[2], macro="cel.bind")
    if qualified == "optional" or qualified == "lists" or qualified == "sets" or qualified == "strings":
        return None
    if name in ("all", "exists", "exists_one", "existsOne") and n == 2 and name != "existsOne":
        return _quantifier(name, target, _simple(args[0]), args[1], offset, nid)
    if name in ("all", "exists", "exists_one", "existsOne") and n == 3:
        k = _simple(args[0])
        v = _simple(args[1])
        if k == v:
            raise MacroError(f"duplicate variable name: {k}", _offset(args[1]))
        return _quantifier(name, target, k, args[2], offset, nid, v)
    if name == "map" and n in (2, 3):
        var = _simple(args[0])
        fn = args[-1]
        step: A.Expr = _append(nid, offset, fn)
        if n == 3:
            step = A.Call(nid(), offset, "_?_:_", [args[1], step, A.Ident(nid(), offset, _ACCU)])
        return _fold(nid, offset, var, target, A.ListLit(nid(), offset, []), A.Literal(nid(), offset, True), step, "map")
    if name == "filter" and n == 2:
        var = _simple(args[0])
        step = A.Call(nid(), offset, "_?_:_", [args[1], _append(nid, offset, A.Ident(nid(), offset, var)),
                                                 A.Ident(nid(), offset, _ACCU)])
        return _fold(nid, offset, var, target, A.ListLit(nid(), offset, []), A.Literal(nid(), offset, True), step, "filter")
    if name in ("transformList", "transformMap", "transformMapEntry") and n in (3, 4):
        k = _simple(args[0])
        v = _simple(args[1])
        if k == v:
            raise MacroError(f"duplicate variable name: {k}", _offset(args[1]))
        fn = args[-1]
        if name == "transformList":
            init: A.Expr = A.ListLit(nid(), offset, [])
            step = _append(nid, offset, fn)
        elif name == "transformMap":
            init = A.MapLit(nid(), offset, [])
            step = A.Call(nid(), offset, "cel.@mapInsert", [A.Ident(nid(), offset, _ACCU), A.Ident(nid(), offset, k), fn])
        else:
            init = A.MapLit(nid(), offset, [])
            step = A.Call(nid(), offset, "cel.@mapInsert", [A.Ident(nid(), offset, _ACCU), fn])
        if n == 4:
            step = A.Call(nid(), offset, "_?_:_", [args[2], step, A.Ident(nid(), offset, _ACCU)])
        return A.Comprehension(nid(), offset, k, target, _ACCU, init, A.Literal(nid(), offset, True), step,
                               A.Ident(nid(), offset, _ACCU), iter_var2=v, macro=name)
    if name == "sortBy" and n == 2:
        var = _simple(args[0])
        # cel-go: cel.bind(@__sortBy_input__, target, input.@sortByAssociatedKeys(input.map(var, key)))
        inp = "@__sortBy_input__"
        keys = _fold(nid, offset, var, A.Ident(nid(), offset, inp), A.ListLit(nid(), offset, []),
                     A.Literal(nid(), offset, True), _append(nid, offset, args[1]), "map")
        call = A.Call(nid(), offset, "@sortByAssociatedKeys", [keys], A.Ident(nid(), offset, inp))
        return A.Comprehension(nid(), offset, "#unused", A.ListLit(nid(), offset, []), inp, target,
                               A.Literal(nid(), offset, False), A.Ident(nid(), offset, inp), call, macro="sortBy")
    if name in ("optMap", "optFlatMap") and n == 2:
        var = _simple(args[0], "optMap() variable name must be a simple identifier" if name == "optMap"
                      else "optFlatMap() variable name must be a simple identifier")
        # cel-go: target.hasValue() ? optional.of(cel.bind(var, target.value(), expr)) : optional.none()
        value = A.Call(nid(), offset, "value", [], target)
        bound = A.Comprehension(nid(), offset, "#unused", A.ListLit(nid(), offset, []), var, value,
                                A.Literal(nid(), offset, False), A.Ident(nid(), offset, var), args[1], macro="cel.bind")
        then: A.Expr = A.Call(nid(), offset, "optional.of", [bound]) if name == "optMap" else bound
        return A.Call(nid(), offset, "_?_:_", [A.Call(nid(), offset, "hasValue", [], target), then,
                                              A.Call(nid(), offset, "optional.none", [])])
    return None


def _quantifier(name: str, target: A.Expr, var: str, pred: A.Expr, offset: int, nid: Callable[[], int],
                var2: str = "") -> A.Expr:
    accu = lambda: A.Ident(nid(), offset, _ACCU)  # noqa: E731 - a fresh node each time
    if name == "all":
        init: A.Expr = A.Literal(nid(), offset, True)
        cond: A.Expr = A.Call(nid(), offset, "@not_strictly_false", [accu()])
        step: A.Expr = A.Call(nid(), offset, "_&&_", [accu(), pred])
        result: A.Expr = accu()
    elif name == "exists":
        init = A.Literal(nid(), offset, False)
        cond = A.Call(nid(), offset, "@not_strictly_false", [A.Call(nid(), offset, "!_", [accu()])])
        step = A.Call(nid(), offset, "_||_", [accu(), pred])
        result = accu()
    else:
        init = A.Literal(nid(), offset, 0)
        cond = A.Literal(nid(), offset, True)
        step = A.Call(nid(), offset, "_?_:_", [pred, A.Call(nid(), offset, "_+_", [accu(), A.Literal(nid(), offset, 1)]), accu()])
        result = A.Call(nid(), offset, "_==_", [accu(), A.Literal(nid(), offset, 1)])
    return A.Comprehension(nid(), offset, var, target, _ACCU, init, cond, step, result, iter_var2=var2,
                           macro=name if not var2 else name + "2")


def _fold(nid: Callable[[], int], offset: int, var: str, rng: A.Expr, init: A.Expr, cond: A.Expr, step: A.Expr,
          macro: str) -> A.Expr:
    return A.Comprehension(nid(), offset, var, rng, _ACCU, init, cond, step, A.Ident(nid(), offset, _ACCU), macro=macro)


def _append(nid: Callable[[], int], offset: int, e: A.Expr) -> A.Expr:
    return A.Call(nid(), offset, "_+_", [A.Ident(nid(), offset, _ACCU), A.ListLit(nid(), offset, [e])])


def _simple(e: A.Expr, message: str = "argument must be a simple name") -> str:
    if isinstance(e, A.Ident) and not e.name.startswith("."):
        return e.name
    raise MacroError(message, _offset(e))


def _offset(e: A.Expr) -> int:
    return e.offset
