"""Shared test helpers: the optional reference folder beside the checkout, the webhook's certificates."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

# The tests are shelved by subject (tests/<package>/), and some lend builders across shelves (the
# webhook's tests build fleets with the feasibility tests' helpers): every shelf is importable by
# its modules' names, whichever shelf pytest collects first.
for _shelf in sorted(p for p in Path(__file__).resolve().parent.iterdir() if any(p.glob("test_*.py"))):
    sys.path.insert(0, str(_shelf))

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


@pytest.fixture(scope="module")
def certs(tmp_path_factory) -> Path:
    """A CA and a serving certificate for the webhook's Service, made by our own ``certs`` command (per module)."""
    from test_webhook_server import make_certs

    return make_certs(tmp_path_factory.mktemp("certs"))
