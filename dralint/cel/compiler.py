"""Compile a checked AST into nested Python closures, once per (expression, env).

A closure takes the *frame*: a list whose slot 0 is the remaining run-time cost budget, slot 1
the device view, and further slots the comprehension / ``cel.bind`` variables (assigned at
compile time, so no dictionaries are built per evaluation). CEL errors travel as raised
:class:`CelRuntimeError`; ``&&``, ``||``, ``@not_strictly_false`` and comprehension steps catch
them exactly where CEL treats errors as values. Hot shapes (``device.attributes["d"].id``,
comparisons with a literal) get fused closures, which keeps a typical selector at a few µs.
"""
from __future__ import annotations

from typing import Any, Callable, cast

from . import ast as A
from . import runtime as R
from . import types as T
from .checker import CheckResult
from .errors import CelRuntimeError, CostLimitExceeded
from .lib_ext import FUNCTIONS as EXT_FUNCTIONS
from .lib_k8s import FUNCTIONS as K8S_FUNCTIONS
from .lib_std import FUNCTIONS as STD_FUNCTIONS
from .values import Optional, TypeValue, Uint

Fn = Callable[[list], Any]

FUNCTIONS: dict[tuple[str, bool], Callable[..., Any]] = {**STD_FUNCTIONS, **EXT_FUNCTIONS, **K8S_FUNCTIONS}

# Calls on constant arguments that are cheap and bounded are evaluated at compile time.
_FOLDABLE = frozenset({"quantity", "semver", "isQuantity", "isSemver", "url", "isURL", "ip", "cidr", "isIP",
                       "isCIDR", "duration", "timestamp", "optional.none", "format.named", "string", "int",
                       "uint", "double", "bytes", "bool"})
_TYPE_VALUES = {"int": "int", "uint": "uint", "double": "double", "bool": "bool", "string": "string",
                "bytes": "bytes", "list": "list", "map": "map", "null_type": "null_type", "type": "type",
                "google.protobuf.Duration": "google.protobuf.Duration",
                "google.protobuf.Timestamp": "google.protobuf.Timestamp"}
_PRIMITIVE_EQ = frozenset({"int", "uint", "bool", "string", "bytes", "double"})
_GROWING = frozenset({"replace", "join", "format", "split", "findAll", "flatten", "strings.quote"})


class _ErrorValue:
    """An error stored in an accumulator / bound variable; re-raised when the variable is read."""

    __slots__ = ("error",)

    def __init__(self, error: CelRuntimeError) -> None:
        self.error = error


def _charge(f: list, amount: int) -> None:
    f[0] -= amount
    if f[0] < 0:
        raise CostLimitExceeded()


class _Compiler:
    def __init__(self, checked: CheckResult, variables: tuple[str, ...] = ()) -> None:
        self.checked = checked
        self.scopes: list[dict[str, tuple[int, bool]]] = []  # name -> (slot, may hold an error)
        # Declared variables (an admission policy's) take the slots after the device's.
        self.variables = {name: 2 + i for i, name in enumerate(variables)}
        self.slots = 2 + len(variables)

    def type_of(self, e: A.Expr) -> T.Type:
        return self.checked.type_of(e)

    def new_slot(self) -> int:
        self.slots += 1
        return self.slots - 1

    def compile(self, e: A.Expr) -> Fn:
        if isinstance(e, A.Literal):
            v = e.value
            return lambda f: v
        if isinstance(e, A.Ident):
            return self.ident(e)
        if isinstance(e, A.Select):
            return self.select(e)
        if isinstance(e, A.Call):
            return self.call(e)
        if isinstance(e, A.ListLit):
            return self.list_lit(e)
        if isinstance(e, A.MapLit):
            return self.map_lit(e)
        if isinstance(e, A.Comprehension):
            return self.comprehension(e)
        raise CelRuntimeError("unsupported expression")  # struct literals never pass the checker

    # -- identifiers and selection -------------------------------------------------------
    def ident(self, e: A.Ident) -> Fn:
        for scope in reversed(self.scopes):
            if e.name in scope:
                slot, may_err = scope[e.name]
                if not may_err:
                    return lambda f: f[slot]

                def read(f: list) -> Any:
                    v = f[slot]
                    if type(v) is _ErrorValue:
                        raise v.error
                    return v
                return read
        if e.name in self.variables:
            slot = self.variables[e.name]
            return lambda f: f[slot]
        if e.name == "device" and not self.variables:
            return lambda f: f[1]
        tv = TypeValue(_TYPE_VALUES.get(e.name, e.name))
        return lambda f: tv

    def select(self, e: A.Select) -> Fn:
        field = e.field
        if e.test_only:
            op = self.compile(e.operand)
            return lambda f: R.has_field(op(f), field)
        fused = self.fused_attribute(e)
        if fused is not None:
            return fused
        op = self.compile(e.operand)
        if self.type_of(e.operand).kind == "object":
            return lambda f: op(f)[field]

        def sel(f: list) -> Any:
            m = op(f)
            if type(m) is dict:
                try:
                    return m[field]
                except KeyError:
                    raise R.err(f"no such key: {field}") from None
            return R.select(m, field)
        return sel

    def fused_attribute(self, e: A.Select) -> Fn | None:
        """``device.attributes["dom"].id`` / ``device.capacity[...]`` in one closure."""
        idx = e.operand
        if not (isinstance(idx, A.Call) and idx.function == "_[_]" and len(idx.args) == 2):
            return None
        base, key = idx.args
        if not (isinstance(key, A.Literal) and type(key.value) is str and isinstance(base, A.Select)
                and not base.test_only and base.field in ("attributes", "capacity")
                and isinstance(base.operand, A.Ident) and base.operand.name == "device"
                and not any("device" in s for s in self.scopes)):
            return None
        outer, domain, field = base.field, key.value, e.field
        missing = f"no such key: {field}"

        def attr(f: list) -> Any:
            inner = f[1][outer].get(domain)
            if inner is not None:
                try:
                    return inner[field]
                except KeyError:
                    pass
            raise CelRuntimeError(missing)
        return attr

    # -- calls -----------------------------------------------------------------------------
    def call(self, e: A.Call) -> Fn:
        fn = self.checked.namespaced.get(e.id, e.function)
        target = None if e.id in self.checked.namespaced else e.target
        args = [self.compile(a) for a in e.args]
        special = self.operator(e, fn, args)
        if special is not None:
            return special
        impl = FUNCTIONS.get((fn, target is not None))
        if impl is None:
            message = f"no such overload: {fn}"

            def missing(f: list) -> Any:
                raise CelRuntimeError(message)
            return missing
        if target is not None:
            args = [self.compile(target)] + args
        folded = self.fold(fn, impl, e, target)
        if folded is not None:
            return folded
        if fn in _GROWING or fn == "lists.range":
            return self.guarded(fn, impl, args)
        if len(args) == 0:
            return lambda f: impl()
        if len(args) == 1:
            a0 = args[0]
            return lambda f: impl(a0(f))
        if len(args) == 2:
            a0, a1 = args
            return lambda f: impl(a0(f), a1(f))
        return lambda f: impl(*[a(f) for a in args])

    def fold(self, fn: str, impl: Callable[..., Any], e: A.Call, target: A.Expr | None) -> Fn | None:
        if fn not in _FOLDABLE or target is not None or not all(isinstance(a, A.Literal) for a in e.args):
            return None
        try:
            value = impl(*[a.value for a in e.args])  # type: ignore[union-attr]
        except CelRuntimeError as exc:
            error = exc

            def fail(f: list) -> Any:
                raise CelRuntimeError(error.message)
            return fail
        return lambda f: value

    def guarded(self, fn: str, impl: Callable[..., Any], args: list[Fn]) -> Fn:
        """Functions whose result can be far larger than their input charge its size first."""
        def run(f: list) -> Any:
            vals = [a(f) for a in args]
            if fn == "lists.range" and type(vals[0]) is int:
                _charge(f, max(vals[0], 0))
            elif fn == "replace" and len(vals) >= 3 and all(type(v) is str for v in vals[:3]):
                s, old, new = vals[:3]
                count = len(s) + 1 if old == "" else s.count(old)
                _charge(f, (len(s) + count * len(new)) // 10 + 1)
            else:
                _charge(f, sum(len(v) for v in vals if type(v) in (str, bytes, list, tuple)) // 10 + 1)
            return impl(*vals)
        return run

    def operator(self, e: A.Call, fn: str, args: list[Fn]) -> Fn | None:
        if fn == "_&&_":
            return _logical(args[0], args[1], False, fn)
        if fn == "_||_":
            return _logical(args[0], args[1], True, fn)
        if fn == "_?_:_":
            return _cond(*args)
        if fn == "@not_strictly_false":
            a0 = args[0]

            def nsf(f: list) -> Any:
                try:
                    v = a0(f)
                except CelRuntimeError:
                    return True
                return v if type(v) is bool else True
            return nsf
        if fn == "!_":
            a0 = args[0]

            def not_(f: list) -> Any:
                v = a0(f)
                if v is True:
                    return False
                if v is False:
                    return True
                raise R.no_overload("!_")
            return not_
        if fn in ("_==_", "_!=_"):
            return self.equality(e, fn == "_!=_", args)
        if fn in _BINARY:
            op = _BINARY[fn]
            a0, a1 = args
            if fn == "_+_":
                return _concat_guard(a0, a1)
            return lambda f: op(a0(f), a1(f))
        if fn == "-_":
            a0 = args[0]
            return lambda f: R.neg(a0(f))
        if fn == "@in":
            a0, a1 = args
            return lambda f: R.contains(a1(f), a0(f))
        if fn == "_[_]":
            return self.index(e, args)
        if fn == "_[?_]":
            a0, a1 = args
            return lambda f: R.opt_index(a0(f), a1(f))
        if fn == "_?._":
            a0 = args[0]
            name = cast(str, e.args[1].value)  # type: ignore[union-attr]
            return lambda f: R.opt_select(a0(f), name)
        return None

    def equality(self, e: A.Call, negate: bool, args: list[Fn]) -> Fn:
        a0, a1 = args
        lt, rt = self.type_of(e.args[0]), self.type_of(e.args[1])
        if lt == rt and lt.kind in _PRIMITIVE_EQ:
            if isinstance(e.args[1], A.Literal):
                c = e.args[1].value
                return (lambda f: a0(f) != c) if negate else (lambda f: a0(f) == c)
            return (lambda f: a0(f) != a1(f)) if negate else (lambda f: a0(f) == a1(f))
        if isinstance(e.args[1], A.Literal) and type(e.args[1].value) in (str, int, bool):
            c = e.args[1].value
            ct = type(c)

            def eq_lit(f: list) -> Any:
                v = a0(f)
                return (v == c) if type(v) is ct else R.equal(v, c)
            return (lambda f: not eq_lit(f)) if negate else eq_lit
        if negate:
            return lambda f: not R.equal(a0(f), a1(f))
        return lambda f: R.equal(a0(f), a1(f))

    def index(self, e: A.Call, args: list[Fn]) -> Fn:
        a0, a1 = args
        key = e.args[1]
        if isinstance(key, A.Literal) and type(key.value) is str:
            k = key.value
            missing = f"no such key: {k}"

            def idx_str(f: list) -> Any:
                m = a0(f)
                if type(m) is dict:
                    try:
                        return m[k]
                    except KeyError:
                        raise CelRuntimeError(missing) from None
                return R.index(m, k)
            return idx_str
        return lambda f: R.index(a0(f), a1(f))

    # -- aggregates --------------------------------------------------------------------------
    def list_lit(self, e: A.ListLit) -> Fn:
        elems = [self.compile(x) for x in e.elements]
        if not e.optional_indices:
            return lambda f: [x(f) for x in elems]
        opt = e.optional_indices

        def build(f: list) -> list:
            out = []
            for i, x in enumerate(elems):
                v = x(f)
                if i in opt:
                    if type(v) is not Optional:
                        raise R.no_overload("optional list element")
                    if v.present:
                        out.append(v.value)
                else:
                    out.append(v)
            return out
        return build

    def map_lit(self, e: A.MapLit) -> Fn:
        entries = [(self.compile(x.key), self.compile(x.value), x.optional) for x in e.entries]

        def build(f: list) -> dict:
            out: dict = {}
            for k, v, optional in entries:
                key = k(f)
                if type(key) not in (str, int, bool, Uint):
                    raise R.err(f"unsupported key type: {R.type_name(key)}")
                if R.lookup_key(out, key)[0]:
                    raise R.err(f"Failed with repeated key: {key}")
                val = v(f)
                if optional:
                    if type(val) is not Optional:
                        raise R.no_overload("optional map entry")
                    if not val.present:
                        continue
                    val = val.value
                out[key] = val
            return out
        return build

    def comprehension(self, e: A.Comprehension) -> Fn:
        rng = self.compile(e.iter_range)
        init = self.compile(e.accu_init)
        accu = self.new_slot()
        var = self.new_slot()
        var2 = self.new_slot() if e.iter_var2 else -1
        self.scopes.append({e.accu_var: (accu, True)})
        loop_scope = {e.iter_var: (var, False)}
        if e.iter_var2:
            loop_scope[e.iter_var2] = (var2, False)
        self.scopes.append(loop_scope)
        cond = self.compile(e.loop_condition)
        step = self.compile(e.loop_step)
        self.scopes.pop()
        result = self.compile(e.result)
        self.scopes.pop()
        per_iter = max(1, _step_cost(e.loop_condition) + _step_cost(e.loop_step))
        two = bool(e.iter_var2)

        if e.iter_var == "#unused" and isinstance(e.iter_range, A.ListLit) and not e.iter_range.elements:
            def bind(f: list) -> Any:
                try:
                    f[accu] = init(f)
                except CelRuntimeError as exc:
                    f[accu] = _ErrorValue(exc)
                return result(f)
            return bind

        def fold(f: list) -> Any:
            r = rng(f)
            t = type(r)
            if t is list or t is tuple:
                items: Any = enumerate(r) if two else r
            elif t is dict or t is R.DomainMap:
                items = list(r.items()) if two else list(r)
            else:
                raise CelRuntimeError(f"got '{R.go_type_name(r)}', expected iterable type")
            try:
                f[accu] = init(f)
            except CelRuntimeError as exc:
                f[accu] = _ErrorValue(exc)
            for x in items:
                f[0] -= per_iter
                if f[0] < 0:
                    raise CostLimitExceeded()
                if two:
                    f[var], f[var2] = x
                else:
                    f[var] = x
                try:
                    c = cond(f)
                except CelRuntimeError:
                    c = None
                if c is False:
                    break
                try:
                    f[accu] = step(f)
                except CelRuntimeError as exc:
                    f[accu] = _ErrorValue(exc)
            return result(f)
        return fold


def _step_cost(e: A.Expr) -> int:
    """Nodes evaluated per iteration, nested comprehensions excluded (they charge themselves).

    This approximates cel-go's actual cost (about one unit per non-literal node) from below,
    so the run-time limit never fires earlier than Kubernetes' would.
    """
    count = 0
    stack = [e]
    while stack:
        x = stack.pop()
        if isinstance(x, A.Comprehension):
            stack.append(x.iter_range)
            continue
        if not isinstance(x, A.Literal):
            count += 1
        stack.extend(A.children(x))
    return count


_BINARY: dict[str, Callable[[Any, Any], Any]] = {
    "_+_": R.add, "_-_": R.sub, "_*_": R.mul, "_/_": R.div, "_%_": R.mod,
    "_<_": R.less, "_<=_": R.less_eq, "_>_": R.greater, "_>=_": R.greater_eq,
}


def _concat_guard(a0: Fn, a1: Fn) -> Fn:
    def plus(f: list) -> Any:
        x, y = a0(f), a1(f)
        tx = type(x)
        if tx is int and type(y) is int:
            return R.add(x, y)
        if tx in (str, bytes, list, tuple) and type(y) in (str, bytes, list, tuple):
            # Concatenation can double a value per operator: charge its size before building it.
            _charge(f, (len(x) + len(y)) // 10)
        return R.add(x, y)
    return plus


def _logical(a0: Fn, a1: Fn, absorbing: bool, name: str) -> Fn:
    """``&&`` (``absorbing`` False) or ``||`` (True): the absorbing value on either side wins, even over
    an error or a non-bool on the other; otherwise an error is raised, left side first."""
    neutral = not absorbing

    def logical(f: list) -> Any:
        try:
            left = a0(f)
        except CelRuntimeError as exc:
            left = exc
        if left is absorbing:
            return absorbing
        try:
            right = a1(f)
        except CelRuntimeError as exc:
            right = exc
        if right is absorbing:
            return absorbing
        if left is neutral and right is neutral:
            return neutral
        for v in (left, right):
            if isinstance(v, CelRuntimeError):
                raise v
            if type(v) is not bool:
                raise R.no_overload(name)
        return neutral
    return logical


def _cond(c: Fn, a: Fn, b: Fn) -> Fn:
    def cond(f: list) -> Any:
        v = c(f)
        if v is True:
            return a(f)
        if v is False:
            return b(f)
        raise R.no_overload("_?_:_")
    return cond


def compile_program(root: A.Expr, checked: CheckResult, variables: tuple[str, ...] = ()) -> tuple[Fn, int]:
    """The root closure and the frame size it needs; ``variables`` (declared names, checked with the
    same declarations) are read from frame slots 2, 3, ... in this order."""
    c = _Compiler(checked, variables)
    fn = c.compile(root)
    return fn, c.slots
