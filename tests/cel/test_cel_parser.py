"""Parser: syntax, optional syntax, macros, limits and error offsets."""
from __future__ import annotations

import pytest

from dralint.cel import ast as A
from dralint.cel.parser import ParseError, parse
from dralint.cel.values import Uint


def test_precedence_and_balancing() -> None:
    root = parse("a || b && c == 1 + 2 * 3").root
    assert isinstance(root, A.Call) and root.function == "_||_"
    rhs = root.args[1]
    assert rhs.function == "_&&_" and rhs.args[1].function == "_==_"
    assert rhs.args[1].args[1].function == "_+_"


def test_long_and_chain_is_balanced() -> None:
    root = parse(" && ".join(["true"] * 1024)).root

    def depth(e: A.Expr) -> int:
        return 1 + max((depth(c) for c in A.children(e)), default=0)
    assert depth(root) <= 12


@pytest.mark.parametrize("src,value", [
    ("1", 1), ("-9223372036854775808", -(2**63)), ("0x1F", 31), ("1u", Uint(1)), ("1.5e3", 1500.0),
    ("'a\\n'", "a\n"), ('r"a\\n"', "a\\n"), ('"""x\ny"""', "x\ny"), ("b'\\xff'", b"\xff"), ('"\\u00e9"', "é"),
    ("true", True), ("null", None),
])
def test_literals(src: str, value: object) -> None:
    root = parse(src).root
    assert isinstance(root, A.Literal) and root.value == value and type(root.value) is type(value)


@pytest.mark.parametrize("src,message,offset", [
    ("?!", "Syntax error", 0),
    ("1 +", "Syntax error: mismatched input '<EOF>'", 3),
    ("a.b(", "Syntax error", 4),
    ("if", "reserved identifier: if", 0),
    ("9223372036854775808", "invalid int literal", 0),
    ("1 # 2", "token recognition error at: '#'", 2),
    ("has(a)", "invalid argument to has() macro", 0),
    ("[1].all(1, true)", "argument must be a simple name", 8),
    ("[1].all(x, x, true)", "duplicate variable name: x", 11),
])
def test_errors(src: str, message: str, offset: int) -> None:
    with pytest.raises(ParseError) as info:
        parse(src)
    assert message in info.value.message
    assert info.value.offset == offset


def test_optional_syntax() -> None:
    root = parse('m.?a.orValue(1)').root
    assert root.target.function == "_?._"
    assert parse("[?x, 1]").root.optional_indices == frozenset({0})
    assert parse("m[?k]").root.function == "_[?_]"
    assert parse('{?"a": x}').root.entries[0].optional


def test_macros_expand_like_cel_go() -> None:
    e = parse("l.exists(x, x > 1)").root
    assert isinstance(e, A.Comprehension) and e.accu_var == A.ACCU and e.macro == "exists"
    b = parse("cel.bind(v, 1, v + 1)").root
    assert isinstance(b, A.Comprehension) and b.accu_var == "v" and b.iter_var == "#unused"
    t = parse("m.transformMap(k, v, v + 1)").root
    assert t.iter_var2 == "v"
    h = parse("has(a.b)").root
    assert isinstance(h, A.Select) and h.test_only


def test_recursion_limit_is_an_error_not_a_crash() -> None:
    with pytest.raises(ParseError) as info:
        parse("(" * 10_000 + "1" + ")" * 10_000)
    assert "recursion limit exceeded" in info.value.message
    parse("(" * 100 + "1" + ")" * 100)
