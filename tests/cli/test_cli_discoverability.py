"""``--list-rules`` and ``--explain``: options, never subcommands."""
from __future__ import annotations

import io
import json

from dralint.catalog import load_catalog
from dralint.cli import main

CATALOG = load_catalog()


def run(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(args), stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def test_list_rules_is_an_aligned_table_of_the_whole_catalog():
    code, out, _ = run("--list-rules")
    header, rule, *rows = out.splitlines()
    assert code == 0 and header.split() == ["id", "name", "category", "severity", "summary"]
    assert len(rows) == len(CATALOG.rules)
    starts = {line.index(r.name) for line, r in zip(rows, CATALOG, strict=True)}
    assert len(starts) == 1  # every name starts in the same column
    first = next(iter(CATALOG))
    assert rows[0].split()[:4] == [first.id, first.name, first.category.value, first.severity.value]
    assert rows[0].endswith(first.summary)


def test_explain_by_id_or_name():
    rule = CATALOG.get("DRA201")
    code, by_id, _ = run("--explain", "dra201")
    assert code == 0 and by_id == run("--explain", rule.name)[1]
    assert by_id.startswith(f"DRA201 {rule.name} ({rule.category.value}, {rule.severity.value} by default)")
    for heading in ("Why", "Fix"):
        assert f"\n{heading}\n" in by_id
    assert "Fails: " in by_id and "Passes: " in by_id
    assert "kind: ResourceClaim" in by_id  # the examples' manifests are shown
    assert "docs/rules.md#dra201\n" in by_id


def test_explain_unknown_rule_suggests_one():
    code, out, err = run("--explain", "request-count-positiv")
    assert code == 2 and out == "" and "did you mean request-count-positive?" in err


def test_a_folder_named_rules_is_linted_not_a_subcommand(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "rules").mkdir()
    (tmp_path / "rules" / "bad.yaml").write_text("a: [\n")
    code, out, _ = run("--no-config", "--format", "json", "rules")
    assert code == 1 and json.loads(out)["findings"][0]["rule"] == "DRA001"
