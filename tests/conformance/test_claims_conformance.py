"""The validation conformance corpus for claims and templates, when the reference folder is present."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from dralint.engine import Options, lint_text
from dralint.kube.releases import DEFAULT_MINOR, Release

SHARED = Path(__file__).resolve().parents[3] / "shared"
CORPUS = SHARED / "conformance" / "validation"
KINDS = {"ResourceClaim", "ResourceClaimTemplate"}
# Cases whose verdict depends on another engineer's module (CEL compilation).
OTHERS = {"CEL"}


def _cases() -> list[dict]:
    index = CORPUS / "index.jsonl"
    if not index.is_file():
        return []
    cases = [json.loads(line) for line in index.read_text().splitlines() if line.strip()]
    return [c for c in cases if c["kind"] in KINDS and not any(o in c["source"] for o in OTHERS)]


def _normal(path: str) -> str:
    return path[len("spec."):] if path.startswith("spec.") else path


@pytest.mark.skipif(not _cases(), reason="../shared/conformance is not beside the checkout")
@pytest.mark.parametrize("case", _cases(), ids=lambda c: c["id"])
def test_case(case):
    text = (CORPUS / case["file"]).read_text()
    old = None
    if case["update"]:
        body = text.split("\n---\n")
        old, text = body[-2], body[-1]
    findings = lint_text(text, Options(release=Release(DEFAULT_MINOR, dict(case["feature_gates"]))), old_text=old)
    errors = [f for f in findings if f.severity.value == "error"]
    if case["expect"] == "valid":
        assert errors == [], [(f.rule, f.field, f.message) for f in errors]
    else:
        assert {_normal(f.field) for f in errors} & {_normal(p) for p in case["fields"]}, \
            (case["fields"], [(f.rule, f.field) for f in errors])
