"""The libraries' cost estimators: Kubernetes' ``library.CostEstimator`` (apiserver
``pkg/cel/library/cost.go``) and the per-overload estimators of cel-go's ``ext`` libraries
(lists version 3, sets).

Each function says what its Go counterpart says, including its quirks: ``join`` multiplies by an
element size that is unknown for a list literal, so ``["a", "b"].join("-")`` is unbounded; only
``_==_`` (not ``_!=_``) of Kubernetes types is O(1), so ``q != quantity("1")`` is unbounded too;
the parsing functions (``quantity``, ``semver``, ``ip``, ``cidr``, ...) cost a traversal of their
string argument.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from .cost import (MAXU, ONE, REGEX_FACTOR, STRING_FACTOR, AstNode, CallEstimate, CostEstimator, FunctionEstimator,
                   Range, add, factor, literal_int, mul, size_of)

MAX_FORMAT_SIZE = 64              # apiserver cel.MaxFormatSize
MAX_NAME_FORMAT_REGEX_SIZE = 128  # apiserver cel.MaxNameFormatRegexSize
_IP_BYTES: Range = (4, 16)        # an IPv4 or IPv6 address
_NOMINAL = frozenset({"masked", "prefixLength", "family", "isUnspecified", "isLoopback", "isLinkLocalMulticast",
                      "isLinkLocalUnicast", "isGlobalUnicast", "format.named", "sign", "asInteger", "isInteger",
                      "asApproximateFloat", "isGreaterThan", "isLessThan", "compareTo", "add", "sub", "major",
                      "minor", "patch", "getScheme", "getHostname", "getHost", "getPort", "getEscapedPath",
                      "getQuery"})
# Kubernetes types whose equality is O(1) (struct types in Go; IP and CIDR are opaque there).
_UNIT_EQUALITY = frozenset({"kubernetes.Quantity", "kubernetes.Semver", "net.IP", "net.CIDR"})


@dataclass(frozen=True)
class KubernetesEstimator:
    """``library.CostEstimator`` with the environment's size estimator behind it."""

    sizes: CostEstimator

    def estimate_size(self, node: AstNode) -> Range | None:
        return self.sizes.estimate_size(node)

    def _size(self, node: AstNode) -> Range:
        return size_of(self, node)

    def _element(self, lst: AstNode) -> AstNode | None:
        """``listElementNode``: a node for the list's items (path + ``@items`` when known)."""
        if not lst.type.params:
            return None
        path = lst.path + ("@items",) if lst.path is not None else None
        return AstNode(path, lst.type.params[0])

    def estimate_call_cost(self, function: str, overload_id: str, target: AstNode | None,
                           args: list[AstNode]) -> CallEstimate | None:
        """The Kubernetes estimate of one overload, without its arguments' cost; None when unknown."""
        f = function
        if f in _NOMINAL:
            return CallEstimate(ONE)
        if f in ("isSorted", "sum", "max", "min", "indexOf", "lastIndexOf") and target is not None:
            el = self._element(target)
            if el is None:  # a string: indexOf/lastIndexOf
                return CallEstimate(factor(self._size(target), STRING_FACTOR))
            el_cost = ONE
            if el.type.kind in ("string", "bytes"):
                el_cost = add(el_cost, factor(self._size(el), STRING_FACTOR))
            return CallEstimate(mul(self._size(target), el_cost))
        if f in ("url", "jsonpatch.escapeKey") and len(args) == 1:
            sz = self._size(args[0])
            return CallEstimate(factor(sz, STRING_FACTOR), sz)
        if f in ("lowerAscii", "upperAscii", "substring", "trim") and target is not None:
            sz = self._size(target)
            return CallEstimate(factor(sz, STRING_FACTOR), sz)
        if f == "replace" and target is not None and len(args) >= 2:
            return self._replace(target, args)
        if f == "split" and target is not None:
            sz = self._size(target)
            hi = sz[1]
            limit = literal_int(args[1]) if len(args) > 1 else None
            if limit is not None:
                hi = limit % 2**64  # Go's uint64(int64): a negative limit wraps around
            return CallEstimate(factor(sz, 2 * STRING_FACTOR), (0, hi))
        if f == "join" and target is not None:
            return self._join(target, args)
        if f in ("find", "findAll") and target is not None and args:
            sz = self._size(target)
            text = factor(add(sz, ONE), STRING_FACTOR)
            regex = factor(self._size(args[0]), REGEX_FACTOR)
            return CallEstimate(mul(text, regex), (0, sz[1]))
        if f in ("cidr", "isIP", "isCIDR", "quantity", "isQuantity", "semver", "isSemver") and args:
            return CallEstimate(factor(self._size(args[0]), STRING_FACTOR))  # parsing is a traversal
        if f == "ip" and (args or target is not None):
            if args and overload_id != "cidr_ip":
                return CallEstimate(factor(self._size(args[0]), STRING_FACTOR))
            return CallEstimate(ONE)  # a CIDR's ip() reads a field
        if f == "ip.isCanonical" and args:
            # parsed, then compared with the original: twice the traversal
            return CallEstimate(factor(self._size(args[0]), 2 * STRING_FACTOR))
        if f in ("containsIP", "containsCIDR") and target is not None and args:
            cost = factor(add(_IP_BYTES, _IP_BYTES), STRING_FACTOR)
            if f == "containsCIDR":
                cost = add(add(cost, factor(_IP_BYTES, STRING_FACTOR)), ONE)
            if overload_id in ("cidr_contains_ip_string", "cidr_contains_cidr_string"):
                cost = add(cost, factor(self._size(args[0]), STRING_FACTOR))
            return CallEstimate(cost)
        if f == "validate" and target is not None:
            sz = factor(self._size(args[0]), STRING_FACTOR)
            return CallEstimate(factor(sz, MAX_NAME_FORMAT_REGEX_SIZE * REGEX_FACTOR))
        if f == "_==_" and len(args) == 2:
            return self._equals(args[0], args[1])
        return None

    def _replace(self, target: AstNode, args: list[AstNode]) -> CallEstimate:
        sz = self._size(target)
        old = self._size(args[0])
        new = self._size(args[1])
        # the longest result: the smallest substrings replaced by the largest replacement
        if old[0] == 0:
            count_max = sz[1] + 1 if sz[1] < MAXU else sz[1]
            kept_max = sz[1]
        elif new[1] <= old[0]:
            count_max, kept_max = 0, sz[1]
        else:
            count_max, kept_max = _go_ceil_div(sz[1], old[0]), 0
        # the shortest result
        if old[1] == 0:
            count_min = sz[0] + 1 if sz[0] < MAXU else sz[0]
            kept_min = sz[0]
        elif old[1] <= new[0]:
            count_min, kept_min = 0, sz[0]
        else:
            count_min, kept_min = _go_ceil_div(sz[0], old[1]), 0
        result = add(mul((count_min, count_max), new), (kept_min, kept_max))
        return CallEstimate(factor(sz, 2 * STRING_FACTOR), result)

    def _join(self, target: AstNode, args: list[AstNode]) -> CallEstimate:
        size: Range = (0, 0)
        items = self._size(target)
        el = self._element(target)
        if el is not None:
            size = mul(items, self._size(el))
        if args:
            sep = self._size(args[0])
            separators = (max(items[0], 1) - 1, max(items[1], 1) - 1)
            size = add(size, mul(sep, separators))
        return CallEstimate(factor(size, STRING_FACTOR), size)

    def _equals(self, lhs: AstNode, rhs: AstNode) -> CallEstimate | None:
        t = lhs.type
        if t != rhs.type:
            return None
        if t.name in _UNIT_EQUALITY:
            return CallEstimate(ONE)
        if t.name == "kubernetes.NamedFormat":
            return CallEstimate(factor((1, MAX_FORMAT_SIZE), STRING_FACTOR))
        if t.name == "kubernetes.URL":
            # Kubernetes reads the right-hand size twice here; so do we
            size = rhs.computed_size if rhs.computed_size is not None else ONE
            return CallEstimate(factor((1, size[1]), STRING_FACTOR))
        return None


def _go_ceil_div(a: int, b: int) -> int:
    """``uint64(math.Ceil(float64(a) / float64(b)))`` with Go's float rounding.

    Past 2**64 Go's conversion is undefined (2**63 on amd64); every use multiplies it by a
    size of at least 2 and saturates, so MAXU gives the same estimate.
    """
    q = math.ceil(float(a) / float(b))
    return MAXU if q >= 2.0**64 else int(q)


# -- cel-go ext: lists (version 3) -------------------------------------------------------------
_LIST_CALL: Range = ONE  # callCostEstimate
_LIST_CREATE: Range = (10, 10)


def _list_call(cost_factor: float, size: Range) -> CallEstimate:
    """``estimateAllocatingListCall``: the result list's size times a factor, one call, one list."""
    return CallEstimate(add(add(factor(size, cost_factor), _LIST_CALL), _LIST_CREATE), size)


def _int_or(node: AstNode, default: int) -> int:
    """``nodeAsIntValue``: an int literal (negative as 0) or the default."""
    v = literal_int(node)
    if v is None:
        return default
    return max(v, 0)


def _slice(est: CostEstimator, target: AstNode | None, args: list[AstNode]) -> CallEstimate | None:
    if target is None or len(args) != 2:
        return None
    sz = size_of(est, target)
    start = _int_or(args[0], 0)
    end = _int_or(args[1], sz[1])
    n = (end - start) % 2**64  # uint64 subtraction
    return _list_call(1, (n, n))


def _range(est: CostEstimator, target: AstNode | None, args: list[AstNode]) -> CallEstimate | None:
    if target is not None or len(args) != 1:
        return None
    n = _int_or(args[0], MAXU)
    return _list_call(1, (n, n))


def _reverse(est: CostEstimator, target: AstNode | None, args: list[AstNode]) -> CallEstimate | None:
    if target is None or args:
        return None
    return _list_call(1, size_of(est, target))


def _flatten(est: CostEstimator, target: AstNode | None, args: list[AstNode]) -> CallEstimate | None:
    if target is None or len(args) > 1:
        return None
    depth = _int_or(args[0], MAXU) if args else 1
    return _list_call(float(depth), size_of(est, target))


def _distinct(est: CostEstimator, target: AstNode | None, args: list[AstNode]) -> CallEstimate | None:
    if target is None or args:
        return None
    sz = size_of(est, target)
    return _list_call(2.0, mul(sz, sz))


def _sort_cost(est: CostEstimator, node: AstNode, elem: str) -> CallEstimate:
    sz = size_of(est, node)
    cost_factor = 2.0 + (STRING_FACTOR if elem in ("string", "bytes") else 0.0)
    return _list_call(cost_factor, mul(sz, sz))


def _sort(elem: str) -> FunctionEstimator:
    def estimate(est: CostEstimator, target: AstNode | None, args: list[AstNode]) -> CallEstimate | None:
        if target is None or args:
            return None
        return _sort_cost(est, target, elem)
    return estimate


def _sort_by(elem: str) -> FunctionEstimator:
    def estimate(est: CostEstimator, target: AstNode | None, args: list[AstNode]) -> CallEstimate | None:
        if target is None or len(args) != 1:
            return None
        return _sort_cost(est, args[0], elem)  # the key list decides
    return estimate


# -- cel-go ext: sets --------------------------------------------------------------------------
def _sets(cost_factor: float) -> FunctionEstimator:
    def estimate(est: CostEstimator, target: AstNode | None, args: list[AstNode]) -> CallEstimate | None:
        if len(args) != 2:
            return None
        product = mul(size_of(est, args[0]), size_of(est, args[1]))
        return CallEstimate(add(factor(product, cost_factor), ONE))
    return estimate


COMPARABLE = ("int", "uint", "double", "bool", "duration", "timestamp", "string", "bytes")


def overload_estimators(libraries: frozenset[str]) -> dict[str, FunctionEstimator]:
    """The per-overload estimators the environment's cel-go ext libraries register."""
    out: dict[str, FunctionEstimator] = {}
    if "sets" in libraries:
        out["list_sets_contains_list"] = _sets(1)
        out["list_sets_intersects_list"] = _sets(1)
        # equivalence may need two m*n passes, one per direction
        out["list_sets_equivalent_list"] = _sets(2)
    if "ext_lists" in libraries:
        out.update({"list_slice": _slice, "list_flatten": _flatten, "list_flatten_int": _flatten,
                    "lists_range": _range, "list_reverse": _reverse, "list_distinct": _distinct})
        for t in COMPARABLE:
            out[f"list_{t}_sort"] = _sort(t)
            out[f"list_{t}_sortByAssociatedKeys"] = _sort_by(t)
    return out

