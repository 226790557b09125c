"""Parsed files packed for another process come back equal, whichever reader read them."""
from __future__ import annotations

from pathlib import Path

from dralint.source import load_file, load_text, transfer

from conftest import REPO


def _same(a, b) -> bool:
    return (a.name, a.problems) == (b.name, b.problems) and len(a.documents) == len(b.documents) and all(
        # repr: the same types too (1 is not True), and a NaN equals its copy
        (x.file, x.index, x.line, repr(x.value), x.chunk, x.plain) == (y.file, y.index, y.line, repr(y.value), y.chunk,
                                                                      y.plain)
        for x, y in zip(a.documents, b.documents))


def test_real_world_and_example_files_come_back_equal(shared: Path) -> None:
    files = [load_file(str(p)) for p in sorted((shared / "realworld").rglob("*.yaml"))
             + sorted((REPO / "examples").rglob("*.yaml"))]
    back = transfer.unpack(transfer.pack(files))
    assert len(back) == len(files) and all(_same(a, b) for a, b in zip(files, back))


def test_values_json_cannot_hold_travel_pickled() -> None:
    # The exact reader reads these (a float NaN, a large integer, a duplicate key, a syntax error).
    texts = ["a: .nan\n", "a: 123456789012345678901234567890\n", "a: 1\na: 2\n", "a: [\n", "---\nb: 1\n---\nc: on\n"]
    files = [load_text(t, f"t{i}.yaml") for i, t in enumerate(texts)]
    back = transfer.unpack(transfer.pack(files))
    assert all(_same(a, b) for a, b in zip(files, back))
