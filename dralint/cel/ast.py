"""A small cel-go-shaped abstract syntax tree for CEL expressions.

Macros are expanded by the parser, as cel-go does: ``has(a.f)`` becomes a test-only select,
``all``/``exists``/``map``/... become comprehensions, ``cel.bind`` a comprehension over an
empty list. Every node carries a parser-assigned ``id`` and the 0-based character offset of
the token it starts at, so checker errors can point at the right column.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Union

# Accumulator variable of expanded macros (cel-go's parser.AccumulatorName).
ACCU = "@result"


@dataclass(eq=False)
class Literal:
    """A constant: int, Uint, float, str, bytes, bool or None (null)."""

    id: int
    offset: int
    value: object


@dataclass(eq=False)
class Ident:
    id: int
    offset: int
    name: str


@dataclass(eq=False)
class Select:
    """``operand.field``; ``test_only`` marks the ``has()`` form."""

    id: int
    offset: int
    operand: "Expr"
    field: str
    test_only: bool = False


@dataclass(eq=False)
class Call:
    """A function call; operators are calls too (``_+_``, ``_[_]``, ``_?._``...)."""

    id: int
    offset: int
    function: str
    args: list["Expr"]
    target: "Expr | None" = None


@dataclass(eq=False)
class ListLit:
    id: int
    offset: int
    elements: list["Expr"]
    optional_indices: frozenset[int] = frozenset()


@dataclass(eq=False)
class MapEntry:
    key: "Expr"
    value: "Expr"
    optional: bool = False


@dataclass(eq=False)
class MapLit:
    id: int
    offset: int
    entries: list[MapEntry]


@dataclass(eq=False)
class StructLit:
    """``Name{field: value}``; there are no message types in the DRA environment."""

    id: int
    offset: int
    name: str
    fields: list[tuple[str, "Expr", bool]]


@dataclass(eq=False)
class Comprehension:
    """cel-go's fold: iterate ``iter_range`` with one or two variables into ``accu_var``."""

    id: int
    offset: int
    iter_var: str
    iter_range: "Expr"
    accu_var: str
    accu_init: "Expr"
    loop_condition: "Expr"
    loop_step: "Expr"
    result: "Expr"
    iter_var2: str = ""
    macro: str = ""  # which macro produced it ("all", "cel.bind", ...), for findings only


Expr = Union[Literal, Ident, Select, Call, ListLit, MapLit, StructLit, Comprehension]


@dataclass(frozen=True)
class ParsedExpr:
    """A parsed expression plus its node count (used to bound later passes)."""

    root: Expr
    node_count: int
    source: str = field(repr=False, default="")


def children(e: Expr) -> list[Expr]:
    """The direct sub-expressions of ``e`` in evaluation order."""
    if isinstance(e, Select):
        return [e.operand]
    if isinstance(e, Call):
        return ([e.target] if e.target is not None else []) + list(e.args)
    if isinstance(e, ListLit):
        return list(e.elements)
    if isinstance(e, MapLit):
        out: list[Expr] = []
        for ent in e.entries:
            out += [ent.key, ent.value]
        return out
    if isinstance(e, StructLit):
        return [v for _, v, _ in e.fields]
    if isinstance(e, Comprehension):
        return [e.iter_range, e.accu_init, e.loop_condition, e.loop_step, e.result]
    return []


def walk(root: Expr) -> list[Expr]:
    """All nodes, pre-order, without recursion (hostile inputs can be deep)."""
    out: list[Expr] = []
    stack = [root]
    while stack:
        e = stack.pop()
        out.append(e)
        stack.extend(reversed(children(e)))
    return out


def qualified_name(e: Expr) -> str | None:
    """'a.b.c' for an identifier/select chain (``a.b.c``), else None."""
    parts: list[str] = []
    while isinstance(e, Select) and not e.test_only:
        parts.append(e.field)
        e = e.operand
    if isinstance(e, Ident):
        parts.append(e.name)
        return ".".join(reversed(parts))
    return None
