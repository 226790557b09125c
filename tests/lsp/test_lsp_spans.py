"""What a finding underlines: keys, scalars, list items and CEL sub-expressions (dralint.lsp.spans)."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dralint import source
from dralint.engine import Options, lint_text
from dralint.lsp.spans import Lines, Point, expression_extent, finding_span

EXPRESSION = 'device.attributes["gpu.example.com"].memory > "40Gi"'


@pytest.mark.parametrize(("expression", "at", "covered"), [
    (EXPRESSION, EXPRESSION.index(".memory"), 'device.attributes["gpu.example.com"].memory'),
    (EXPRESSION, EXPRESSION.index("["), 'device.attributes["gpu.example.com"].memory'),
    (EXPRESSION, EXPRESSION.index(">"), EXPRESSION),
    ('device.driver == "a" && has(device.attributes["a"].b)', 0, "device.driver"),
    ('device.driver == "a" && has(device.attributes["a"].b)', 24, 'has(device.attributes["a"].b)'),
    ("size(device.attributes) > 0", 0, "size(device.attributes)"),
    ('device.attributes.exists(x, x == "a")', 24, 'device.attributes.exists(x, x == "a")'),
    ("a.b.c(1, [2, 3])", 5, "a.b.c(1, [2, 3])"),
    ("now()", 0, "now()"),
    ("!(a || b)", 0, "!(a || b)"),
    ("(a || b) && c", 3, "a || b"),
    ("device.attributes[?'x'].orValue(1)", 17, "device.attributes[?'x']"),
    # Not CEL: the token where the parser stopped.
    ("device.drvier ==", 14, "=="),
    ("foo(", 3, "("),
    ("a # b", 2, "#"),
])
def test_expression_extent(expression: str, at: int, covered: str) -> None:
    lo, hi = expression_extent(expression, at)
    assert expression[lo:hi] == covered


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(list('abdevic.[]()"\'!=<>&|?:, 01\n\\') + ["device", "has(", "[?", ".?"])).map(
    "".join), st.integers(min_value=0, max_value=200))
def test_expression_extent_is_a_non_empty_range_holding_the_offset(expression: str, at: int) -> None:
    if not expression:
        assert expression_extent(expression, at) == (0, 0)
        return
    at = at % len(expression)
    lo, hi = expression_extent(expression, at)
    assert 0 <= lo <= at < hi <= len(expression)


def spans_of(text: str) -> list[tuple[str, str]]:
    lines = Lines(text)
    parsed = source.load_text(text, "manifest.yaml")
    out = []
    for finding in lint_text(text, Options(), name="manifest.yaml"):
        span = finding_span(finding, lines, parsed.documents)
        out.append((finding.rule, text[lines.offset(span.start):lines.offset(span.end)]))
    return out


def test_a_key_is_covered_to_its_colon() -> None:
    text = """\
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata:
  name: claim
  namespace: default
spec:
  devices:
    requests:
    - name: gpu
      exactly:
        deviceClassName: gpu.example.com
        count: -1
        "alloctionMode": All  # comment
"""
    assert dict(spans_of(text)) == {"DRA201": "count", "DRA101": '"alloctionMode"'}


def test_cel_in_quoted_and_block_scalars() -> None:
    text = """\
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata:
  name: gpu
spec:
  selectors:
  - cel:
      expression: "device.attributes[\\"gpu.example.com\\"].model == 1 && device.drvier == 'a'"
  - cel:
      expression: |
        device.driver == "x" &&
          device.capacity["gpu.example.com"].memory > "40Gi"
"""
    assert spans_of(text) == [
        ("DRA501", "device.drvier"),
        ("DRA501", 'device.capacity["gpu.example.com"].memory > "40Gi"'),
    ]


def test_a_list_item_or_document_covers_its_line() -> None:
    # A list of objects where one object was meant (a list that is not of objects is not ours: no finding).
    text = "- kind: ResourceClaim\n  apiVersion: resource.k8s.io/v1\n"
    assert spans_of(text) == [("DRA003", "- kind: ResourceClaim")]


def test_lines_follow_lsp_line_breaks() -> None:
    lines = Lines("a\r\nbc\rd\n")
    assert len(lines) == 4
    assert [lines.line(i) for i in range(4)] == ["a", "bc", "d", ""]
    assert lines.point(lines.offset(Point(1, 1))) == Point(1, 1)
    assert lines.clamp(Point(1, 99)) == Point(1, 2)
    assert lines.clamp(Point(99, 0)) == Point(3, 0)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.sampled_from(list("ab:- \n\"'#[]{},|>\t") + ["count: -1", "kind: ResourceClaim",
                                                                   "apiVersion: resource.k8s.io/v1",
                                                                   "expression: ", "device.x"])).map("".join))
def test_every_span_lies_in_the_text(text: str) -> None:
    lines = Lines(text)
    parsed = source.load_text(text, "manifest.yaml")
    for finding in lint_text(text, Options(), name="manifest.yaml"):
        span = finding_span(finding, lines, parsed.documents)
        assert span.start <= span.end
        assert lines.clamp(span.start) == span.start and lines.clamp(span.end) == span.end


def test_documents_are_found_by_offset_each_in_its_own_text() -> None:
    from dralint.lsp.spans import DocumentsByOffset
    from dralint.source.loader import load_text

    text = "a: 1\n---\nb: 2\n---\nc: 3\n"
    documents = load_text(text, "f.yaml").documents
    located = DocumentsByOffset(documents)
    assert [d.value for d in located.at(0)] == [{"a": 1}]
    assert [d.value for d in located.at(text.index("b"))] == [{"b": 2}]
    assert [d.value for d in located.at(text.index("c: 3") + 3)] == [{"c": 3}]
    assert located.at(len(text) + 5) == []
