"""Static type checker: a port of the parts of cel-go's ``checker`` the DRA environment needs.

Type parameters are unified through a substitution mapping exactly like cel-go's
``isAssignable``/``isValidTypeSubstitution``/``mostGeneral``, so overload resolution, the
"found no matching overload" cases and the inferred output type agree with the API server.
Messages use cel-go's wording; each error carries the offset of the offending node.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

from . import ast as A
from . import types as T
from .decls import Overload, functions
from .env import EnvModel
from .values import Uint

_DYN_KINDS = ("dyn", "any")
_TYPE_IDENTS = {"int": T.INT, "uint": T.UINT, "double": T.DOUBLE, "bool": T.BOOL, "string": T.STRING,
                "bytes": T.BYTES, "list": T.list_of(T.DYN), "map": T.map_of(T.DYN, T.DYN),
                "null_type": T.NULL, "type": T.TYPE, "google.protobuf.Duration": T.DURATION,
                "google.protobuf.Timestamp": T.TIMESTAMP}
# Macros that come from a library; without it cel-go leaves them as (undeclared) calls.
_MACRO_LIBRARY = {"all2": "two_var", "exists2": "two_var", "exists_one2": "two_var", "existsOne2": "two_var",
                  "transformList": "two_var", "transformMap": "two_var", "transformMapEntry": "two_var",
                  "sortBy": "ext_lists", "cel.bind": "bind"}


@dataclass
class CheckResult:
    """Types per node id, overload ids per call, namespaced calls, and (offset, message) errors."""

    types: dict[int, T.Type] = field(default_factory=dict)
    refs: dict[int, tuple[str, ...]] = field(default_factory=dict)
    namespaced: dict[int, str] = field(default_factory=dict)
    errors: list[tuple[int, str]] = field(default_factory=list)

    def type_of(self, e: A.Expr) -> T.Type:
        return self.types.get(e.id, T.DYN)


class _Checker:
    def __init__(self, model: EnvModel, variables: Mapping[str, T.Type] | None = None) -> None:
        self.model = model
        self.variables = variables
        self.fns = functions(model.libraries)
        self.res = CheckResult()
        self.mappings: dict[str, T.Type] = {}
        self.scopes: list[dict[str, T.Type]] = []
        self.var_count = 0

    # -- helpers ---------------------------------------------------------------------------
    def error(self, e: A.Expr, message: str) -> None:
        self.res.errors.append((e.offset, message))

    def set_type(self, e: A.Expr, t: T.Type) -> None:
        self.res.types[e.id] = t

    def get_type(self, e: A.Expr) -> T.Type:
        return self.res.types.get(e.id, T.ERROR)

    def new_var(self) -> T.Type:
        self.var_count += 1
        return T.param(f"_var{self.var_count}")

    def lookup_ident(self, name: str) -> T.Type | None:
        for scope in reversed(self.scopes):
            if name in scope:
                return scope[name]
        if self.variables is not None:
            if name in self.variables:
                return self.variables[name]
        elif name == "device":
            return T.DEVICE
        if name in _TYPE_IDENTS:
            return T.type_of(_TYPE_IDENTS[name])
        return None

    # -- type algebra (cel-go checker/types.go) ------------------------------------------------
    def find(self, m: dict[str, T.Type], t: T.Type) -> T.Type | None:
        return m.get(t.name) if t.kind == "typeparam" else None

    def substitute(self, m: dict[str, T.Type], t: T.Type, to_dyn: bool) -> T.Type:
        seen = 0
        while t.kind == "typeparam" and t.name in m and seen < 1000:
            t = m[t.name]
            seen += 1
        if t.kind == "typeparam":
            return T.DYN if to_dyn else t
        if t.params:
            return T.Type(t.kind, t.name, tuple(self.substitute(m, p, to_dyn) for p in t.params))
        return t

    def occurs(self, m: dict[str, T.Type], var: T.Type, t: T.Type) -> bool:
        """Whether type variable ``var`` is referenced in ``t`` (cel-go's !notReferencedIn)."""
        stack = [t]
        steps = 0
        while stack and steps < 10000:
            steps += 1
            cur = stack.pop()
            if cur == var:
                return True
            if cur.kind == "typeparam":
                sub = m.get(cur.name)
                if sub is not None:
                    stack.append(sub)
                continue
            stack.extend(cur.params)
        return False

    def is_dyn(self, t: T.Type) -> bool:
        return t.kind in _DYN_KINDS

    def less_specific(self, t1: T.Type, t2: T.Type) -> bool:
        if self.is_dyn(t1) or t1.kind == "typeparam":
            return True
        if self.is_dyn(t2) or t2.kind == "typeparam":
            return False
        if t1.kind != t2.kind:
            return False
        if t1.kind in ("opaque", "list", "map"):
            if t1.name != t2.name or len(t1.params) != len(t2.params):
                return False
            return all(self.less_specific(a, b) for a, b in zip(t1.params, t2.params))
        if t1.kind == "type":
            return True
        return t1 == t2

    def most_general(self, t1: T.Type, t2: T.Type) -> T.Type:
        return t1 if self.less_specific(t1, t2) else t2

    def valid_sub(self, m: dict[str, T.Type], t1: T.Type, t2: T.Type) -> tuple[bool, bool]:
        if t1 == t2:
            return True, True
        sub = self.find(m, t2)
        if sub is not None:
            if t1 == sub:
                return True, True
            if self.assignable(m, t1, sub):
                new = self.most_general(t1, sub)
                if not self.occurs(m, t2, new):
                    m[t2.name] = new
                return True, True
            return False, True
        if not self.occurs(m, t2, t1):
            m[t2.name] = t1
            return True, False
        return False, False

    def assignable(self, m: dict[str, T.Type], t1: T.Type, t2: T.Type) -> bool:
        if t2.kind == "typeparam":
            valid, has_sub = self.valid_sub(m, t1, t2)
            if valid:
                return True
            if has_sub:
                return False
        if t1.kind == "typeparam":
            return self.valid_sub(m, t2, t1)[0]
        if t1.kind in ("dyn", "any", "error") or t2.kind in ("dyn", "any", "error"):
            return True
        if t1.kind == "null":
            return t2.kind in ("object", "any", "duration", "timestamp")
        if t2.kind == "null":
            return t1.kind in ("object", "any", "duration", "timestamp")
        if t1.kind == "type":
            return t2.kind == "type"
        if t1.kind in ("opaque", "list", "map"):
            return (t1.kind == t2.kind and t1.name == t2.name and len(t1.params) == len(t2.params)
                    and all(self.assignable(m, a, b) for a, b in zip(t1.params, t2.params)))
        return t1 == t2

    def is_assignable(self, t1: T.Type, t2: T.Type) -> bool:
        m = dict(self.mappings)
        if self.assignable(m, t1, t2):
            self.mappings = m
            return True
        return False

    def is_assignable_list(self, l1: list[T.Type], l2: list[T.Type]) -> bool:
        m = dict(self.mappings)
        if len(l1) == len(l2) and all(self.assignable(m, a, b) for a, b in zip(l1, l2)):
            self.mappings = m
            return True
        return False

    # -- traversal -------------------------------------------------------------------------
    def check(self, e: A.Expr) -> None:
        if isinstance(e, A.Literal):
            self.set_type(e, _literal_type(e.value))
        elif isinstance(e, A.Ident):
            self.check_ident(e)
        elif isinstance(e, A.Select):
            self.check_select(e)
        elif isinstance(e, A.Call):
            self.check_call(e)
        elif isinstance(e, A.ListLit):
            self.check_list(e)
        elif isinstance(e, A.MapLit):
            self.check_map(e)
        elif isinstance(e, A.StructLit):
            for _, v, _ in e.fields:
                self.check(v)
            self.error(e, f"undeclared reference to '{e.name}' (in container '')")
            self.set_type(e, T.ERROR)
        elif isinstance(e, A.Comprehension):
            self.check_comprehension(e)

    def check_ident(self, e: A.Ident) -> None:
        t = self.lookup_ident(e.name)
        if t is None:
            self.error(e, f"undeclared reference to '{e.name}' (in container '')")
            t = T.ERROR
        self.set_type(e, t)

    def check_select(self, e: A.Select) -> None:
        t = self.select_field(e, e.operand, e.field, optional=False)
        if e.test_only:
            t = T.BOOL
        self.set_type(e, self.substitute(self.mappings, t, False))

    def select_field(self, e: A.Expr, operand: A.Expr, fname: str, optional: bool) -> T.Type:
        self.check(operand)
        operand_type = self.substitute(self.mappings, self.get_type(operand), False)
        target = operand_type
        is_opt = T.is_optional(target)
        if is_opt:
            target = target.params[0]
        if target.kind == "map":
            result = target.params[1]
        elif target.kind == "object":
            ft = self.model.device_fields.get(fname) if target == T.DEVICE else None
            if ft is None:
                self.error(e, f"undefined field '{fname}'")
                result = T.ERROR
            else:
                result = ft
        elif target.kind == "typeparam":
            self.is_assignable(T.DYN, target)
            result = T.DYN
        else:
            if target.kind not in ("dyn", "any", "error"):
                self.error(e, f"type '{T.fmt(target)}' does not support field selection")
            result = T.DYN
        if is_opt or optional:
            return T.optional_of(result)
        return result

    def check_call(self, e: A.Call) -> None:
        fn = e.function
        if fn == "_?._":
            operand, fld = e.args
            if not (isinstance(fld, A.Literal) and isinstance(fld.value, str)):
                self.error(fld, "unsupported optional field selection")
                self.set_type(e, T.ERROR)
                return
            if not self.model.has("optional"):
                self.check(operand)
                self.error(e, "undeclared reference to '_?._' (in container '')")
                self.set_type(e, T.ERROR)
                return
            t = self.select_field(e, operand, fld.value, optional=True)
            self.set_type(e, self.substitute(self.mappings, t, False))
            self.res.refs[e.id] = ("select_optional_field",)
            return
        for a in e.args:
            self.check(a)
        if e.target is None:
            overloads = self.fns.get(fn)
            if overloads is None:
                self.error(e, f"undeclared reference to '{fn}' (in container '')")
                self.set_type(e, T.ERROR)
                return
            self.resolve(e, fn, overloads, None, e.args)
            return
        qual = A.qualified_name(e.target)
        if qual is not None and f"{qual}.{fn}" in self.fns:
            name = f"{qual}.{fn}"
            self.res.namespaced[e.id] = name
            self.resolve(e, name, self.fns[name], None, e.args)
            return
        self.check(e.target)
        overloads = self.fns.get(fn)
        if overloads is None:
            self.set_type(e, T.ERROR)
            self.error(e, f"undeclared reference to '{fn}' (in container '')")
            return
        self.resolve(e, fn, overloads, e.target, e.args)

    def resolve(self, e: A.Call, fn: str, overloads: tuple[Overload, ...], target: A.Expr | None,
                args: list[A.Expr]) -> None:
        arg_types = ([self.get_type(target)] if target is not None else []) + [self.get_type(a) for a in args]
        result: T.Type | None = None
        matched: list[str] = []
        for o in overloads:
            if o.member != (target is not None) or len(o.args) != len(arg_types):
                continue
            params = o.type_params
            if params:
                subs = {p: self.new_var() for p in sorted(params)}
                o_args = [self.substitute(subs, t, False) for t in o.args]
                o_result = self.substitute(subs, o.result, False)
            else:
                o_args, o_result = list(o.args), o.result
            if self.is_assignable_list(arg_types, o_args):
                matched.append(o.id)
                r = self.substitute(self.mappings, o_result, False)
                if result is None:
                    result = r
                elif not self.is_dyn(result) and r != result:
                    result = T.DYN
        if result is None:
            shown = [self.substitute(self.mappings, t, True) for t in arg_types]
            if target is not None:
                sig = f"{T.fmt(shown[0])}.({', '.join(T.fmt(t) for t in shown[1:])})"
            else:
                sig = f"({', '.join(T.fmt(t) for t in shown)})"
            self.error(e, f"found no matching overload for '{fn}' applied to '{sig}'")
            self.set_type(e, T.ERROR)
            return
        self.res.refs[e.id] = tuple(matched)
        self.set_type(e, result)

    def check_list(self, e: A.ListLit) -> None:
        elem: T.Type | None = None
        for i, x in enumerate(e.elements):
            self.check(x)
            t = self.get_type(x)
            if i in e.optional_indices:
                if T.is_optional(t):
                    t = t.params[0]
                elif t.kind not in ("dyn", "error"):
                    self.error(x, f"expected type 'optional_type' but found '{T.fmt(t)}'")
                    t = T.ERROR
            elem = self.join(elem, t)
        self.set_type(e, T.list_of(elem if elem is not None else self.new_var()))

    def check_map(self, e: A.MapLit) -> None:
        kt: T.Type | None = None
        vt: T.Type | None = None
        for ent in e.entries:
            self.check(ent.key)
            kt = self.join(kt, self.get_type(ent.key))
            self.check(ent.value)
            t = self.get_type(ent.value)
            if ent.optional:
                if T.is_optional(t):
                    t = t.params[0]
                elif t.kind not in ("dyn", "error"):
                    self.error(ent.value, f"expected type 'optional_type' but found '{T.fmt(t)}'")
                    t = T.ERROR
            vt = self.join(vt, t)
        self.set_type(e, T.map_of(kt if kt is not None else self.new_var(), vt if vt is not None else self.new_var()))

    def join(self, previous: T.Type | None, current: T.Type) -> T.Type:
        if previous is None:
            return current
        if self.is_assignable(previous, current):
            return self.most_general(previous, current)
        return T.DYN

    def check_comprehension(self, e: A.Comprehension) -> None:
        lib = _MACRO_LIBRARY.get(e.macro)
        if lib is not None and not self.model.has(lib):
            name = {"cel.bind": "bind"}.get(e.macro, e.macro.rstrip("2"))
            self.error(e, f"undeclared reference to '{name}' (in container '')")
            self.set_type(e, T.ERROR)
            return
        self.check(e.iter_range)
        self.check(e.accu_init)
        rng = self.substitute(self.mappings, self.get_type(e.iter_range), False)
        two = bool(e.iter_var2)
        var2: T.Type = T.DYN
        if rng.kind == "list":
            var = rng.params[0]
            if two:
                var, var2 = T.INT, rng.params[0]
        elif rng.kind == "map":
            var = rng.params[0]
            var2 = rng.params[1]
        elif rng.kind in ("dyn", "error", "typeparam"):
            self.is_assignable(T.DYN, rng)
            var = var2 = T.DYN
        else:
            self.error(e.iter_range, f"expression of type '{T.fmt(rng)}' cannot be range of a comprehension "
                                     "(must be list, map, or dynamic)")
            var = var2 = T.ERROR
        accu_type = self.get_type(e.accu_init)
        self.scopes.append({e.accu_var: accu_type})
        loop_scope = {e.iter_var: var}
        if two:
            loop_scope[e.iter_var2] = var2
        self.scopes.append(loop_scope)
        self.check(e.loop_condition)
        self.assert_type(e.loop_condition, T.BOOL)
        self.check(e.loop_step)
        self.assert_type(e.loop_step, accu_type)
        self.scopes.pop()
        self.check(e.result)
        self.scopes.pop()
        self.set_type(e, self.substitute(self.mappings, self.get_type(e.result), False))

    def assert_type(self, e: A.Expr, t: T.Type) -> None:
        actual = self.get_type(e)
        if not self.is_assignable(t, actual):
            self.error(e, f"expected type '{T.fmt(t)}' but found '{T.fmt(actual)}'")

    def finish(self) -> CheckResult:
        # cel-go substitutes every remaining free type variable with dyn at the end.
        for k, t in self.res.types.items():
            self.res.types[k] = self.substitute(self.mappings, t, True)
        self.res.errors.sort(key=lambda x: x[0])
        return self.res


def _literal_type(v: object) -> T.Type:
    if isinstance(v, bool):
        return T.BOOL
    if isinstance(v, Uint):
        return T.UINT
    if isinstance(v, int):
        return T.INT
    if isinstance(v, float):
        return T.DOUBLE
    if isinstance(v, str):
        return T.STRING
    if isinstance(v, bytes):
        return T.BYTES
    return T.NULL


def check(root: A.Expr, model: EnvModel, variables: Mapping[str, T.Type] | None = None) -> CheckResult:
    """Type-check ``root`` in ``model``; errors are in the result, never raised.

    ``variables`` declares the top-level identifiers instead of the selector's ``device`` (an
    admission policy's ``object``, ``request``, ...); None: the DRA selector environment.
    """
    c = _Checker(model, variables)
    c.check(root)
    return c.finish()
