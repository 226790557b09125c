"""The real-world manifests in ../shared/realworld: values, document lines and positions."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator

import pytest
import yaml

from dralint.findings import Position
from dralint.paths import FieldPath, Key
from dralint.source import load_file, load_text
from dralint.source import fastpath
from dralint.source.composer import DocumentComposer
from dralint.source.scalars import resolve_plain, to_json_value
from dralint.source.splitter import split_chunks

SHARED = Path(__file__).resolve().parents[3] / "shared"
REALWORLD = SHARED / "realworld"
FILES = sorted(REALWORLD.rglob("*.yaml")) if REALWORLD.is_dir() else []
needs_realworld = pytest.mark.skipif(not FILES, reason="../shared/realworld is not beside the checkout")

# Scalars in these files where PyYAML (YAML 1.1) and Kubernetes disagree: none so far. The
# disagreements themselves are listed and tested in test_source_scalars.py.
KNOWN_DIFFERENCES: dict[str, list[str]] = {}


def walk(value: Any, path: tuple = ()) -> Iterator[tuple[tuple, Any]]:
    yield path, value
    if isinstance(value, dict):
        for key, item in value.items():
            yield from walk(item, path + (Key(key),))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from walk(item, path + (index,))


def differences(ours: Any, theirs: Any, path: tuple = ()) -> Iterator[tuple]:
    if isinstance(ours, dict) and isinstance(theirs, dict) and ours.keys() == theirs.keys():
        for key in ours:
            yield from differences(ours[key], theirs[key], path + (Key(key),))
    elif isinstance(ours, list) and isinstance(theirs, list) and len(ours) == len(theirs):
        for index, (a, b) in enumerate(zip(ours, theirs)):
            yield from differences(a, b, path + (index,))
    elif not (ours == theirs and type(ours) is type(theirs)):
        yield path


@needs_realworld
@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_values_match_pyyaml_where_kubernetes_agrees(path: Path) -> None:
    loaded = load_file(str(path))
    assert loaded.problems == []
    expected = [d for d in yaml.safe_load_all(path.read_text(encoding="utf-8")) if d is not None]
    assert len(loaded.documents) == len(expected)
    found = []
    for document, theirs in zip(loaded.documents, expected):
        for where in differences(document.value, theirs):
            # Every disagreement must be a plain scalar that Kubernetes resolves to our value.
            span = document.positions().spans[tuple(where)]
            assert span.style == "" and to_json_value(resolve_plain(span.text)) == _get(document.value, where)
            found.append(FieldPath(where).render())
    assert found == KNOWN_DIFFERENCES.get(path.name, [])


def _get(value: Any, path: tuple) -> Any:
    for segment in path:
        value = value[segment]
    return value


@needs_realworld
@pytest.mark.skipif(not fastpath.available(), reason="rapidyaml / orjson not installed: no fast reader")
def test_fast_reader_agrees_with_exact_reader() -> None:
    composer = DocumentComposer()
    fast = 0
    for path in FILES:
        for chunk in split_chunks(path.read_text(encoding="utf-8")):
            values = fastpath.fast_values(chunk.body)
            if values is None:
                continue
            fast += 1
            documents, error = composer.compose(chunk.body)
            assert error is None and not any(d.problems for d in documents)
            assert [v for v in values if v is not None] == [d.value for d in documents if d.value is not None]
    assert fast > 500  # the fast reader does take most real documents


@needs_realworld
@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_positions_point_at_the_source(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    lines = text.split("\n")
    for document in load_text(text, path.name).documents:
        first = lines[document.line - 1].strip()
        assert first and not first.startswith("#"), document.line
        for where, value in walk(document.value):
            position = document.locate(FieldPath(where))
            line = lines[position.line - 1]
            if where and isinstance(where[-1], Key):
                key = where[-1]
                assert line[position.column - 1:].lstrip("'\"").startswith(key), (where, position)
            if isinstance(value, str) and value:
                _check_scalar_offsets(document, FieldPath(where), value, lines)


def _check_scalar_offsets(document, path: FieldPath, value: str, lines: list[str]) -> None:
    step = max(1, len(value) // 12)
    for offset in range(0, len(value), step):
        position = document.locate_in_scalar(path, offset)
        char = lines[position.line - 1][position.column - 1:position.column]
        # Folding turns breaks into spaces (and back); escapes start with a backslash.
        assert char == value[offset] or value[offset] in " \n" or char == "\\", (path, offset, position)


@needs_realworld
def test_cel_expression_in_a_literal_block() -> None:
    path = REALWORLD / "kubernetes__kubernetes" / \
        "test__integration__scheduler_perf__dra__templates__deviceclass-consumablecapacity.yaml"
    document = load_file(str(path)).documents[0]
    expression = FieldPath.parse("spec.selectors[0].cel.expression")
    value = document.value["spec"]["selectors"][0]["cel"]["expression"]
    assert document.locate(expression) == Position(8, 7)
    offset = value.index("allowMultipleAllocations")
    located = document.locate_in_scalar(expression, offset)
    assert located == Position(10, 16)


@needs_realworld
def test_cel_expression_in_double_quotes() -> None:
    path = REALWORLD / "kubernetes-sigs__dra-driver-nvidia-gpu" / "demo__specs__quickstart__gpu-test4.yaml"
    text = path.read_text(encoding="utf-8")
    loaded = load_file(str(path))
    for document in loaded.documents:
        for where, value in walk(document.value):
            if where and where[-1] == "expression":
                located = document.locate_in_scalar(FieldPath(where), value.index("profile"))
                line = text.split("\n")[located.line - 1]
                assert line[located.column - 1:].startswith("profile")
                assert line[located.column - 2 - value.index("profile")] == '"'
                return
    pytest.fail("no expression found")


@needs_realworld
def test_cel_expression_as_a_plain_scalar() -> None:
    path = REALWORLD / "intel__intel-resource-drivers-for-kubernetes" / "deployments__qat__device-class.yaml"
    document = load_file(str(path)).documents[0]
    where = FieldPath.parse("spec.selectors[0].cel.expression")
    value = document.value["spec"]["selectors"][0]["cel"]["expression"]
    assert value == 'device.driver == "qat.intel.com"'
    located = document.locate_in_scalar(where, value.index("qat"))
    assert (located.line, located.column) == (9, 19 + value.index("qat"))
