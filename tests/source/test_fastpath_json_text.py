"""The JSON the fast reader has rapidyaml write into a buffer of its own is rapidyaml's JSON."""
from __future__ import annotations

import pytest

from dralint.source import fastpath

pytestmark = pytest.mark.skipif(not fastpath.AVAILABLE, reason="rapidyaml and orjson are optional")

TEXT = "a: 1\nb: [x, \"héllo ✓\"]\nc:\n  d: true\n"


@pytest.mark.parametrize("guess", [0, 3, 10_000])
def test_json_text_is_emit_json_whatever_the_first_guess(guess: int) -> None:
    tree = fastpath.ryml.parse_in_arena(TEXT.encode("utf-8"))
    root = tree.root_id()
    assert fastpath._json_text(tree, root, guess) == fastpath.ryml.emit_json(tree, root)
