"""Program instantiation: Kubernetes' regex library compiles a literal find/findAll pattern when
cel-go plans the program, so a bad one is refused with Go's regexp error; regex errors use Go's
words at run time too."""
from __future__ import annotations

import pytest

from dralint.cel import CelEnv, CelRuntimeError, compile_derived_attribute, compile_selector
from dralint.kube.releases import Release
from dralint.cel.regex import RegexError, compile_regex
from dralint.engine import Options, lint_text
from test_cel_eval import GPU

ENVS = [CelEnv(31), CelEnv(35), CelEnv(37, stored=True)]


@pytest.mark.parametrize("env", ENVS, ids=lambda e: f"1.{e.kube_minor}{'-stored' if e.stored else ''}")
@pytest.mark.parametrize("expr,message,offset", [
    ('device.driver.find("[") == ""', "missing closing ]: `[`", 19),
    ('device.driver.findAll(")") == []', "unexpected ): `)`", 22),
    ('device.driver.findAll("a**", 1) == []', "invalid nested repetition operator: `**`", 22),
    # the planner builds a call after its arguments: the first failure in post-order wins
    ('device.driver.find("(a").find("*") == ""', "missing closing ): `(a`", 19),
])
def test_a_bad_literal_find_pattern_fails_program_instantiation(expr: str, message: str, offset: int,
                                                                 env: CelEnv) -> None:
    compiled = compile_selector(expr, env)
    assert [(i.code, i.message, i.offset) for i in compiled.issues] == [
        ("program", f"program instantiation failed: error parsing regexp: {message}", offset)]
    assert not compiled.runnable


def test_type_errors_and_validators_come_before_program_instantiation() -> None:
    assert [i.code for i in compile_selector('device.driver.find("[") == 1', CelEnv(35)).issues] == ["check"]
    assert [i.code for i in compile_selector('device.driver.find("[")', CelEnv(35)).issues] == ["output-type"]
    expr = 'device.driver.find("[") == "" && device.driver.matches("[")'
    assert [i.message for i in compile_selector(expr, CelEnv(35)).issues] == ["invalid matches argument"]


def test_a_pattern_that_is_not_a_literal_fails_only_when_evaluated() -> None:
    compiled = compile_selector('device.driver.find(device.driver + "[") == ""', CelEnv(37, stored=True))
    assert compiled.ok
    with pytest.raises(CelRuntimeError) as exc:
        compiled.evaluate(GPU)
    assert exc.value.message == "Illegal regex: error parsing regexp: missing closing ]: `[`"  # Go names the class only


def test_matches_on_a_computed_pattern_gives_gos_error_at_run_time() -> None:
    compiled = compile_selector('device.driver.matches(device.driver + "(")', CelEnv(37, stored=True))
    with pytest.raises(CelRuntimeError) as exc:
        compiled.evaluate(GPU)
    assert exc.value.message == "error parsing regexp: missing closing ): `gpu.example.com(`"


@pytest.mark.parametrize("pattern,message", [
    ("[", "missing closing ]: `[`"),
    ("x[ab", "missing closing ]: `[ab`"),
    ("a(b", "missing closing ): `a(b`"),
    ("ab)c", "unexpected ): `ab)c`"),
    ("*", "missing argument to repetition operator: `*`"),
    ("a**", "invalid nested repetition operator: `**`"),
    ("\\q", "invalid escape sequence: `\\q`"),
    ("[z-a]", "invalid character class range: `z-a`"),
    ("a\\", "trailing backslash at end of expression: ``"),
    ("a{1001}", "invalid repeat count: `{1001}`"),
    ("(?P<>a)", "invalid named capture: `(?P<>`"),
    ("(?i", "invalid or unsupported Perl syntax: `(?i`"),
])
def test_regex_errors_in_gos_words(pattern: str, message: str) -> None:
    with pytest.raises(RegexError) as exc:
        compile_regex(pattern)
    assert str(exc.value) == f"error parsing regexp: {message}"


def test_the_finding_is_the_compile_rule_at_the_pattern() -> None:
    text = """apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata:
  name: gpus
spec:
  selectors:
  - cel:
      expression: 'device.driver.find("[") == ""'
"""
    found = [f for f in lint_text(text, Options(release=Release(35))) if f.category.value == "cel"]
    assert [(f.rule, f.message) for f in found] == [
        ("DRA501", "program instantiation failed: error parsing regexp: missing closing ]: `[` "
                   "(API server: Internal error)")]
    assert found[0].column == 39  # the pattern literal


def test_a_derived_attribute_is_refused_the_same_way() -> None:
    env = CelEnv(37, gates=frozenset({"DRAConsumableCapacity"}))
    assert [i.code for i in compile_derived_attribute('device.driver.find("[")', env).issues] == ["program"]


@pytest.mark.parametrize("expr,message,offset", [
    ('int("abc") == 1', "type conversion error from 'string' to 'int'", 0),
    ("uint(-1) == 1u", "unsigned integer overflow", 0),
    ("int(1e19) == 1", "integer overflow", 0),
    ('double("x") == 1.0', "type conversion error from 'string' to 'double'", 0),
    ('bool("maybe")', "type conversion error from 'string' to 'bool'", 0),
    ('string(b"\\xff") == ""', "invalid UTF-8 in bytes, cannot convert to string", 0),
    # a conversion folded before counts as a constant; dyn() is planned as a plain call
    ('uint(int("-5")) == 1u', "unsigned integer overflow", 0),
    ('duration(string(1)) > duration("1s")', "type conversion error from 'string' to 'google.protobuf.Duration'", 0),
    ('true || dyn(int("x")) == 1', "type conversion error from 'string' to 'int'", 12),
])
def test_a_conversion_of_a_constant_is_evaluated_when_the_program_is_built(expr: str, message: str,
                                                                           offset: int) -> None:
    issues = compile_selector(expr, CelEnv(36)).issues
    assert [(i.code, i.message, i.offset) for i in issues] == [
        ("program", f"program instantiation failed: {message}", offset)]


@pytest.mark.parametrize("expr", ['int("5") == 5', "int(string(1)) == 1", "int(-9223372036854775808) < 0",
                                  "int(device.driver) == 1", 'timestamp("2020-01-01T00:00:00Z") > timestamp(0)'])
def test_conversions_that_succeed_or_are_not_constant_compile(expr: str) -> None:
    assert compile_selector(expr, CelEnv(36)).ok


def test_a_timestamp_literal_out_of_range_is_refused_by_the_validator() -> None:
    # cel-go's validator evaluates timestamp() on any literal, an int as well as a string
    issues = compile_selector("timestamp(253402300800) > timestamp(0)", CelEnv(36)).issues
    assert [(i.code, i.message, i.offset) for i in issues] == [("check", "invalid timestamp argument", 10)]
