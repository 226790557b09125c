"""Configuration files: discovery, keys, precedence of the command line, errors with file:line."""
from __future__ import annotations

import io
import json

import pytest

from dralint.catalog import load_catalog
from dralint.cli import main
from dralint.config import ConfigError, find_config, load_config
from dralint.globs import glob_regex
from dralint.findings import Severity

from conftest import BAD_CLAIM

CATALOG = load_catalog()


def run(*args: str) -> tuple[int, dict, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(["--format", "json", *args], stdout=out, stderr=err)
    return code, (json.loads(out.getvalue()) if out.getvalue() else {}), err.getvalue()


def rules_of(report: dict) -> set[str]:
    return {f["rule"] for f in report["findings"]}


# Discovery ------------------------------------------------------------------------------------

def test_found_upward_and_stops_at_the_git_root(tmp_path):
    repo = tmp_path / "repo"
    deep = repo / "a" / "b"
    deep.mkdir(parents=True)
    (tmp_path / ".dralint.yaml").write_text("strict: false\n")  # above the repository: never read
    (repo / ".git").mkdir()
    assert find_config(deep) is None
    (repo / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    assert find_config(deep) is None  # a pyproject.toml without [tool.dralint] does not count
    (repo / "pyproject.toml").write_text("[tool.dralint]\nstrict = false\n")
    assert find_config(deep) == repo / "pyproject.toml"
    (repo / "a" / ".dralint.yaml").write_text("strict: true\n")
    assert find_config(deep) == repo / "a" / ".dralint.yaml"


def test_every_key_from_yaml(tmp_path):
    path = tmp_path / ".dralint.yaml"
    path.write_text("""\
kube-version: "1.34"
feature-gates: {DRAAdminAccess: true}
select: [DRA2, request-count-positive]
ignore: DRA101
severity:
  DRA201: warning
per-path-ignores:
  "vendor/**": all
  "legacy/*.yaml": [DRA801]
strict: false
fail-on: warning
report-unused-ignores: true
""")
    config = load_config(path, CATALOG)
    assert config.kube_version == "1.34" and config.feature_gates == {"DRAAdminAccess": True}
    assert config.select == ("DRA2", "request-count-positive") and config.ignore == ("DRA101",)
    assert config.severity == {"DRA201": "warning"} and config.strict is False
    assert config.fail_on is Severity.WARNING and config.report_unused_ignores is True
    assert config.ignored(str(tmp_path / "vendor" / "chart" / "x.yaml"), "DRA201")
    assert config.ignored(str(tmp_path / "legacy" / "old.yaml"), "DRA801")
    assert not config.ignored(str(tmp_path / "legacy" / "old.yaml"), "DRA201")
    assert not config.ignored(str(tmp_path / "legacy" / "sub" / "old.yaml"), "DRA801")
    assert not config.ignored(str(tmp_path.parent / "vendor" / "x.yaml"), "DRA201")


def test_pyproject_table(tmp_path):
    path = tmp_path / "pyproject.toml"
    path.write_text('[project]\nname = "x"\n\n[tool.dralint]\nkube-version = "1.33"\nignore = ["DRA101"]\n\n'
                    '[tool.dralint.severity]\nrequest-count-positive = "info"\n')
    config = load_config(path, CATALOG)
    assert config.kube_version == "1.33" and config.ignore == ("DRA101",)
    assert config.severity == {"request-count-positive": "info"}


@pytest.mark.parametrize(("text", "line", "words"), [
    ("strict: true\nkube-verison: '1.34'\n", 2, "unknown key 'kube-verison'; did you mean kube-version?"),
    ("select:\n  - DRA201\n  - DRA2O1\n", 3, "unknown rule 'DRA2O1'"),
    ("severity:\n  DRA201: fatal\n", 2, "must be error, warning or info"),
    ("severity:\n  nope-rule: error\n", 2, "unknown rule 'nope-rule'"),
    ("kube-version: 1.30\n", 1, "quoted release"),
    ("per-path-ignores:\n  vendor/: [DRA9999]\n", 2, "unknown rule"),
    ("strict: maybe\n", 1, "true or false"),
    ("- a\n- b\n", 1, "mapping"),
    ("a: [\n", 2, "not valid YAML"),
])
def test_yaml_errors_name_file_and_line(tmp_path, text, line, words):
    path = tmp_path / ".dralint.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError) as info:
        load_config(path, CATALOG)
    assert str(info.value).startswith(f"{path}:{line}: ") and words in str(info.value)


def test_toml_errors_name_file_and_line(tmp_path):
    path = tmp_path / "pyproject.toml"
    path.write_text('[tool.dralint]\nstrict = true\nselekt = ["DRA2"]\n')
    with pytest.raises(ConfigError, match=r"pyproject.toml:3: unknown key 'selekt'; did you mean select\?"):
        load_config(path, CATALOG)
    path.write_text('[tool.dralint]\nstrict = true\n\n[tool.dralint.severity]\nDRA201 = "fatal"\n')
    with pytest.raises(ConfigError, match=r"pyproject.toml:5: severity of DRA201"):
        load_config(path, CATALOG)


@pytest.mark.parametrize(("pattern", "path", "hit"), [
    ("vendor/", "vendor/a/b.yaml", True),
    ("vendor", "vendor/b.yaml", True),
    ("vendor", "src/vendor/b.yaml", True),
    ("/vendor", "src/vendor/b.yaml", False),
    ("/vendor", "vendor/b.yaml", True),
    ("charts/*/templates/*.yaml", "charts/gpu/templates/claim.yaml", True),
    ("charts/*/templates/*.yaml", "charts/gpu/sub/templates/claim.yaml", False),
    ("charts/**/claim.yaml", "charts/claim.yaml", True),
    ("charts/**/claim.yaml", "charts/a/b/claim.yaml", True),
    ("*.generated.yaml", "deep/x.generated.yaml", True),
    ("x?.yaml", "x1.yaml", True),
    ("x[!0-9].yaml", "x1.yaml", False),
])
def test_globs(pattern, path, hit):
    assert bool(glob_regex(pattern).fullmatch(path)) == hit


# The command ----------------------------------------------------------------------------------

def test_command_line_overrides_the_file(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / ".git").mkdir()
    (tmp_path / "claim.yaml").write_text(BAD_CLAIM)
    (tmp_path / ".dralint.yaml").write_text("severity: {DRA201: warning}\nfail-on: warning\n")
    code, report, _ = run("claim.yaml")
    (found,) = [f for f in report["findings"] if f["rule"] == "DRA201"]
    assert found["severity"] == "warning" and code == 1 and report["summary"]["exit_code"] == 1
    code, report, _ = run("--fail-on", "error", "--severity", "DRA201=info", "claim.yaml")
    (found,) = [f for f in report["findings"] if f["rule"] == "DRA201"]
    assert found["severity"] == "info"
    code, report, _ = run("--no-config", "claim.yaml")
    assert [f["severity"] for f in report["findings"] if f["rule"] == "DRA201"] == ["error"]


def test_the_token_dra_names_every_rule_on_the_command_line_and_in_the_file(tmp_path, monkeypatch):
    # The same token, with the same meaning, as the webhook's policy (`severities: {DRA: warning}`).
    monkeypatch.chdir(tmp_path)
    (tmp_path / ".git").mkdir()
    (tmp_path / "claim.yaml").write_text(BAD_CLAIM)
    code, report, _ = run("--no-config", "--severity", "DRA=warning", "claim.yaml")
    assert report["findings"] and {f["severity"] for f in report["findings"]} == {"warning"} and code == 0
    (tmp_path / ".dralint.yaml").write_text("severity: {DRA: info}\n")
    code, report, _ = run("claim.yaml")
    assert {f["severity"] for f in report["findings"]} == {"info"} and code == 0
    code, report, _ = run("--no-config", "--ignore", "DRA", "claim.yaml")
    assert report["findings"] == [] and code == 0


def test_per_path_ignores_from_the_command(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / ".git").mkdir()
    (tmp_path / "upstream").mkdir()
    (tmp_path / "upstream" / "claim.yaml").write_text(BAD_CLAIM)
    (tmp_path / "mine.yaml").write_text(BAD_CLAIM)
    (tmp_path / ".dralint.yaml").write_text("per-path-ignores:\n  upstream/: all\n")
    code, report, _ = run(".")
    assert {f["file"] for f in report["findings"]} == {"./mine.yaml"}
    assert report["summary"]["suppressed"] >= 1


def test_explicit_config_and_its_errors(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "claim.yaml").write_text(BAD_CLAIM)
    (tmp_path / "ci.yaml").write_text("ignore: [request-count-positive]\n")
    _, report, _ = run("--config", "ci.yaml", "claim.yaml")
    assert "DRA201" not in rules_of(report)
    (tmp_path / "ci.yaml").write_text("ignore: [request-count-positiv]\n")
    code, _, err = run("--config", "ci.yaml", "claim.yaml")
    assert code == 2
    assert "ci.yaml:1: ignore: unknown rule 'request-count-positiv'; did you mean request-count-positive?" in err
    code, _, err = run("--config", "missing.yaml", "claim.yaml")
    assert code == 2 and "missing.yaml" in err


def test_feature_gate_errors_name_the_file(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "claim.yaml").write_text(BAD_CLAIM)
    (tmp_path / "ci.yaml").write_text("strict: true\nfeature-gates:\n  DRAAdminAcess: true\n")
    code, _, err = run("--config", "ci.yaml", "claim.yaml")
    assert code == 2 and "ci.yaml:2: unknown DRA feature gate DRAAdminAcess" in err


TOOL_TABLES = ['[tool.dralint]\nstrict = false\n', '[ tool . "dralint" ]\nstrict = false\n',
               '[tool.dralint.severity]\nDRA101 = "warning"\n', 'tool.dralint.strict = false\n',
               '[tool]\ndralint = {strict = false}\n', "[tool]\n'dralint'.strict = false\n",
               'tool = { dralint = { strict = false } }\n', '[tool."dral\\u0069nt"]\nstrict = false\n',
               '[project]\nname = "x"\n[tool]\n  dralint.strict = false\n']
NO_TOOL_TABLES = ['[project]\nname = "dralint"\n[project.scripts]\ndralint = "dralint.cli:run"\n',
                  '[[tool.mypy.overrides]]\nmodule = ["dralint.findings"]\n', '# [tool.dralint]\n[tool.ruff]\nx = 1\n',
                  '[tool.mypy]\ndralint = 1\n', '[tool.dralintx]\nstrict = false\n', '"tool.dralint" = 1\n']


@pytest.mark.parametrize("text", TOOL_TABLES + NO_TOOL_TABLES)
def test_a_pyproject_counts_exactly_when_toml_defines_tool_dralint(tmp_path, text):
    """The quick look that spares most starts parsing pyproject.toml never misses a table TOML defines."""
    import tomllib
    (tmp_path / ".git").mkdir()
    (tmp_path / "pyproject.toml").write_text(text)
    defined = "dralint" in tomllib.loads(text).get("tool", {})
    assert defined is (text in TOOL_TABLES)
    assert (find_config(tmp_path) is not None) is defined
