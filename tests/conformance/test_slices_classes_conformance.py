"""Agreement with the API server on the shared corpora, for the kinds and rules of checks B.

* The validation conformance corpus: every DeviceClass, ResourceSlice and DeviceTaintRule case,
  plus the object-metadata cases of claims and templates, must get the server's verdict, and an
  invalid case an error at one of the fields the server names.
* The real-world manifests: no error from these rules unless SOURCES.md marks the file invalid.

Both skip cleanly when ../shared is not beside the checkout.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from dralint.engine import Options, lint_text
from dralint.kube.releases import DEFAULT_MINOR, Release

SHARED = Path(__file__).resolve().parents[3] / "shared"
CORPUS = SHARED / "conformance" / "validation"
REALWORLD = SHARED / "realworld"
KINDS = {"DeviceClass", "ResourceSlice", "DeviceTaintRule"}
# Metadata, class, slice, taint-rule and legacy rule ids.
RULES = re.compile(r"^DRA(1[23]\d|28\d|29\d|3\d\d|4\d\d)$")
# Cases decided by another module (CEL compilation of selectors).
CEL_FIELD = re.compile(r"\.cel\.expression$")


def _cases() -> list[dict]:
    index = CORPUS / "index.jsonl"
    if not index.is_file():
        return []
    cases = [json.loads(line) for line in index.read_text().splitlines() if line.strip()]
    return [c for c in cases if c["kind"] in KINDS or any(f.startswith(("metadata.", "spec.metadata."))
                                                          for f in c["fields"])]


def _normal(path: str) -> str:
    return path[len("spec."):] if path.startswith("spec.") else path


@pytest.mark.skipif(not _cases(), reason="../shared/conformance is not beside the checkout")
@pytest.mark.parametrize("case", _cases(), ids=lambda c: c["id"])
def test_conformance_case(case):
    text = (CORPUS / case["file"]).read_text()
    old = None
    if case["update"]:
        *_, old, text = re.split(r"^---[ \t]*$", text, flags=re.M)
    findings = lint_text(text, Options(release=Release(DEFAULT_MINOR, dict(case["feature_gates"]))), old_text=old)
    errors = [f for f in findings if f.severity.value == "error"]
    if case["expect"] == "valid":
        assert errors == [], [(f.rule, f.field, f.message) for f in errors]
        return
    expected = {_normal(p) for p in case["fields"] if not CEL_FIELD.search(p)}
    assert {_normal(f.field) for f in errors} & expected, (case["fields"], [(f.rule, f.field) for f in errors])


def _realworld() -> list[tuple[Path, int, bool]]:
    """(file, minor release that serves it, listed as invalid) for every file in SOURCES.md."""
    sources = REALWORLD / "SOURCES.md"
    if not sources.is_file():
        return []
    rows, section = [], ""
    for line in sources.read_text().splitlines():
        if line.startswith("## "):
            section = line[3:].strip().replace("/", "__")
        m = re.match(r"^\| `([^`]+)` \| [^|]* \| ([^|]*) \| [^|]* \| ([^|]*) \|", line)
        if not m or not section:
            continue
        apis, verdict = m.group(2), m.group(3)
        served = re.search(r"OK on 1\.(\d+)(?:–1\.(\d+))?", verdict)
        if served:
            minor = int(served.group(2) or served.group(1))
        else:
            minor = 26 if "v1alpha1" in apis else 30 if "v1alpha2" in apis else 31 if "v1alpha3" in apis else 37
        rows.append((REALWORLD / section / m.group(1), minor, "**invalid**" in verdict))
    return rows


@pytest.mark.skipif(not _realworld(), reason="../shared/realworld is not beside the checkout")
def test_realworld_files_raise_no_errors_from_these_rules():
    complaints = []
    for path, minor, invalid in _realworld():
        if invalid or not path.is_file():
            continue
        findings = lint_text(path.read_text(), Options(release=Release(minor)), name=path.name)
        complaints += [(path.name, f.rule, f.field, f.message) for f in findings
                       if f.severity.value == "error" and RULES.match(f.rule)]
    assert complaints == []
