"""Worst-case cost estimate: cel-go's ``checker/cost.go`` with Kubernetes' library estimator and
the DRA size estimator (docs/cel.md §1.7).

Costs and sizes are ``(min, max)`` pairs of unsigned 64-bit numbers with saturating arithmetic;
cost factors are applied with float ``ceil`` exactly as cel-go does, so the numbers match
Kubernetes' ``CompilationResult.MaxCost`` to the unit.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from . import ast as A
from . import types as T
from .checker import CheckResult
from .env import EnvModel

MAXU = 2**64 - 1
STRING_FACTOR = 0.1
REGEX_FACTOR = 0.25
LIST_BASE = 10
MAP_BASE = 30
STRUCT_BASE = 40
INCLUDES_SIZE = 48  # ResourceSliceMaxAttributeValuesPerDevice

Range = tuple[int, int]
UNKNOWN: Range = (0, MAXU)
_SCALARS = ("bool", "double", "duration", "int", "timestamp", "uint")
_K8S_EQ_TYPES = ("kubernetes.Quantity", "kubernetes.Semver", "kubernetes.URL", "net.IP", "net.CIDR",
                 "kubernetes.NamedFormat")


def _add(a: int, b: int) -> int:
    return min(a + b, MAXU)


def _mul(a: int, b: int) -> int:
    return min(a * b, MAXU)


def _factor(x: int, f: float) -> int:
    xf = float(x)
    if xf > 0 and f > 0 and xf > MAXU / f:
        return MAXU
    c = math.ceil(xf * f)
    return MAXU if c >= 2.0**64 else int(c)


def add(a: Range, b: Range) -> Range:
    return (_add(a[0], b[0]), _add(a[1], b[1]))


def mul(a: Range, b: Range) -> Range:
    return (_mul(a[0], b[0]), _mul(a[1], b[1]))


def factor(a: Range, f: float) -> Range:
    return (_factor(a[0], f), _factor(a[1], f))


def union(a: Range, b: Range) -> Range:
    return (min(a[0], b[0]), max(a[1], b[1]))


@dataclass(frozen=True)
class _Decl:
    """The DRA device declaration tree the size estimator walks (cel/compile.go)."""

    max: int
    fields: tuple[tuple[str, "_Decl"], ...] = ()
    key: "_Decl | None" = None
    elem: "_Decl | None" = None
    attribute_map: bool = False  # its values are attributes: any field name is an attribute ID

    def field(self, name: str) -> "_Decl | None":
        for k, v in self.fields:
            if k == name:
                return v
        return None


def _device_decl(model: EnvModel) -> _Decl:
    domain, ident, driver = _Decl(63), _Decl(32), _Decl(63)
    attr = _Decl(64)  # max(DeviceAttributeMaxValueLength 64, values per device 48)
    inner_attrs = _Decl(32, key=ident, elem=attr, attribute_map=True)
    outer_attrs = _Decl(32, key=domain, elem=inner_attrs)
    inner_cap = _Decl(32, key=ident, elem=_Decl(0))
    outer_cap = _Decl(32, key=domain, elem=inner_cap)
    # Kubernetes sizes against the newest device type whatever the env (compile.go: deviceType).
    return _Decl(0, fields=(("driver", driver), ("attributes", outer_attrs), ("capacity", outer_cap),
                            ("allowMultipleAllocations", _Decl(1))))


class _Coster:
    def __init__(self, checked: CheckResult, model: EnvModel) -> None:
        self.checked = checked
        self.device = _device_decl(model)
        self.paths: dict[int, tuple[str, ...]] = {}
        self.sizes: dict[int, Range] = {}
        self.iter_ranges: dict[str, list[A.Expr]] = {}
        self.local_vars: dict[str, list[A.Expr]] = {}

    def type_of(self, e: A.Expr) -> T.Type:
        return self.checked.type_of(e)

    # -- sizes -----------------------------------------------------------------------------
    def estimate_size(self, e: A.Expr) -> Range | None:
        path = self.paths.get(e.id)
        if not path or path[0] != "device":
            return None
        node: _Decl | None = self.device
        for name in path[1:]:
            if node is None:
                return None
            if name in ("@items", "@values"):
                node = node.elem
            elif name == "@keys":
                node = node.key
            else:
                f = node.field(name)
                if f is None:
                    if node.attribute_map:
                        node = node.elem
                        continue
                    return None
                node = f
        if node is None:
            return None
        return (0, node.max)

    def size(self, e: A.Expr) -> Range:
        if e.id in self.sizes:
            return self.sizes[e.id]
        computed = _computed_size(e)
        if computed is not None:
            return computed
        est = self.estimate_size(e)
        if est is not None:
            return est
        if self.type_of(e).kind in _SCALARS:
            return (1, 1)
        return UNKNOWN

    # -- costs -----------------------------------------------------------------------------
    def cost(self, e: A.Expr) -> Range:
        if isinstance(e, A.Literal):
            return (0, 0)
        if isinstance(e, A.Ident):
            return self.cost_ident(e)
        if isinstance(e, A.Select):
            return self.cost_select(e)
        if isinstance(e, A.Call):
            return self.cost_call(e)
        if isinstance(e, A.ListLit):
            total: Range = (0, 0)
            for x in e.elements:
                total = add(total, self.cost(x))
            return add(total, (LIST_BASE, LIST_BASE))
        if isinstance(e, A.MapLit):
            total = (0, 0)
            for ent in e.entries:
                total = add(add(total, self.cost(ent.key)), self.cost(ent.value))
            return add(total, (MAP_BASE, MAP_BASE))
        if isinstance(e, A.StructLit):
            total = (0, 0)
            for _, v, _ in e.fields:
                total = add(total, self.cost(v))
            return add(total, (STRUCT_BASE, STRUCT_BASE))
        if isinstance(e, A.Comprehension):
            if e.iter_var == "#unused" and isinstance(e.iter_range, A.ListLit) and not e.iter_range.elements:
                return self.cost_bind(e)
            return self.cost_comprehension(e)
        return (0, 0)

    def cost_ident(self, e: A.Ident) -> Range:
        ranges = self.iter_ranges.get(e.name)
        if ranges:
            rng = ranges[-1]
            kind = self.type_of(rng).kind
            base = self.paths.get(rng.id)
            if base is not None and kind == "list":
                self.paths[e.id] = base + ("@items",)
            elif base is not None and kind == "map":
                self.paths[e.id] = base + ("@keys",)
        elif self.local_vars.get(e.name):
            init = self.local_vars[e.name][-1]
            if init.id in self.paths:
                self.paths[e.id] = self.paths[init.id]
            known = self.sizes.get(init.id) or _computed_size(init)
            if known is not None:
                self.sizes[e.id] = known
        elif not e.name.startswith("@"):
            self.paths[e.id] = (e.name,)
        return (1, 1)

    def cost_select(self, e: A.Select) -> Range:
        total = self.cost(e.operand)
        if e.test_only:
            return total  # Kubernetes: presence tests cost nothing extra
        if self.type_of(e.operand).kind in ("map", "object", "typeparam"):
            total = add(total, (1, 1))
        base = self.paths.get(e.operand.id)
        if base is not None:
            self.paths[e.id] = base + (e.field,)
        return total

    def cost_bind(self, e: A.Comprehension) -> Range:
        total = add(self.cost(e.iter_range), self.cost(e.accu_init))
        self.local_vars.setdefault(e.accu_var, []).append(e.accu_init)
        total = add(total, self.cost(e.result))
        self.local_vars[e.accu_var].pop()
        return total

    def cost_comprehension(self, e: A.Comprehension) -> Range:
        total = add(self.cost(e.iter_range), self.cost(e.accu_init))
        pushed = [e.iter_var] + ([e.iter_var2] if e.iter_var2 else [])
        for v in pushed:
            self.iter_ranges.setdefault(v, []).append(e.iter_range)
        loop = self.cost(e.loop_condition)
        step = self.cost(e.loop_step)
        for v in pushed:
            self.iter_ranges[v].pop()
        total = add(total, self.cost(e.result))
        n = self.size(e.iter_range)
        self.sizes[e.id] = n
        return add(total, mul(n, add(step, loop)))

    def cost_call(self, e: A.Call) -> Range:
        args = list(e.args)
        arg_costs = [self.cost(a) for a in args]
        refs = self.checked.refs.get(e.id, ())
        if not refs:
            return (0, 0)
        total: Range = (0, 0)
        target = None if e.id in self.checked.namespaced else e.target
        if target is not None:
            total = add(total, self.cost(target))
        fn = self.checked.namespaced.get(e.id, e.function)
        best: Range | None = None
        result_size: Range | None = None
        for oid in refs:
            c, rs = self.function_cost(fn, oid, target, args, arg_costs)
            best = c if best is None else union(best, c)
            if rs is not None:
                result_size = rs if result_size is None else union(result_size, rs)
            if oid == "index_list" and args:
                base = self.paths.get(args[0].id)
                if base is not None:
                    self.paths[e.id] = base + ("@items",)
            elif oid == "index_map" and args:
                base = self.paths.get(args[0].id)
                if base is not None:
                    self.paths[e.id] = base + ("@values",)
        if result_size is not None:
            self.sizes[e.id] = result_size
        assert best is not None
        return add(total, best)

    def function_cost(self, fn: str, oid: str, target: A.Expr | None, args: list[A.Expr],
                      arg_costs: list[Range]) -> tuple[Range, Range | None]:
        arg_sum: Range = (0, 0)
        for c in arg_costs:
            arg_sum = add(arg_sum, c)
        k8s = self.k8s_cost(fn, oid, target, args)
        if k8s is not None:
            return add(k8s[0], arg_sum), k8s[1]
        if oid == "string_format" and target is not None:
            return add(factor(self.size(target), STRING_FACTOR), arg_sum), None
        if oid == "string_to_bytes":
            sz = self.size(args[0])
            return add(factor(sz, STRING_FACTOR), arg_sum), (sz[0], _mul(sz[1], 4))
        if oid == "bytes_to_string":
            sz = self.size(args[0])
            return add(factor(sz, STRING_FACTOR), arg_sum), sz
        if oid == "strings_quote":
            sz = self.size(args[0])
            return add(factor(sz, STRING_FACTOR), arg_sum), (_add(_mul(sz[0], 1), 2), _add(_mul(sz[1], 4), 2))
        if oid in ("starts_with_string", "ends_with_string") and target is not None:
            return add(factor(self.size(args[0]), STRING_FACTOR), arg_sum), None
        if oid == "in_list":
            return add(factor(self.size(args[1]), 1), arg_sum), None
        if oid == "matches_string" and target is not None:
            s = factor(add(self.size(target), (1, 1)), STRING_FACTOR)
            r = factor(self.size(args[0]), REGEX_FACTOR)
            return add(mul(s, r), arg_sum), None
        if oid == "contains_string" and target is not None:
            s = factor(self.size(target), STRING_FACTOR)
            sub = factor(self.size(args[0]), STRING_FACTOR)
            return add(mul(s, sub), arg_sum), None
        if oid in ("logical_or", "logical_and"):
            lhs, rhs = arg_costs
            return (lhs[0], add(lhs, rhs)[1]), None
        if oid == "conditional":
            rs = union(self.size(args[1]), self.size(args[2]))
            return add(arg_costs[0], union(arg_costs[1], arg_costs[2])), rs
        if oid in ("add_string", "add_bytes", "add_list"):
            lhs, rhs = self.size(args[0]), self.size(args[1])
            rs = (_add(lhs[0], rhs[0]), _add(lhs[1], rhs[1]))
            if oid == "add_list":
                return add((1, 1), arg_sum), rs
            return add(factor(rs, STRING_FACTOR), arg_sum), rs
        if oid in _SIZE_COMPARE:
            lhs, rhs = self.size(args[0]), self.size(args[1])
            smallest = min(lhs[1], rhs[1])
            lo = 1 if smallest > 0 else 0
            return add(factor((lo, smallest), STRING_FACTOR), arg_sum), None
        return add((1, 1), arg_sum), None

    def k8s_cost(self, fn: str, oid: str, target: A.Expr | None, args: list[A.Expr]) -> tuple[Range, Range | None] | None:
        """Kubernetes' library.CostEstimator plus DRA's includes (cost only, arguments excluded)."""
        if oid == "dra_includes_dyn_dyn" or oid == "list_includes":
            return (0, INCLUDES_SIZE), None
        if fn in ("isSorted", "sum", "max", "min", "indexOf", "lastIndexOf") and target is not None:
            tt = self.type_of(target)
            if tt.kind == "list":
                el: Range = (1, 1)
                if tt.params[0].kind in ("string", "bytes"):
                    el = add(el, factor(UNKNOWN, STRING_FACTOR))
                return mul(self.size(target), el), None
            if fn in ("indexOf", "lastIndexOf") and args:
                s = factor(self.size(target), STRING_FACTOR)
                sub = factor(self.size(args[0]), STRING_FACTOR)
                return mul(s, sub), None
        if fn == "url" and len(args) == 1:
            return factor(self.size(args[0]), STRING_FACTOR), None
        if fn in ("lowerAscii", "upperAscii", "substring", "trim") and target is not None:
            sz = self.size(target)
            return factor(sz, STRING_FACTOR), sz
        if fn == "replace" and target is not None and len(args) >= 2:
            return self._replace_cost(target, args)
        if fn == "split" and target is not None:
            sz = self.size(target)
            hi = sz[1]
            if len(args) > 1 and isinstance(args[1], A.Literal) and type(args[1].value) is int:
                hi = args[1].value if args[1].value >= 0 else MAXU
            return factor(sz, 2 * STRING_FACTOR), (0, hi)
        if fn == "join" and target is not None:
            list_size = self.size(target)
            sz: Range = (0, 0)
            if args:
                sep = self.size(args[0])
                sz = mul(sep, (max(list_size[0] - 1, 0), max(list_size[1] - 1, 0)))
            return factor(sz, STRING_FACTOR), sz
        if fn in ("find", "findAll") and target is not None and args:
            s = factor(self.size(target), STRING_FACTOR)
            r = factor(self.size(args[0]), REGEX_FACTOR)
            return mul(s, r), (0, self.size(target)[1])
        if fn in ("cidr", "isIP", "isCIDR", "ip", "semver", "isSemver", "quantity", "isQuantity") and target is None and args:
            return factor(self.size(args[0]), STRING_FACTOR), None
        if fn == "ip.isCanonical" and args:
            return factor(self.size(args[0]), 2 * STRING_FACTOR), None
        if fn in ("ip", "masked", "prefixLength", "family", "isUnspecified", "isLoopback", "isLinkLocalMulticast",
                  "isLinkLocalUnicast", "isGlobalUnicast") and target is not None:
            return (1, 1), None
        if fn in ("containsIP", "containsCIDR") and target is not None and args:
            arg_t = self.type_of(args[0])
            if arg_t.kind == "string":
                return factor(self.size(args[0]), STRING_FACTOR), None
            return (1, 1), None
        if fn in ("sign", "asInteger", "isInteger", "asApproximateFloat", "isGreaterThan", "isLessThan", "compareTo",
                  "add", "sub", "major", "minor", "patch", "format.named"):
            return (1, 1), None
        if fn == "validate" and target is not None and args:
            sz = self.size(args[0])
            return factor(sz, STRING_FACTOR), None
        if oid in ("equals", "not_equals") and len(args) == 2:
            a, b = self.type_of(args[0]), self.type_of(args[1])
            if a == b and a.kind == "opaque" and a.name in _K8S_EQ_TYPES:
                return (1, 1), None
        return None

    def _replace_cost(self, target: A.Expr, args: list[A.Expr]) -> tuple[Range, Range]:
        sz = self.size(target)
        old = self.size(args[0])
        new = self.size(args[1])
        if old[0] == 0:
            cnt_max = sz[1] + 1 if sz[1] < MAXU else sz[1]
            kept_max = sz[1]
        elif new[1] <= old[0]:
            cnt_max, kept_max = 0, sz[1]
        else:
            cnt_max, kept_max = math.ceil(sz[1] / old[0]) if sz[1] < MAXU else MAXU, 0
        if old[1] == 0:
            cnt_min = sz[0] + 1 if sz[0] < MAXU else sz[0]
            kept_min = sz[0]
        elif old[1] <= new[0]:
            cnt_min, kept_min = 0, sz[0]
        else:
            cnt_min, kept_min = math.ceil(sz[0] / old[1]), 0
        result = add(mul((cnt_min, min(cnt_max, MAXU)), new), (kept_min, kept_max))
        return factor(sz, 2 * STRING_FACTOR), result


_SIZE_COMPARE = frozenset({
    "less_string", "greater_string", "less_equals_string", "greater_equals_string",
    "less_bytes", "greater_bytes", "less_equals_bytes", "greater_equals_bytes", "equals", "not_equals"})


def _computed_size(e: A.Expr) -> Range | None:
    if isinstance(e, A.Literal):
        v = e.value
        if isinstance(v, str):
            return (len(v), len(v))
        if isinstance(v, bytes):
            return (len(v), len(v))
        return (1, 1)
    if isinstance(e, A.ListLit):
        return (len(e.elements), len(e.elements))
    if isinstance(e, A.MapLit):
        return (len(e.entries), len(e.entries))
    return None


def estimate(root: A.Expr, checked: CheckResult, model: EnvModel) -> Range:
    """The ``(min, max)`` cost estimate of a checked expression."""
    return _Coster(checked, model).cost(root)
