"""Our CEL parser accepts what cel-python's grammar accepts (cel-python is the reference parser).

dralint parses CEL with its own recursive-descent parser (faster, and it keeps the offset of every
node for error positions; see docs/cel-engine.md). This test holds it to cel-python's Lark grammar
on every expression of the conformance cases and on our own samples: same accept/reject verdict,
except for the optional syntax (`.?`, `[?`), which Kubernetes supports and cel-python does not.
"""
from __future__ import annotations

import json

import pytest

celpy = pytest.importorskip("celpy")

from dralint.cel.parser import ParseError, parse  # noqa: E402

from conftest import SHARED  # noqa: E402

SAMPLES = [
    'device.driver == "gpu.example.com"',
    'device.attributes["gpu.example.com"].model == "a100" && device.capacity["gpu.example.com"].memory.compareTo(quantity("40Gi")) >= 0',
    "[1, 2, 3].all(x, x > 0)", "cel.bind(d, device.attributes['x'], d.a || d.b)", "a ? b : c", "!x", "-1 < 2u",
    "{'a': 1}.exists(k, k == 'a')", "b'bytes' == b'x'", 'r"raw\\d" != ""', "1.5e3 > 2.0", "x in [1, 2]",
    "device.attributes['x'].size() == 0", "has(device.attributes.x)",
    "device.driver ==", "(1 + 2", "a..b", "1 +", "[1, 2", "{'a' 1}", "a.b(", "in x", "x ? y", "'unterminated",
]


def _expressions() -> list[str]:
    cases = SHARED / "conformance" / "cel" / "cases.jsonl"
    found = list(SAMPLES)
    if cases.exists():
        found += [json.loads(line)["expression"] for line in cases.read_text().splitlines() if line.strip()]
    return [e for e in dict.fromkeys(found) if ".?" not in e and "[?" not in e and len(e.encode()) <= 10240]


def _celpy_accepts(expr: str) -> bool:
    try:
        celpy.Environment().compile(expr)
        return True
    except celpy.CELParseError:
        return False


def _ours_accepts(expr: str) -> bool:
    try:
        parse(expr)
        return True
    except ParseError:
        return False


@pytest.mark.parametrize("expr", _expressions())
def test_same_verdict_as_cel_python(expr):
    assert _ours_accepts(expr) == _celpy_accepts(expr), expr
