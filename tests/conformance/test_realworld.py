"""dralint reads every real-world manifest without crashing and flags only what is really wrong.

Ground truth is ../shared/realworld/SOURCES.md: its verdict column names the releases a file is
valid on ("strict-schema OK on 1.32–1.37") or marks it **invalid**. Each file is linted at the
newest release it is valid on, with every feature gate of that release on (SOURCES.md does not
model gates: a valid file may need alpha gates). Warnings are allowed; errors only on the files
marked invalid, and each of those must get at least one.
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from dralint import schema, source
from dralint.engine import Options, lint_files
from dralint.manifest import Manifest, identify
from dralint.kube.releases import Release, parse_version

from conftest import SHARED

ROW = re.compile(r"^\| `([^`]+)` \|.*\| ([^|]*) \|[^|]*\|\s*$")
OK_ON = re.compile(r"OK on (1\.\d+)(?:–(1\.\d+))?")


def _rows() -> list[tuple[Path, str]]:
    sources = SHARED / "realworld" / "SOURCES.md"
    if not sources.exists():
        return []
    rows, section = [], None
    for line in sources.read_text(encoding="utf-8").splitlines():
        if line.startswith("## "):
            section = line[3:].strip().replace("/", "__")
        m = ROW.match(line)
        if m and section:
            rows.append((SHARED / "realworld" / section / m.group(1), m.group(2)))
    return rows


ROWS = _rows()


def _release_for(path: Path, verdict: str) -> str:
    m = OK_ON.search(verdict)
    if m:
        return m.group(2) or m.group(1)
    served: set[str] | None = None
    for doc in source.load_file(str(path)).documents:
        for item in identify(doc):
            if isinstance(item, Manifest) and item.is_dra:
                releases = set(schema.served_releases(item.api_version, item.kind))
                served = releases if served is None else (served & releases or served)
    return max(served, key=lambda v: parse_version(v)) if served else "1.37"


def _all_gates(version: str) -> dict[str, bool]:
    release = Release(parse_version(version))
    return {g: True for g in release.known_gates()}


@pytest.mark.skipif(not ROWS, reason="../shared/realworld is not beside the checkout")
@pytest.mark.parametrize(("path", "verdict"), ROWS, ids=[p.name for p, _ in ROWS])
def test_realworld_file(path: Path, verdict: str):
    version = _release_for(path, verdict)
    options = Options(release=Release(parse_version(version), dict(_all_gates(version))))
    result = lint_files([source.load_file(str(path))], options)
    assert not any(f.rule == "DRA000" for f in result.findings), [f.message for f in result.findings]
    # DRA217: adminAccess is refused unless the namespace the file is applied to carries the label,
    # which a file of examples cannot carry.
    errors = [f"{f.line}: {f.rule} {f.field}: {f.message}" for f in result.findings
              if f.severity.value == "error" and f.rule != "DRA217"]
    if "**invalid**" in verdict:
        # SOURCES.md calls an object without `spec` invalid "by the schema"; the API server accepts it
        # (conformance/oracle-api: it stores an empty spec), so dralint warns there (DRA103).
        without_spec = [f for f in result.findings if f.rule == "DRA103"]
        assert errors or without_spec, f"{path.name} is known invalid but got no error"
    else:
        assert not errors, f"{path.name} (linted for {version}):\n" + "\n".join(errors)


def test_sources_table_was_read(shared):
    assert len(ROWS) >= 240
    assert sum("**invalid**" in v for _, v in ROWS) == 8
