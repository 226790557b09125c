"""A large ``kind: List`` read item by item gives exactly what reading it whole gives, positions too."""
from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dralint.paths import FieldPath
from dralint.source import fastpath, itemwise, load_text
from dralint.source.composer import DocumentComposer
from dralint.source.positions import Chunk
from dralint.source.records import SourceDocument

pytestmark = pytest.mark.skipif(not fastpath.available(), reason="the fast reader needs rapidyaml")

ITEM = """- apiVersion: resource.k8s.io/v1
  kind: ResourceSlice
  metadata:
    creationTimestamp: "2026-11-20T10:00:00Z"
    name: node-{n}-gpus
    resourceVersion: "{n}"
    uid: {n:08d}-aaaa-bbbb
  spec:
    devices:
    - attributes:
        model:
          string: a100
        memory-bw:
          int: {n}
      name: gpu-0
    driver: gpu.example.com
    nodeName: node-{n}
    pool: {{generation: 1, name: node-{n}, resourceSliceCount: 1}}
"""


def dump(count: int, item: str = ITEM, head: str = "apiVersion: v1\n", tail: str = "kind: List\nmetadata:\n  resourceVersion: \"\"\n") -> str:
    return head + "items:\n" + "".join(item.format(n=n) for n in range(count)) + tail


@pytest.fixture
def small_batches(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(itemwise, "BIG", 0)
    monkeypatch.setattr(itemwise, "BATCH", 2000)


def whole(text: str):
    documents, error = DocumentComposer().compose(text)
    assert error is None
    return [d.value for d in documents]


def test_a_large_list_read_item_by_item_equals_reading_it_whole(small_batches: None) -> None:
    text = dump(300)
    values, starts = itemwise.list_values(text)
    assert values == whole(text) == fastpath.fast_values(text)
    assert len(starts) == 301 and all(text.startswith("- apiVersion", s) for s in starts[:-1])
    assert text.startswith("kind: List", starts[-1])


@pytest.mark.parametrize("text", [
    dump(50).replace("items:\n", "items:\n# a comment\n", 1),
    dump(50, ITEM.replace("\n", "\n  ").rstrip(" ").replace("- apiVersion", "  - apiVersion", 1)),  # items indented
], ids=["comment", "indented"])
def test_other_list_layouts_are_cut_too(small_batches: None, text: str) -> None:
    listed = itemwise.list_values(text)
    assert listed is not None and listed[0] == whole(text)


@pytest.mark.parametrize("text", [
    dump(50, ITEM.replace("  kind: ResourceSlice\n", '  kind: "Resource\nSlice"\n')),  # a string across lines
    dump(50, ITEM.replace("    name: node-{n}-gpus\n", "    name: &n node-{n}-gpus\n    alias: *n\n")),
    dump(50) + "items: []\n",  # a duplicate key
], ids=["string-across-lines", "anchors", "duplicate-items"])
def test_what_cannot_be_cut_safely_is_read_whole_and_the_same(small_batches: None, text: str) -> None:
    assert itemwise.list_values(text) is None
    composed, _ = DocumentComposer().compose(text)
    loaded = load_text(text, "dump.yaml")
    assert [d.value for d in loaded.documents] == [d.value for d in composed if d.usable]


@settings(max_examples=30, deadline=None)
@given(st.integers(min_value=0, max_value=2**32))
def test_positions_inside_items_are_the_whole_documents_positions(seed: int) -> None:
    rng = random.Random(seed)
    text = dump(rng.randint(1, 40))
    values, starts = _cut(text)
    cut = SourceDocument("dump.yaml", 0, 1, values[0], Chunk(text, 0, len(text), 0), plain=True, items=starts)
    reference = SourceDocument("dump.yaml", 0, 1, values[0], Chunk(text, 0, len(text), 0))
    item = rng.randrange(len(values[0]["items"]))
    for path in [("items", item), ("items", item, "metadata", "name"), ("items", item, "spec", "devices", 0, "name"),
                 ("items", item, "spec", "devices", 0, "attributes", "memory-bw"), ("items", item, "spec", "pool", "name")]:
        assert cut.locate(FieldPath(path)) == reference.locate(FieldPath(path)), path
    name = FieldPath(("items", item, "metadata", "name"))
    assert cut.locate_in_scalar(name, 3) == reference.locate_in_scalar(name, 3)
    assert cut.scalar_source(name) == reference.scalar_source(name)


def _cut(text: str):
    """``list_values`` below its size threshold (hypothesis runs without pytest's monkeypatch)."""
    old = itemwise.BIG
    itemwise.BIG = 0
    try:
        return itemwise.list_values(text)
    finally:
        itemwise.BIG = old


def test_the_loader_reads_a_large_list_item_by_item(small_batches: None) -> None:
    text = dump(100)
    (document,) = load_text(text, "dump.yaml").documents
    assert document.items and len(document.value["items"]) == 100
    assert document.locate(FieldPath(("items", 99, "spec", "nodeName"))).line == text.count("\n", 0, text.index(
        "nodeName: node-99")) + 1
