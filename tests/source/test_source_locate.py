"""locate / locate_in_scalar on every scalar style, and objects without a file."""
from __future__ import annotations

import pytest

from dralint.findings import Position
from dralint.paths import FieldPath
from dralint.source import document_from_value, load_text

TEXT = '''\
# leading comment
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata:
  name: gpu
spec:
  selectors:
  - cel:
      expression: |2-
          device.driver == "a" &&
         device.attributes["a"].model == "x"
  - cel:
      expression: >
        device.driver == "b"
        && true

          more indented
        last
  - cel:
      expression: "esc \\u00e9 \\"quoted\\" and
        folded \\
        joined"
  - cel:
      expression: 'it''s
        folded'
  - cel:
      expression: device.driver
        == "plain"   
  - cel: {expression: 'flow "x"'}
  config:
  - opaque:
      parameters: [1, two, {three: 3}]
'''


@pytest.fixture(scope="module")
def document():
    loaded = load_text(TEXT, "class.yaml")
    assert loaded.problems == []
    return loaded.documents[0]


def expression(index: int) -> FieldPath:
    return FieldPath.parse(f"spec.selectors[{index}].cel.expression")


def test_document_line_skips_comments(document) -> None:
    assert document.line == 2 and document.locate(FieldPath()) == Position(2, 1)


@pytest.mark.parametrize("path,position", [
    ("kind", Position(3, 1)),
    ("metadata.name", Position(5, 3)),
    ("spec.selectors[1]", Position(12, 5)),
    ("spec.selectors[1].cel", Position(12, 5)),
    ("spec.selectors[5].cel.expression", Position(29, 11)),
    ("spec.config[0].opaque.parameters[2].three", Position(32, 29)),
    ("spec.config[0].opaque.parameters[1]", Position(32, 23)),
    ("spec.selectors[0].cel.missing.deeper", Position(8, 5)),
    ("spec.selectors[9]", Position(7, 3)),
    ("nothing", Position(2, 1)),
])
def test_locate(document, path: str, position: Position) -> None:
    assert document.locate(FieldPath.parse(path)) == position


def _char_at(position: Position) -> str:
    line = TEXT.split("\n")[position.line - 1]
    return line[position.column - 1:position.column]


@pytest.mark.parametrize("index", range(6))
def test_every_character_maps_back(document, index: int) -> None:
    value = document.value["spec"]["selectors"][index]["cel"]["expression"]
    for offset, char in enumerate(value):
        found = _char_at(document.locate_in_scalar(expression(index), offset))
        assert found == char or char in " \n" or found == "\\", (index, offset, char, found)


def test_literal_block_with_indentation_indicator(document) -> None:
    value = document.value["spec"]["selectors"][0]["cel"]["expression"]
    # The indicator counts from the parent's indentation (6): content starts at column 9.
    assert value == '  device.driver == "a" &&\n device.attributes["a"].model == "x"'
    assert document.locate_in_scalar(expression(0), value.index("attributes")) == Position(11, 17)


def test_folded_block(document) -> None:
    value = document.value["spec"]["selectors"][1]["cel"]["expression"]
    assert value == 'device.driver == "b" && true\n\n  more indented\nlast\n'
    assert document.locate_in_scalar(expression(1), value.index("&&")) == Position(15, 9)
    assert document.locate_in_scalar(expression(1), value.index("more")) == Position(17, 11)
    assert document.locate_in_scalar(expression(1), value.index("last")) == Position(18, 9)


def test_double_quoted_escapes_and_folding(document) -> None:
    value = document.value["spec"]["selectors"][2]["cel"]["expression"]
    assert value == 'esc \u00e9 "quoted" and folded joined'
    assert document.locate_in_scalar(expression(2), value.index("\u00e9")) == Position(20, 24)
    assert document.locate_in_scalar(expression(2), value.index("quoted")) == Position(20, 33)
    assert document.locate_in_scalar(expression(2), value.index("joined")) == Position(22, 9)


def test_single_quoted(document) -> None:
    value = document.value["spec"]["selectors"][3]["cel"]["expression"]
    assert value == "it's folded"
    assert document.locate_in_scalar(expression(3), value.index("s")) == Position(24, 24)
    assert document.locate_in_scalar(expression(3), value.index("folded")) == Position(25, 9)


def test_plain_multi_line(document) -> None:
    value = document.value["spec"]["selectors"][4]["cel"]["expression"]
    assert value == 'device.driver == "plain"'
    assert document.locate_in_scalar(expression(4), value.index("==")) == Position(28, 9)


def test_offsets_out_of_range_fall_back_to_the_scalar_start(document) -> None:
    assert document.locate_in_scalar(expression(0), 10_000) == Position(9, 19)
    assert document.locate_in_scalar(expression(0), -1) == Position(9, 19)
    # Not a scalar: the node's own position.
    assert document.locate_in_scalar(FieldPath.parse("spec.selectors[0]"), 3) == Position(8, 5)


def test_fast_and_exact_documents_locate_the_same() -> None:
    # An anchor sends this document to the exact reader; the other takes the fast one.
    text = "a: 1\nb:\n  c: x\n---\na: &x 1\nb:\n  c: x\n"
    first, second = load_text(text, "two.yaml").documents
    assert first.locate(FieldPath.parse("b.c")) == Position(3, 3)
    assert second.locate(FieldPath.parse("b.c")) == Position(7, 3)
    assert (first.line, second.line) == (1, 5)


def test_objects_without_a_file_have_unknown_positions() -> None:
    document = document_from_value({"kind": "ResourceClaim", "spec": {}}, "admission")
    assert document.locate(FieldPath.parse("spec")) == Position(0, 0)
    assert document.locate_in_scalar(FieldPath.parse("kind"), 2) == Position(0, 0)
    assert (document.file, document.index, document.value["kind"]) == ("admission", 0, "ResourceClaim")
