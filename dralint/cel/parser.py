"""Hand-written recursive-descent CEL parser producing :mod:`dralint.cel.ast` trees.

It follows cel-go's grammar (``CEL.g4``) including the optional syntax ``.?f`` / ``[?k]`` /
``[?e]`` / ``{?k: v}``, folds a leading ``-`` into numeric literals, removes even runs of
``!``/``-``, balances ``&&``/``||`` chains as cel-go does, rejects reserved words, and stops at
cel-go's recursion limit (250 nested rule entries) so hostile input is rejected in linear time.
Macros are expanded here (see :mod:`dralint.cel.macros`).
"""
from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import cast

from . import ast as A
from .lexer import RESERVED, LexError, Token, tokenize
from .macros import MacroError, expand_macro
from .values import INT_MAX, INT_MIN, UINT_MAX, Uint

MAX_RECURSION = 250
# 250 nested levels take ~14 Python frames each here, and the checker and compiler recurse over
# the same depth; the default interpreter limit of 1000 is too low for that. Raised, never
# lowered, so concurrent callers cannot undercut each other.
RECURSION_FLOOR = 20_000
if sys.getrecursionlimit() < RECURSION_FLOOR:
    sys.setrecursionlimit(RECURSION_FLOOR)


class ParseError(ValueError):
    """A syntax error with the offset cel-go would point at."""

    def __init__(self, message: str, offset: int) -> None:
        super().__init__(message)
        self.message = message
        self.offset = offset


@dataclass
class _Ids:
    n: int = 0

    def next(self) -> int:
        self.n += 1
        return self.n


_REL = {"<": "_<_", "<=": "_<=_", ">": "_>_", ">=": "_>=_", "==": "_==_", "!=": "_!=_", "in": "@in"}
_ADD = {"+": "_+_", "-": "_-_"}
_MUL = {"*": "_*_", "/": "_/_", "%": "_%_"}


class _Parser:
    def __init__(self, src: str) -> None:
        self.src = src
        self.toks: list[Token] = tokenize(src)
        self.i = 0
        self.ids = _Ids()
        self.depth = 0

    # -- token helpers -------------------------------------------------------------------
    @property
    def tok(self) -> Token:
        return self.toks[self.i]

    def at(self, text: str) -> bool:
        t = self.toks[self.i]
        return t.kind == "op" and t.text == text

    def advance(self) -> Token:
        t = self.toks[self.i]
        if t.kind != "eof":
            self.i += 1
        return t

    def expect(self, text: str, what: str | None = None) -> Token:
        if not self.at(text):
            self.fail_here(what or f"'{text}'")
        return self.advance()

    def fail_here(self, expecting: str) -> None:
        t = self.tok
        if t.kind == "eof":
            raise ParseError(f"Syntax error: mismatched input '<EOF>' expecting {expecting}", t.start)
        raise ParseError(f"Syntax error: mismatched input '{t.text}' expecting {expecting}", t.start)

    def nid(self) -> int:
        return self.ids.next()

    def enter(self, amount: int = 1) -> None:
        # cel-go's ANTLR listener counts nested entries of each grammar rule; our depth is the
        # sum along the current path of nested expressions and operator/selector chains.
        self.depth += amount
        if self.depth > MAX_RECURSION:
            raise ParseError(f"expression recursion limit exceeded: {MAX_RECURSION}", self.tok.start)

    # -- grammar -------------------------------------------------------------------------
    def parse(self) -> A.Expr:
        e = self.expr()
        if self.tok.kind != "eof":
            t = self.tok
            raise ParseError(f"Syntax error: extraneous input '{t.text}' expecting <EOF>", t.start)
        return e

    def expr(self) -> A.Expr:
        self.enter()
        try:
            cond = self.logical("||")
            if self.at("?"):
                q = self.advance()
                then = self.logical("||")
                self.expect(":")
                other = self.expr()
                return A.Call(self.nid(), q.start, "_?_:_", [cond, then, other])
            return cond
        finally:
            self.depth -= 1

    def logical(self, op: str) -> A.Expr:
        sub = (lambda: self.logical("&&")) if op == "||" else self.relation
        terms = [sub()]
        offsets: list[int] = []
        while self.at(op):
            offsets.append(self.advance().start)
            terms.append(sub())
        if len(terms) == 1:
            return terms[0]
        return self._balance("_||_" if op == "||" else "_&&_", terms, offsets, 0, len(terms) - 1)

    def _balance(self, fn: str, terms: list[A.Expr], offsets: list[int], lo: int, hi: int) -> A.Expr:
        # cel-go builds a balanced tree for long &&/|| chains so depth stays logarithmic.
        if lo == hi:
            return terms[lo]
        mid = (lo + hi + 1) // 2
        left = self._balance(fn, terms, offsets, lo, mid - 1)
        right = self._balance(fn, terms, offsets, mid, hi)
        return A.Call(self.nid(), offsets[mid - 1], fn, [left, right])

    def _binary_chain(self, ops: dict[str, str], sub) -> A.Expr:
        lhs = sub()
        chain = 0
        try:
            while self.tok.kind == "op" and self.tok.text in ops:
                t = self.advance()
                chain += 1
                self.enter()
                rhs = sub()
                lhs = A.Call(self.nid(), t.start, ops[t.text], [lhs, rhs])
            return lhs
        finally:
            self.depth -= chain

    def relation(self) -> A.Expr:
        return self._binary_chain(_REL, self.addition)

    def addition(self) -> A.Expr:
        return self._binary_chain(_ADD, self.multiplication)

    def multiplication(self) -> A.Expr:
        return self._binary_chain(_MUL, self.unary)

    def unary(self) -> A.Expr:
        t = self.tok
        if self.at("!") or self.at("-"):
            op = t.text
            count = 0
            while self.at(op):
                self.advance()
                count += 1
            if op == "-" and self.tok.kind in ("int", "uint", "float") and self.toks[self.i - 1].start + 1 == self.tok.start:
                # '-5' is a negative literal; extra minus signs negate it further.
                count -= 1
                operand = self.literal(negative=True, start=self.toks[self.i - 1].start)
                operand = self.member_tail(operand)
            else:
                operand = self.member()
            if count % 2 == 0:
                return operand
            return A.Call(self.nid(), t.start, "!_" if op == "!" else "-_", [operand])
        return self.member()

    def member(self) -> A.Expr:
        return self.member_tail(self.primary())

    def member_tail(self, e: A.Expr) -> A.Expr:
        chain = 0
        try:
            while True:
                t = self.tok
                if self.at(".") or self.at(".?"):
                    optional = t.text == ".?"
                    self.advance()
                    name_tok = self.tok
                    if name_tok.kind != "ident":
                        self.fail_here("IDENTIFIER")
                    self.advance()
                    chain += 1
                    self.enter()
                    if not optional and self.at("("):
                        open_tok = self.advance()
                        args = self.expr_list(")")
                        self.expect(")")
                        e = self.make_call(name_tok.text, e, args, open_tok.start, name_tok.start)
                    elif optional:
                        e = A.Call(self.nid(), t.start, "_?._", [e, A.Literal(self.nid(), name_tok.start, name_tok.text)])
                    else:
                        e = A.Select(self.nid(), t.start, e, name_tok.text)
                elif self.at("[") or self.at("[?"):
                    optional = t.text == "[?"
                    self.advance()
                    chain += 1
                    self.enter()
                    index = self.expr()
                    self.expect("]")
                    e = A.Call(self.nid(), t.start, "_[?_]" if optional else "_[_]", [e, index])
                else:
                    return e
        finally:
            self.depth -= chain

    def primary(self) -> A.Expr:
        t = self.tok
        if t.kind == "ident" or self.at("."):
            leading_dot = False
            if self.at("."):
                self.advance()
                leading_dot = True
                if self.tok.kind != "ident":
                    self.fail_here("IDENTIFIER")
                t = self.tok
            name = t.text
            if name in RESERVED:
                raise ParseError(f"reserved identifier: {name}", t.start)
            self.advance()
            if self.at("("):
                open_tok = self.advance()
                args = self.expr_list(")")
                self.expect(")")
                return self.make_call(("." if leading_dot else "") + name, None, args, open_tok.start, t.start)
            if self.at("{"):
                return self.struct(("." if leading_dot else "") + name)
            return A.Ident(self.nid(), t.start, ("." if leading_dot else "") + name)
        if self.at("("):
            self.advance()
            e = self.expr()
            self.expect(")")
            return e
        if self.at("[") or self.at("[?"):
            # The lexer reads '[?' as one token; at the start of a list literal it is '[' then '?'.
            first_optional = self.advance().text == "[?"
            elems, opt = self.list_elements(first_optional)
            self.expect("]")
            return A.ListLit(self.nid(), t.start, elems, frozenset(opt))
        if self.at("{"):
            self.advance()
            entries = self.map_entries()
            self.expect("}")
            return A.MapLit(self.nid(), t.start, entries)
        if t.kind in ("int", "uint", "float", "str", "bytes") or self.at("true") or self.at("false") or self.at("null"):
            return self.literal()
        self.fail_here("{'[', '{', '(', '.', '-', '!', 'true', 'false', 'null', NUM_FLOAT, NUM_INT, NUM_UINT, STRING, BYTES, IDENTIFIER}")
        raise AssertionError("unreachable")

    def literal(self, negative: bool = False, start: int | None = None) -> A.Expr:
        t = self.advance()
        pos = t.start if start is None else start
        if t.kind == "int":
            v = cast("int | None", t.value)
            if v is None:
                raise ParseError("invalid int literal", pos)
            v = -v if negative else v
            if not INT_MIN <= v <= INT_MAX:
                raise ParseError("invalid int literal", pos)
            return A.Literal(self.nid(), pos, v)
        if t.kind == "uint":
            u = cast("int | None", t.value)
            if negative or u is None or u > UINT_MAX:
                raise ParseError("invalid uint literal", pos)
            return A.Literal(self.nid(), pos, Uint(u))
        if t.kind == "float":
            f = cast("float | None", t.value)
            if f is None:
                raise ParseError("invalid double literal", pos)
            return A.Literal(self.nid(), pos, -f if negative else f)
        if t.kind in ("str", "bytes"):
            return A.Literal(self.nid(), pos, t.value)
        return A.Literal(self.nid(), pos, {"true": True, "false": False, "null": None}[t.text])

    def expr_list(self, close: str) -> list[A.Expr]:
        args: list[A.Expr] = []
        if self.at(close):
            return args
        args.append(self.expr())
        while self.at(","):
            self.advance()
            args.append(self.expr())
        return args

    def list_elements(self, first_optional: bool) -> tuple[list[A.Expr], list[int]]:
        elems: list[A.Expr] = []
        opt: list[int] = []
        if first_optional:
            opt.append(0)
            elems.append(self.expr())
            if self.at(","):
                self.advance()
            else:
                return elems, opt
        while not self.at("]"):
            if self.at("?"):
                self.advance()
                opt.append(len(elems))
            elems.append(self.expr())
            if not self.at(","):
                break
            self.advance()
        return elems, opt

    def map_entries(self) -> list[A.MapEntry]:
        entries: list[A.MapEntry] = []
        while not self.at("}"):
            optional = False
            if self.at("?"):
                self.advance()
                optional = True
            k = self.expr()
            self.expect(":")
            v = self.expr()
            entries.append(A.MapEntry(k, v, optional))
            if not self.at(","):
                break
            self.advance()
        return entries

    def struct(self, name: str) -> A.Expr:
        start = self.expect("{").start
        fields: list[tuple[str, A.Expr, bool]] = []
        while not self.at("}"):
            optional = False
            if self.at("?"):
                self.advance()
                optional = True
            if self.tok.kind != "ident":
                self.fail_here("IDENTIFIER")
            fname = self.advance().text
            self.expect(":")
            fields.append((fname, self.expr(), optional))
            if not self.at(","):
                break
            self.advance()
        self.expect("}")
        return A.StructLit(self.nid(), start, name, fields)

    def make_call(self, name: str, target: A.Expr | None, args: list[A.Expr], open_offset: int, name_offset: int) -> A.Expr:
        # cel-go positions a call at its '(' token (member calls) or its name (global calls).
        offset = open_offset if target is not None else name_offset
        try:
            expanded = expand_macro(name, target, args, offset, self.nid)
        except MacroError as exc:
            raise ParseError(exc.message, exc.offset if exc.offset is not None else offset) from None
        if expanded is not None:
            return expanded
        return A.Call(self.nid(), offset, name, args, target)


def parse(src: str) -> A.ParsedExpr:
    """Parse ``src``; raises :class:`ParseError` (with an offset) on any syntax error."""
    try:
        p = _Parser(src)
        root = p.parse()
    except LexError as exc:
        raise ParseError(str(exc), exc.offset) from None
    return A.ParsedExpr(root, p.ids.n, src)
