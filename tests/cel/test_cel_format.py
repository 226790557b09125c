"""``<string>.format(<list>)``: cel-go's compile-time check (ext/formatting.go's
``stringFormatValidator``) and its run-time rendering, strings extension version 2."""
from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dralint.cel import CelEnv, CelRuntimeError, compile_selector
from dralint.kube.releases import Release
from dralint.cel.errors import issue_text
from dralint.cel.strformat import string_format
from dralint.cel.values import Duration, Uint
from dralint.engine import Options, lint_text
from dralint.kube.quantity import Quantity
from test_cel_eval import GPU

NEW = [CelEnv(34), CelEnv(35), CelEnv(36), CelEnv(37, stored=True)]
C = 'device.capacity["gpu.example.com"]'
_STRING_CLAUSE = ("error during formatting: string clause can only be used on strings, bools, bytes, ints, doubles, "
                  "maps, lists, types, durations, and timestamps, was given ")


def errors(expr: str, env: CelEnv) -> list[tuple[str, str, int | None]]:
    return [(i.code, i.message, i.offset) for i in compile_selector(expr, env).issues if i.severity == "error"]


# The format() mistakes the API server refuses at compile time: (expression, message, offset).
# Clause and count errors point at the call's "(", a wrong argument at the list element.
MISTAKES = [
    ('"gpu-%v".format([0]) == device.driver',
     'could not parse formatting clause: unrecognized formatting clause "v"', 15),
    ('"%10s".format(["a"]) == device.driver',
     'could not parse formatting clause: unrecognized formatting clause "1"', 13),
    ('"%d".format(["a"]) == device.driver',
     "error during formatting: decimal clause can only be used on integers, was given string", 13),
    (f'"%s".format([{C}.memory]) == "80Gi"', _STRING_CLAUSE + "kubernetes.Quantity", 47),  # the "." of .memory
    ('"gpu-%".format([1]) == device.driver', "unexpected end of string", 14),
    ('"gpu-%d".format([1, 2]) == device.driver',
     "too many arguments supplied to string.format (expected 1, got 2)", 15),
    ('"%s-%s".format(["a"]) == device.driver', "index 1 out of range", 14),
    ('"%.f".format([1.5]) == device.driver',
     "could not parse formatting clause: error while parsing precision: error while converting precision to "
     'integer: strconv.Atoi: parsing "": invalid syntax', 12),
    ('"%s".format([[1, semver("1.0.0")]]) == "x"', _STRING_CLAUSE + "kubernetes.Semver", 17),
    ('"%x".format([1.5]) == "x"',
     "error during formatting: only integers, byte buffers, and strings can be formatted as hex, was given double", 13),
    ('"%.2".format([1.5]) == "x"', "could not parse formatting clause: error while parsing precision: "
                                   "could not find end of precision specifier", 12),
]


@pytest.mark.parametrize("env", NEW, ids=lambda e: f"1.{e.kube_minor}{'-stored' if e.stored else ''}")
@pytest.mark.parametrize("expr,message,offset", MISTAKES)
def test_format_mistakes_are_refused_at_compile_time(expr: str, message: str, offset: int, env: CelEnv) -> None:
    assert errors(expr, env) == [("check", message, offset)]


def test_the_api_server_text_gives_line_and_column() -> None:
    issue = compile_selector('"gpu-%v".format([0]) == device.driver', CelEnv(35)).issues[0]
    assert issue_text('"gpu-%v".format([0]) == device.driver', issue).startswith(
        'ERROR: <input>:1:16: could not parse formatting clause: unrecognized formatting clause "v"')


@pytest.mark.parametrize("expr", [
    '"%s-%d".format(["a", 1]) == "a-1"',
    '"%.2f %e %b %o %x %X %%".format([1.5, 2.5, true, 8, "hi", b"hi"]) != ""',
    '"%f".format(["NaN"]) != ""',  # strings are taken by %f for NaN and the infinities
    '"%s %s %s %s %s".format([[1, 2], {"k": [1.5]}, null, duration("1s"), type(1)]) != ""',
    '"%d".format([dyn("a")]) != ""',  # dyn passes every clause: the error waits for run time
    'device.driver.format([1, 2]) == "x"',  # a receiver that is not a literal is not checked
    '"%s".format(device.driver.split(".")) != ""',  # nor a list that is not a literal
])
def test_well_formed_or_unchecked_calls_compile(expr: str) -> None:
    assert errors(expr, CelEnv(35)) == []


def test_a_call_is_checked_even_where_it_would_never_run() -> None:
    assert [code for code, _, _ in errors('true || "%d".format(["a"]) == ""', CelEnv(35))] == ["check"]


def test_each_call_reports_its_first_problem_in_column_order() -> None:
    expr = '"%d".format(["a"]) + "%z".format([1]) == "%s".format([1, 2])'
    assert [(m.split(":")[0], off) for _, m, off in errors(expr, CelEnv(36))] == [
        ("error during formatting", 13), ("could not parse formatting clause", 32),
        ("too many arguments supplied to string.format (expected 1, got 2)", 52)]


def test_an_attribute_of_type_any_fails_every_clause_before_list_type_attributes() -> None:
    expr = '"%s".format([device.attributes["gpu.example.com"].model]) == "a100"'
    assert errors(expr, CelEnv(34)) == [("check", _STRING_CLAUSE + "google.protobuf.Any", 49)]
    assert errors(expr, CelEnv(36, gates=frozenset({"DRAListTypeAttributes"}))) == []


def test_a_non_literal_receiver_crashes_the_cel_go_of_1_31_only() -> None:
    expr = 'device.driver.format([1]) == "x"'
    (code, message, offset), = errors(expr, CelEnv(31))
    assert (code, offset) == ("panic", 20) and "panics" in message
    assert errors(expr, CelEnv(32)) == []


def test_the_finding_is_the_cel_compile_rule_with_cel_gos_text() -> None:
    text = """apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata:
  name: gpus
spec:
  selectors:
  - cel:
      expression: '"gpu-%d".format(["a"]) == device.driver'
"""
    found = [f for f in lint_text(text, Options(release=Release(35))) if f.category.value == "cel"]
    assert [f.rule for f in found] == ["DRA501"]
    assert found[0].message.startswith(
        "compilation failed: ERROR: <input>:1:18: error during formatting: decimal clause can only be used on "
        "integers, was given string")


# -- run time --------------------------------------------------------------------------------

@pytest.mark.parametrize("fmt,args,expected", [
    ("%s-%d", ["a", 5], "a-5"),
    ("%d", [Uint(5)], "5"),
    ("%f", [1.0], "1.000000"),
    ("%.2f", [1234.5], "1,234.50"),  # the en-US printer groups digits
    ("%.0f", [2.5], "2"),
    ("%.10f", [0.1], "0.1000000000"),
    ("%f", ["NaN"], "NaN"),
    ("%f", ["-Infinity"], "-∞"),
    ("%e", [1052.032911275], "1.052033\u202f×\u202f10⁰³"),
    ("%e", [-0.00012], "-1.200000\u202f×\u202f10⁻⁰⁴"),
    ("%b", [5], "101"),
    ("%b", [True], "1"),
    ("%o", [8], "10"),
    ("%x", [255], "ff"),
    ("%x", [-255], "-ff"),
    ("%X", ["hi"], "6869"),
    ("%x", [b"\x01\xff"], "01ff"),
    ("%s", [1.5], "1.5"),
    ("%s", [float("inf")], "+Inf"),
    ("%s", [None], "null"),
    ("%s", [Duration(60 * 10**9)], "60s"),
    ("%s", [[1, "a", 1.5, b"x", {"k": 2}]], '[1, "a", 1.500000, b"x", {"k":2}]'),
    ("%s", [{2: "b", 1: [1.0]}], '{1:[1.000000], 2:"b"}'),
    ("100%% %s", ["ok"], "100% ok"),
])
def test_run_time_rendering(fmt: str, args: list, expected: str) -> None:
    assert string_format(fmt, args) == expected


@pytest.mark.parametrize("fmt,args,message", [
    ("%d", ["a"], "error during formatting: decimal clause can only be used on integers, was given string"),
    ("%s", [Quantity.parse("1Gi")], _STRING_CLAUSE + "kubernetes.Quantity"),
    ("%s %s", [1], "index 1 out of range"),
    ("%", [1], "unexpected end of string"),
    ("%z", [1], 'could not parse formatting clause: unrecognized formatting clause "z"'),
    ("%f", ["1.5"], "error during formatting: fixed-point clause can only be used on doubles, was given string"),
])
def test_run_time_errors(fmt: str, args: list, message: str) -> None:
    with pytest.raises(CelRuntimeError) as exc:
        string_format(fmt, args)
    assert exc.value.message == message


def test_an_unchecked_call_fails_when_evaluated() -> None:
    compiled = compile_selector('(device.driver + "%d").format(["a"]) == "x"', CelEnv(37, stored=True))
    assert compiled.ok
    with pytest.raises(CelRuntimeError, match="decimal clause can only be used on integers, was given string"):
        compiled.evaluate(GPU)


def test_a_checked_call_evaluates() -> None:
    compiled = compile_selector('"%s-%d".format([device.driver, 3]) == "gpu.example.com-3"',
                                CelEnv(37, stored=True))
    assert compiled.ok and compiled.evaluate(GPU) is True


# -- properties ------------------------------------------------------------------------------

_FORMATS = st.text(alphabet="%.0123456789sdfebxXovz- é", max_size=16)
_ARGS = st.lists(st.sampled_from(['"a"', "1", "-2", "1u", "1.5", "true", "null", "b'x'", '"NaN"', "[1, 2]",
                                  '{"k": 1}', "duration('1s')", 'quantity("1")', 'semver("1.0.0")', "dyn(1)",
                                  "device.driver", "type(1)"]), max_size=4)
_SETTINGS = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow])


@settings(max_examples=200, **_SETTINGS)
@given(_FORMATS, _ARGS, st.sampled_from([CelEnv(31), CelEnv(35), CelEnv(37, stored=True)]))
def test_random_format_calls_never_crash_the_checker_or_the_evaluator(fmt: str, args: list[str], env: CelEnv) -> None:
    literal = '"' + fmt.replace("\\", "\\\\").replace('"', '\\"') + '"'
    expr = f'{literal}.format([{", ".join(args)}]).size() >= 0'
    compiled = compile_selector(expr, env)
    assert all(i.code in ("check", "cost") for i in compiled.issues), compiled.issues
    assert all(i.offset is None or 0 <= i.offset < len(expr) for i in compiled.issues)
    if compiled.runnable:
        try:
            assert compiled.evaluate(GPU) is True
        except CelRuntimeError as exc:
            assert "internal evaluation error" not in exc.message, (expr, exc.message)


@settings(max_examples=200, **_SETTINGS)
@given(_FORMATS, st.lists(st.one_of(st.integers(-2**63, 2**63 - 1), st.floats(), st.text(max_size=4), st.booleans(),
                                   st.none(), st.binary(max_size=3)), max_size=4))
def test_random_formats_render_or_fail_with_a_cel_error(fmt: str, args: list) -> None:
    try:
        assert isinstance(string_format(fmt, args), str)
    except CelRuntimeError as exc:
        assert exc.message
