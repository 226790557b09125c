"""Shared test helpers: the optional reference folder beside the checkout."""
from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
# A claim with one error (DRA201: count -1), shared by the tests of reports, config and hooks.
BAD_CLAIM = (REPO / "tests" / "fixtures" / "bad-claim.yaml").read_text(encoding="utf-8")


@pytest.fixture(scope="session")
def shared() -> Path:
    """``../shared`` when it is there (CI has it); tests that need it skip cleanly otherwise."""
    if not SHARED.is_dir():
        pytest.skip("../shared (reference material) is not beside the checkout")
    return SHARED
