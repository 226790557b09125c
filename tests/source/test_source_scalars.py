"""Scalar resolution: Kubernetes' values (sigs.k8s.io/yaml over goyaml.v2), and where PyYAML differs."""
from __future__ import annotations

import math

import pytest
import yaml

from dralint.source import load_text
from dralint.source.scalars import ScalarError, key_to_string, resolve_plain, to_json_value


def k8s(text: str):
    return to_json_value(resolve_plain(text))


# (plain scalar, Kubernetes value, PyYAML safe_load value)
DIFFERENCES = [
    ("y", True, "y"),
    ("Y", True, "Y"),
    ("n", False, "n"),
    ("N", False, "N"),
    ("1e3", 1000, "1e3"),
    ("1E-2", 0.01, "1E-2"),
    ("0o17", 15, "0o17"),
    ("08", 8, "08"),
    ("1:20", "1:20", 80),
    ("190:20:30", "190:20:30", 685230),
    ("2001-12-14", "2001-12-14", None),  # PyYAML: datetime.date
    ("1.0", 1, 1.0),
    ("1.", 1, 1.0),
    ("-0.0", 0, -0.0),
    ("0b-1", -1, "0b-1"),
    ("1e400", "1e400", "1e400"),
    ("12345678901234567890123", 1.2345678901234568e22, 12345678901234567890123),
]

SAME = [
    ("yes", True), ("Yes", True), ("YES", True), ("on", True), ("ON", True), ("true", True), ("True", True),
    ("no", False), ("off", False), ("false", False), ("FALSE", False),
    ("~", None), ("null", None), ("Null", None), ("NULL", None), ("", None),
    ("0x1F", 31), ("017", 15), ("0b101", 5), ("1_000", 1000), ("+12", 12), ("-12", -12),
    ("0", 0), ("-0", 0), ("0.5", 0.5), (".5", 0.5), ("-.5", -0.5), ("+1.5e2", 150),
    ("3Gi", "3Gi"), ("100m", "100m"), ("1.1.7", "1.1.7"), ("v1", "v1"), ("_1", "_1"), ("0x", "0x"),
    ("yes please", "yes please"), ("NaN", "NaN"), ("inf", "inf"), ("+", "+"), ("-", "-"), (".", "."),
]


@pytest.mark.parametrize("text,expected,pyyaml", DIFFERENCES)
def test_kubernetes_differs_from_pyyaml(text: str, expected, pyyaml) -> None:
    assert k8s(text) == expected and type(k8s(text)) is type(expected)
    loaded = yaml.safe_load(f"v: {text}")["v"]
    if pyyaml is None:
        assert not isinstance(loaded, str)
    else:
        assert loaded == pyyaml and type(loaded) is type(pyyaml)


@pytest.mark.parametrize("text,expected", SAME)
def test_plain_scalars(text: str, expected) -> None:
    value = k8s(text)
    assert value == expected and type(value) is type(expected)


def test_hex_prefix_is_case_insensitive_like_go() -> None:
    # strconv.ParseInt(base 0) accepts 0X as well as 0x.
    assert k8s("0X1f") == 31


@pytest.mark.parametrize("text", [".inf", "-.Inf", "+.INF", ".nan", ".NaN"])
def test_infinities_cannot_become_json(text: str) -> None:
    assert math.isinf(resolve_plain(text)) or math.isnan(resolve_plain(text))
    with pytest.raises(ScalarError, match="unsupported value"):
        to_json_value(resolve_plain(text))


@pytest.mark.parametrize("key,expected", [
    (1, "1"), (True, "true"), (False, "false"), (1.0, "1"), (1.5, "1.5"), (1e6, "1e+06"), (100000.0, "100000"),
    (3.14159265358979, "3.1415927"), (1e-5, "1e-05"), (-2.5, "-2.5"), (math.inf, ".inf"), (-math.inf, "-.inf"),
    (math.nan, ".nan"), ("x", "x"),
])
def test_key_conversion(key, expected: str) -> None:
    assert key_to_string(key) == expected


def test_null_key_is_refused() -> None:
    with pytest.raises(ScalarError):
        key_to_string(None)


def test_documents_read_like_kubernetes() -> None:
    text = """\
plain: yes
quoted: 'yes'
double: "0x1F"
hex: 0x1F
octal: 017
float: 1e3
half: 1.5
stamp: 2001-12-14T21:59:43.10Z
time: 1:20
1: int key
true: bool key
1.5: float key
empty:
tilde: ~
str: !!str 123
int: !!int "42"
float2: !!float 1
custom: !thing 12
nonspecific: ! 12
binary: !!binary aGVsbG8=
seq: [y, n, on, off, 0b11]
"""
    loaded = load_text(text, "k.yaml")
    assert loaded.problems == []
    assert loaded.documents[0].value == {
        "plain": True, "quoted": "yes", "double": "0x1F", "hex": 31, "octal": 15, "float": 1000,
        "half": 1.5, "stamp": "2001-12-14T21:59:43.10Z", "time": "1:20", "1": "int key",
        "true": "bool key", "1.5": "float key", "empty": None, "tilde": None, "str": "123", "int": 42,
        "float2": 1, "custom": "12", "nonspecific": "12", "binary": "hello",
        "seq": [True, False, True, False, 3],
    }


def test_anchors_aliases_and_merge_keys() -> None:
    text = """\
base: &base {a: 1, b: 2}
list: &l [p, q]
copy: *base
both: [*l, *l]
merged:
  <<: *base
  c: 3
many:
  <<: [{a: 9}, {d: 4}]
"""
    loaded = load_text(text, "m.yaml")
    assert loaded.problems == []
    value = loaded.documents[0].value
    assert value["copy"] == {"a": 1, "b": 2}
    assert value["both"] == [["p", "q"], ["p", "q"]]
    assert value["merged"] == {"a": 1, "b": 2, "c": 3}
    assert value["many"] == {"a": 9, "d": 4}


def test_overlapping_merged_maps_are_duplicates_and_the_first_wins() -> None:
    loaded = load_text("many:\n  <<: [{a: 9}, {a: 8, d: 4}]\n", "m.yaml")
    assert loaded.documents[0].value["many"] == {"a": 9, "d": 4}
    assert [(p.kind, p.line, str(p.path)) for p in loaded.problems] == [("duplicate-key", 2, "many.a")]


def test_merge_override_is_a_duplicate_for_strict_kubernetes() -> None:
    loaded = load_text("base: &b {a: 1}\nm:\n  <<: *b\n  a: 2\n", "m.yaml")
    assert loaded.documents[0].value["m"] == {"a": 2}
    assert [(p.kind, p.line) for p in loaded.problems] == [("duplicate-key", 4)]


@pytest.mark.parametrize("text,message", [
    ("a: !!int abc\n", "cannot decode !!str `abc` as a !!int"),
    ("a: .inf\n", "unsupported value: +Inf"),
    ("~: 1\n", "unsupported map key"),
    ("a: !!binary '%%%'\n", "invalid base64"),
    ("a: *nope\n", "unknown anchor 'nope'"),
    ("a: &x [*x]\n", "contains itself"),
    ("a:\n  <<: 5\n", "map merge requires map"),
])
def test_values_kubernetes_refuses(text: str, message: str) -> None:
    loaded = load_text(text, "bad.yaml")
    assert [p.kind for p in loaded.problems if message in p.message] == ["syntax"], loaded.problems
    assert all(p.line in (1, 2) and p.column >= 1 and p.document == 0 for p in loaded.problems)
