"""The workflow docs stay true: their configuration examples load, the CI example is the shipped file."""
from __future__ import annotations

import re

import yaml

from dralint.catalog import load_catalog
from dralint.config import load_config

from conftest import REPO

DOCS = REPO / "docs"


def blocks(markdown: str, language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", markdown, flags=re.DOTALL)


def test_configuration_examples_in_usage_load(tmp_path):
    usage = (DOCS / "usage.md").read_text(encoding="utf-8")
    (config_yaml,) = [b for b in blocks(usage, "yaml") if "per-path-ignores" in b]
    (config_toml,) = [b for b in blocks(usage, "toml") if "tool.dralint" in b]
    (tmp_path / ".dralint.yaml").write_text(config_yaml)
    (tmp_path / "pyproject.toml").write_text(config_toml)
    catalog = load_catalog()
    assert load_config(tmp_path / ".dralint.yaml", catalog).per_path_ignores
    assert load_config(tmp_path / "pyproject.toml", catalog).kube_version == "1.34"


def test_ci_doc_shows_the_shipped_workflow():
    shipped = (DOCS / "examples" / "dralint.yml").read_text(encoding="utf-8")
    body = "".join(line for line in shipped.splitlines(keepends=True) if not line.startswith("# "))
    ci = (DOCS / "ci.md").read_text(encoding="utf-8")
    assert body.lstrip("\n") in blocks(ci, "yaml")
    workflow = yaml.safe_load(shipped)
    steps = workflow["jobs"]["dralint"]["steps"]
    assert any(s.get("uses", "").startswith("github/codeql-action/upload-sarif") for s in steps)
    assert workflow["permissions"]["security-events"] == "write"


def test_pre_commit_hooks_file():
    hooks = {h["id"]: h for h in yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text())}
    assert set(hooks) == {"dralint", "dralint-all"}
    for hook in hooks.values():
        assert hook["language"] == "python" and hook["entry"] == "dralint" and hook["require_serial"] is True
        assert hook["types_or"] == ["yaml", "json"]
    assert hooks["dralint-all"]["pass_filenames"] is False


def test_ci_installs_the_newest_allowed_releases():
    # A dependency's new release must turn CI red the day it lands, not when a cache expires.
    script = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    installs = [line for line in script.splitlines() if "pip install" in line and "--upgrade pip" not in line]
    assert len(installs) == 2, installs
    assert 'upgrade=(--upgrade --upgrade-strategy eager)' in script
    assert all('"${upgrade[@]}"' in line for line in installs)
