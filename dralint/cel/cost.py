"""Worst-case cost estimate: a function-by-function port of cel-go's ``checker/cost.go`` (v0.27).

The coster walks the checked AST once, in cel-go's order, tracking what cel-go tracks: a field
path per node (``device``, ``attributes``, ``@values``, ...) that a size estimator can resolve,
the computed size of call results and literals, the entry sizes of list and map literals, and
the local variables of comprehensions and ``cel.bind`` with their path and sizes. The libraries'
estimators (``cost_libs``) and the environment's size estimator (``cost_dra``) plug in exactly
where cel-go calls them.

Costs and sizes are ``(min, max)`` pairs of unsigned 64-bit numbers with saturating arithmetic;
cost factors are applied with float ``ceil`` as cel-go does, so the numbers match to the unit.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Protocol

from . import ast as A
from . import types as T
from .checker import CheckResult
from .values import Uint

MAXU = 2**64 - 1
STRING_FACTOR = 0.1   # common.StringTraversalCostFactor
REGEX_FACTOR = 0.25   # common.RegexStringLengthCostFactor
LIST_BASE = 10        # common.ListCreateBaseCost
MAP_BASE = 30         # common.MapCreateBaseCost
STRUCT_BASE = 40      # common.StructCreateBaseCost
_TWO_TO_64 = math.ldexp(1.0, 64)

Range = tuple[int, int]
UNKNOWN: Range = (0, MAXU)
ONE: Range = (1, 1)
ZERO: Range = (0, 0)
# parser.AccumulatorName and parser.HiddenAccumulatorName.
_ACCUMULATORS = ("__result__", A.ACCU)


def _add(a: int, b: int) -> int:
    return min(a + b, MAXU)


def _mul(a: int, b: int) -> int:
    return min(a * b, MAXU)


def _factor(x: int, f: float) -> int:
    xf = float(x)
    if xf > 0 and f > 0 and xf > MAXU / f:
        return MAXU
    c = math.ceil(xf * f)
    return MAXU if c >= _TWO_TO_64 else int(c)


def add(a: Range, b: Range) -> Range:
    """Saturating sum of two ranges (``Add``)."""
    return (_add(a[0], b[0]), _add(a[1], b[1]))


def mul(a: Range, b: Range) -> Range:
    """Saturating product of two ranges (``Multiply`` / ``MultiplyByCost``)."""
    return (_mul(a[0], b[0]), _mul(a[1], b[1]))


def factor(a: Range, f: float) -> Range:
    """``MultiplyByCostFactor``: each bound times ``f``, rounded up."""
    return (_factor(a[0], f), _factor(a[1], f))


def union(a: Range, b: Range) -> Range:
    """The smallest range covering both."""
    return (min(a[0], b[0]), max(a[1], b[1]))


@dataclass(frozen=True)
class AstNode:
    """What an estimator sees of a node: its field path, type, expression and computed size."""

    path: tuple[str, ...] | None
    type: T.Type
    expr: A.Expr | None = None
    computed_size: Range | None = None


@dataclass(frozen=True)
class CallEstimate:
    """A call's cost and, for strings, bytes, lists and maps, its result size."""

    cost: Range
    result_size: Range | None = None


class CostEstimator(Protocol):
    """cel-go's ``checker.CostEstimator``."""

    def estimate_size(self, node: AstNode) -> Range | None: ...

    def estimate_call_cost(self, function: str, overload_id: str, target: AstNode | None,
                           args: list[AstNode]) -> CallEstimate | None: ...


# A library's estimator for one overload (``checker.FunctionEstimator``).
FunctionEstimator = Callable[[CostEstimator, "AstNode | None", list[AstNode]], "CallEstimate | None"]


def size_of(estimator: CostEstimator, node: AstNode) -> Range:
    """The node's computed size, else the estimator's, else unknown (the libraries' ``estimateSize``)."""
    if node.computed_size is not None:
        return node.computed_size
    est = estimator.estimate_size(node)
    return est if est is not None else UNKNOWN


@dataclass(frozen=True)
class _Entry:
    """Container kind ("list"/"map") with the key (index) and value size of its entries."""

    kind: str
    key: Range
    val: Range


def _entry_union(a: _Entry | None, b: _Entry | None) -> _Entry | None:
    if a is None or b is None:
        return None
    return _Entry(a.kind, union(a.key, b.key), union(a.val, b.val))


@dataclass(frozen=True)
class _Local:
    path: tuple[str, ...] | None
    size: Range | None
    entry: _Entry | None


def is_scalar(t: T.Type) -> bool:
    """cel-go's ``isScalar``: types of a size known at compile time."""
    if t.kind in ("bool", "double", "duration", "int", "timestamp", "uint"):
        return True
    return T.is_optional(t) and bool(t.params) and is_scalar(t.params[0])


def _literal_size(e: A.Expr) -> Range | None:
    """``computeExprSize``: the exact size of literals and of list and map literals."""
    if isinstance(e, A.Literal):
        v = e.value
        if isinstance(v, (str, bytes)):
            return (len(v), len(v))
        return ONE
    if isinstance(e, A.ListLit):
        return (len(e.elements), len(e.elements))
    if isinstance(e, A.MapLit):
        return (len(e.entries), len(e.entries))
    return None


class Coster:
    """cel-go's ``coster`` over our checked AST."""

    def __init__(self, checked: CheckResult, estimator: CostEstimator,
                 overload_estimators: dict[str, FunctionEstimator], presence_test_cost: Range) -> None:
        self.checked = checked
        self.estimator = estimator
        self.overload_estimators = overload_estimators
        self.presence_test_cost = presence_test_cost
        self.paths: dict[int, tuple[str, ...] | None] = {}
        self.locals: dict[str, list[_Local]] = {}
        self.sizes: dict[int, Range] = {}
        self.entries: dict[int, _Entry] = {}

    # -- scopes ----------------------------------------------------------------------------
    def _push(self, name: str, path: tuple[str, ...] | None, size: Range | None, entry: _Entry | None) -> None:
        self.locals.setdefault(name, []).append(_Local(path, size, entry))

    def _pop(self, name: str) -> None:
        self.locals[name].pop()

    def _peek(self, name: str) -> _Local | None:
        stack = self.locals.get(name)
        return stack[-1] if stack else None

    def _container(self, rng: A.Expr, entry: _Entry | None) -> str:
        if entry is not None:
            return entry.kind
        return self.type_of(rng).kind

    def push_iter_key(self, name: str, rng: A.Expr) -> None:
        entry = self.entry_size(rng)
        sub = "@indices" if self._container(rng, entry) == "list" else "@keys"
        self._push(name, _extend(self.get_path(rng), sub), entry.key if entry else None, None)

    def push_iter_value(self, name: str, rng: A.Expr) -> None:
        entry = self.entry_size(rng)
        sub = "@items" if self._container(rng, entry) == "list" else "@values"
        self._push(name, _extend(self.get_path(rng), sub), entry.val if entry else None, None)

    def push_iter_single(self, name: str, rng: A.Expr) -> None:
        entry = self.entry_size(rng)
        if self._container(rng, entry) == "list":
            size, sub = (entry.val if entry else None), "@items"
        else:
            size, sub = (entry.key if entry else None), "@keys"
        self._push(name, _extend(self.get_path(rng), sub), size, None)

    def push_local(self, name: str, e: A.Expr) -> None:
        self._push(name, self.get_path(e), self.compute_size(e), self.entry_size(e))

    # -- node facts ------------------------------------------------------------------------
    def type_of(self, e: A.Expr) -> T.Type:
        return self.checked.type_of(e)

    def get_path(self, e: A.Expr) -> tuple[str, ...] | None:
        if isinstance(e, A.Ident):
            local = self._peek(e.name)
            if local is not None:
                return local.path
        return self.paths.get(e.id)

    def node(self, e: A.Expr) -> AstNode:
        path = self.get_path(e)
        if path and path[0] in _ACCUMULATORS:
            path = None  # only paths to root variables are given to estimators
        return AstNode(path, self.type_of(e), e, self.compute_size(e))

    def set_size(self, e: A.Expr, size: Range | None) -> None:
        if size is not None:
            self.sizes[e.id] = size

    def size_or_unknown(self, e: A.Expr) -> Range:
        size = self.compute_size(e)
        return size if size is not None else UNKNOWN

    def copy_sizes(self, dst: A.Expr, src: A.Expr) -> None:
        self.set_size(dst, self.compute_size(src))
        entry = self.entry_size(src)
        if entry is not None:
            self.entries[dst.id] = entry

    def compute_size(self, e: A.Expr) -> Range | None:
        if e.id in self.sizes:
            return self.sizes[e.id]
        lit = _literal_size(e)
        if lit is not None:
            return lit
        est = self.estimator.estimate_size(AstNode(self.get_path(e), self.type_of(e), e))
        if est is not None:
            self.sizes[e.id] = est
            return est
        if is_scalar(self.type_of(e)):
            return ONE
        if isinstance(e, A.Ident):
            local = self._peek(e.name)
            if local is not None and local.size is not None:
                return local.size
        return None

    def entry_size(self, e: A.Expr) -> _Entry | None:
        if e.id in self.entries:
            return self.entries[e.id]
        if isinstance(e, A.Ident):
            local = self._peek(e.name)
            if local is not None:
                return local.entry
        return None

    # -- costs -----------------------------------------------------------------------------
    def cost(self, e: A.Expr) -> Range:
        if isinstance(e, A.Literal):
            return ZERO
        if isinstance(e, A.Ident):
            local = self._peek(e.name)
            self.paths[e.id] = local.path if local is not None else (e.name,)
            return ONE
        if isinstance(e, A.Select):
            return self.cost_select(e)
        if isinstance(e, A.Call):
            return self.cost_call(e)
        if isinstance(e, A.ListLit):
            return self.cost_list(e)
        if isinstance(e, A.MapLit):
            return self.cost_map(e)
        if isinstance(e, A.StructLit):
            total = ZERO
            for _, v, _ in e.fields:
                total = add(total, self.cost(v))
            return add(total, (STRUCT_BASE, STRUCT_BASE))
        if isinstance(e, A.Comprehension):
            return self.cost_bind(e) if _is_bind(e) else self.cost_comprehension(e)
        return ZERO

    def cost_select(self, e: A.Select) -> Range:
        if e.test_only:
            return add(self.presence_test_cost, self.cost(e.operand))
        total = self.cost(e.operand)
        if self.type_of(e.operand).kind in ("map", "object", "typeparam"):
            total = add(total, ONE)
        self.paths[e.id] = _extend(self.get_path(e.operand), e.field)
        return total

    def cost_list(self, e: A.ListLit) -> Range:
        total = ZERO
        item: Range = (MAXU, 0) if e.elements else ZERO
        for x in e.elements:
            total = add(total, self.cost(x))
            item = union(item, self.size_or_unknown(x))
        self.entries[e.id] = _Entry("list", ONE, item)
        return add(total, (LIST_BASE, LIST_BASE))

    def cost_map(self, e: A.MapLit) -> Range:
        total = ZERO
        key: Range = (MAXU, 0) if e.entries else ZERO
        val: Range = key
        for ent in e.entries:
            total = add(total, self.cost(ent.key))
            total = add(total, self.cost(ent.value))
            key = union(key, self.size_or_unknown(ent.key))
            val = union(val, self.size_or_unknown(ent.value))
        self.entries[e.id] = _Entry("map", key, val)
        return add(total, (MAP_BASE, MAP_BASE))

    def cost_comprehension(self, e: A.Comprehension) -> Range:
        total = add(self.cost(e.iter_range), self.cost(e.accu_init))
        self.push_local(e.accu_var, e.accu_init)
        if e.iter_var2:
            self.push_iter_key(e.iter_var, e.iter_range)
            self.push_iter_value(e.iter_var2, e.iter_range)
        else:
            self.push_iter_single(e.iter_var, e.iter_range)
        loop = self.cost(e.loop_condition)
        step = self.cost(e.loop_step)
        self._pop(e.iter_var)
        if e.iter_var2:
            self._pop(e.iter_var2)
        total = add(total, self.cost(e.result))
        self._pop(e.accu_var)
        n = self.size_or_unknown(e.iter_range)
        total = add(total, mul(n, add(step, loop)))
        if isinstance(e.accu_init, A.Literal):
            self.set_size(e, self.compute_size(e.accu_init))
        elif isinstance(e.accu_init, (A.ListLit, A.MapLit)):
            self.set_size(e, n)
            step_entry = self.entry_size(e.loop_step)
            if step_entry is not None:
                self.entries[e.id] = step_entry
        return total

    def cost_bind(self, e: A.Comprehension) -> Range:
        # Binds are lazy: the empty iteration range still costs what an empty list costs.
        total = add(self.cost(e.iter_range), self.cost(e.accu_init))
        self.push_local(e.accu_var, e.accu_init)
        total = add(total, self.cost(e.result))
        self._pop(e.accu_var)
        self.copy_sizes(e, e.result)
        return total

    def cost_call(self, e: A.Call) -> Range:
        if e.function == "dyn" and e.target is None and len(e.args) == 1:
            # dyn() only turns type checking off: one unit plus its argument, sizes passed through.
            arg_cost = self.cost(e.args[0])
            self.copy_sizes(e, e.args[0])
            return add(ONE, arg_cost)
        arg_costs: list[Range] = []
        arg_nodes: list[AstNode] = []
        for a in e.args:
            arg_costs.append(self.cost(a))
            arg_nodes.append(self.node(a))
        refs = self.checked.refs.get(e.id, ())
        if not refs:
            return ZERO
        total = ZERO
        target: AstNode | None = None
        if e.target is not None and e.id not in self.checked.namespaced:
            total = self.cost(e.target)
            target = self.node(e.target)
        fn = self.checked.namespaced.get(e.id, e.function)
        fn_cost: Range = (MAXU, 0)
        result: Range | None = None
        for oid in refs:
            est = self.function_cost(e, fn, oid, target, arg_nodes, arg_costs)
            fn_cost = union(fn_cost, est.cost)
            if est.result_size is not None:
                result = est.result_size if result is None else union(result, est.result_size)
            if oid in ("index_list", "index_map") and e.args:
                entry = self.entry_size(e.args[0])
                result = entry.val if entry is not None else None
                self.paths[e.id] = _extend(self.get_path(e.args[0]), "@items" if oid == "index_list" else "@values")
            if result is None:
                result = self.compute_size(e)
        self.set_size(e, result)
        return add(total, fn_cost)

    def function_cost(self, e: A.Call, fn: str, oid: str, target: AstNode | None, args: list[AstNode],
                      arg_costs: list[Range]) -> CallEstimate:
        arg_sum = ZERO
        for c in arg_costs:
            arg_sum = add(arg_sum, c)
        lib = self.overload_estimators.get(oid)
        if lib is not None:
            est = lib(self.estimator, target, args)
            if est is not None:
                return CallEstimate(add(est.cost, arg_sum), est.result_size)
        est = self.estimator.estimate_call_cost(fn, oid, target, args)
        if est is not None:
            return CallEstimate(add(est.cost, arg_sum), est.result_size)
        return self.default_cost(e, oid, target, args, arg_costs, arg_sum)

    def default_cost(self, e: A.Call, oid: str, target: AstNode | None, args: list[AstNode],
                     arg_costs: list[Range], arg_sum: Range) -> CallEstimate:
        """The overloads cel-go itself knows the cost of; everything else is O(1)."""
        def size(n: AstNode) -> Range:
            return n.computed_size if n.computed_size is not None else UNKNOWN

        if oid == "string_format" and target is not None:
            return CallEstimate(add(factor(size(target), STRING_FACTOR), arg_sum))
        if oid == "string_to_bytes" and len(args) == 1:
            sz = size(args[0])
            return CallEstimate(add(factor(sz, STRING_FACTOR), arg_sum), (sz[0], _mul(sz[1], 4)))
        if oid == "bytes_to_string" and len(args) == 1:
            sz = size(args[0])
            return CallEstimate(add(factor(sz, STRING_FACTOR), arg_sum), (sz[0] // 4, sz[1]))
        if oid == "strings_quote" and len(args) == 1:
            sz = size(args[0])
            return CallEstimate(add(factor(sz, STRING_FACTOR), arg_sum),
                                (_add(sz[0], 2), _add(_mul(sz[1], 2), 2)))
        if oid in ("starts_with_string", "ends_with_string") and len(args) == 1:
            return CallEstimate(add(factor(size(args[0]), STRING_FACTOR), arg_sum))
        if oid == "in_list" and len(args) == 2:
            return CallEstimate(add(factor(size(args[1]), 1), arg_sum))
        if oid == "matches_string" and target is not None and len(args) == 1:
            text = factor(add(size(target), ONE), STRING_FACTOR)
            regex = factor(size(args[0]), REGEX_FACTOR)
            return CallEstimate(add(mul(text, regex), arg_sum))
        if oid == "contains_string" and target is not None and len(args) == 1:
            text = factor(size(target), STRING_FACTOR)
            sub = factor(size(args[0]), STRING_FACTOR)
            return CallEstimate(add(mul(text, sub), arg_sum))
        if oid in ("logical_or", "logical_and"):
            lhs, rhs = arg_costs
            # the minimum is the left side alone: && and || short-circuit
            return CallEstimate((lhs[0], add(lhs, rhs)[1]))
        if oid == "conditional":
            rs = union(size(args[1]), size(args[2]))
            entry = _entry_union(self.entry_size(e.args[1]), self.entry_size(e.args[2]))
            if entry is not None:
                self.entries[e.id] = entry
            return CallEstimate(add(arg_costs[0], union(arg_costs[1], arg_costs[2])), rs)
        if oid in ("add_string", "add_bytes", "add_list") and len(args) == 2:
            rs = add(size(args[0]), size(args[1]))
            entry = _entry_union(self.entry_size(e.args[0]), self.entry_size(e.args[1]))
            if entry is not None:
                self.entries[e.id] = entry
            if oid == "add_list":
                return CallEstimate(add(ONE, arg_sum), rs)  # O(1), tracked for its size
            return CallEstimate(add(factor(rs, STRING_FACTOR), arg_sum), rs)
        if oid in _SIZE_COMPARE:
            smallest = min(size(args[0])[1], size(args[1])[1])
            lo = 1 if smallest > 0 else 0
            return CallEstimate(add(factor((lo, smallest), STRING_FACTOR), arg_sum))
        return CallEstimate(add(ONE, arg_sum))


_SIZE_COMPARE = frozenset({
    "less_string", "greater_string", "less_equals_string", "greater_equals_string",
    "less_bytes", "greater_bytes", "less_equals_bytes", "greater_equals_bytes", "equals", "not_equals"})


def _extend(path: tuple[str, ...] | None, name: str) -> tuple[str, ...]:
    return (path or ()) + (name,)


def _is_bind(e: A.Comprehension) -> bool:
    """cel-go's ``isBind``: a fold over ``[]`` whose loop condition is the literal ``false``."""
    rng, cond = e.iter_range, e.loop_condition
    return (isinstance(rng, A.ListLit) and not rng.elements and isinstance(cond, A.Literal)
            and cond.value is False and e.accu_var != _ACCUMULATORS[0])


def literal_int(node: AstNode | None) -> int | None:
    """The value of an int literal node (not uint, not bool), else None."""
    if node is None or not isinstance(node.expr, A.Literal):
        return None
    v = node.expr.value
    if type(v) is int and not isinstance(v, Uint):
        return v
    return None


def estimate_cost(root: A.Expr, checked: CheckResult, estimator: CostEstimator,
                  overload_estimators: dict[str, FunctionEstimator], presence_test_cost: Range = ONE) -> Range:
    """cel-go's ``checker.Cost``: the ``(min, max)`` cost of a checked expression."""
    return Coster(checked, estimator, overload_estimators, presence_test_cost).cost(root)
