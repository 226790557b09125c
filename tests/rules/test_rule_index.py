"""rules/index.json, the catalog's files as JSON keyed by their digest: fresh, equal to the YAML, never trusted over it."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from dralint.catalog import INDEX, CatalogError, load_catalog
from dralint.findings import Severity

from conftest import REPO

RULES = REPO / "rules"


def _copy(tmp_path: Path, index: bool) -> Path:
    folder = tmp_path / "rules"
    shutil.copytree(RULES, folder, ignore=None if index else shutil.ignore_patterns(INDEX))
    return folder


def test_rule_index_is_up_to_date():
    proc = subprocess.run([sys.executable, str(REPO / "scripts" / "gen_rule_index.py"), "--check"],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_catalog_read_through_the_index_equals_the_catalog_parsed_from_yaml(tmp_path):
    from_yaml = load_catalog.__wrapped__(_copy(tmp_path, index=False))
    from_index = load_catalog.__wrapped__(RULES)
    assert from_index.rules == from_yaml.rules
    # In the written order too: --explain and docs/rules.md list a rule's mappings as written.
    assert [list(r.kubernetes.items()) for r in from_index] == [list(r.kubernetes.items()) for r in from_yaml]
    assert [r.examples for r in from_index] == [r.examples for r in from_yaml]


def test_rule_file_changed_after_the_index_was_made_is_read_from_its_yaml(tmp_path):
    folder = _copy(tmp_path, index=True)
    path = next(folder.glob("DRA201-*.yaml"))
    before = load_catalog.__wrapped__(folder).get("DRA201").severity
    changed = Severity.INFO if before is not Severity.INFO else Severity.WARNING
    text = path.read_text(encoding="utf-8")
    path.write_text(text.replace(f"severity: {before.value}", f"severity: {changed.value}", 1), encoding="utf-8")
    assert load_catalog.__wrapped__(folder).get("DRA201").severity is changed


def test_unreadable_index_is_a_catalog_error_naming_it(tmp_path):
    folder = _copy(tmp_path, index=True)
    (folder / INDEX).write_text("{not json", encoding="utf-8")
    with pytest.raises(CatalogError, match="index.json"):
        load_catalog.__wrapped__(folder)
