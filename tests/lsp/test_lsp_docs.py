"""docs/editors.md stays true: its snippets parse, name the real command, and point at real schemas."""
from __future__ import annotations

import json
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from dralint.catalog import load_catalog
from dralint.config import load_config

from conftest import REPO

EDITORS = (REPO / "docs" / "editors.md").read_text(encoding="utf-8")
# What draft-07 validators (yaml-language-server is one) understand, plus the $defs container our
# schemas keep their definitions in (reached by JSON pointer, which any draft resolves).
DRAFT7 = frozenset({
    "$schema", "$id", "$ref", "$comment", "$defs", "title", "description", "default", "readOnly", "writeOnly",
    "examples", "multipleOf", "maximum", "exclusiveMaximum", "minimum", "exclusiveMinimum", "maxLength",
    "minLength", "pattern", "additionalItems", "items", "maxItems", "minItems", "uniqueItems", "contains",
    "maxProperties", "minProperties", "required", "additionalProperties", "definitions", "properties",
    "patternProperties", "dependencies", "propertyNames", "const", "enum", "type", "format", "contentMediaType",
    "contentEncoding", "if", "then", "else", "allOf", "anyOf", "oneOf", "not"})


def blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", EDITORS, flags=re.DOTALL)


def test_the_configuration_example_loads(tmp_path: Path) -> None:
    (example,) = [b for b in blocks("yaml") if "cluster:" in b]
    (tmp_path / ".dralint.yaml").write_text(example)
    config = load_config(tmp_path / ".dralint.yaml", load_catalog())
    assert config.cluster == (str(tmp_path / "cluster-state/"),) and config.kube_version == "1.34"


def test_the_editor_snippets_start_dralint_lsp() -> None:
    vscode = [json.loads(b) for b in blocks("json")]
    glspc = next(b for b in vscode if "glspc.serverCommand" in b)
    assert [glspc["glspc.serverCommand"], *glspc["glspc.serverCommandArguments"]] == ["dralint", "lsp"]
    (helix,) = [tomllib.loads(b) for b in blocks("toml")]
    assert helix["language-server"]["dralint"] == {"command": "dralint", "args": ["lsp"]}
    assert all("dralint" in language["language-servers"] for language in helix["language"])
    (neovim,) = blocks("lua")
    assert 'cmd = { "dralint", "lsp" }' in neovim


def test_the_schema_paths_exist_and_speak_draft_7() -> None:
    settings = next(json.loads(b) for b in blocks("json") if "yaml.schemas" in b)
    named = [REPO / path for path in settings["yaml.schemas"]]
    modeline = re.search(r"\$schema=\.\./(\S+)", EDITORS)
    assert modeline is not None
    named.append(REPO / modeline.group(1))
    assert all(path.is_file() for path in named), named
    for path in sorted((REPO / "schemas").glob("*/*/*.json")):
        unknown = _keywords(json.loads(path.read_text())) - DRAFT7
        assert not unknown, (path, unknown)


def _keywords(schema: object) -> set[str]:
    """Every keyword used anywhere in a schema (names under properties and $defs are not keywords)."""
    found: set[str] = set()
    stack = [schema]
    while stack:
        node = stack.pop()
        if isinstance(node, list):
            stack.extend(node)
        elif isinstance(node, dict):
            for key, value in node.items():
                found.add(key)
                if key in ("properties", "$defs", "definitions", "patternProperties"):
                    stack.extend(value.values())
                elif isinstance(value, (dict, list)) and key not in ("enum", "const", "examples", "default"):
                    stack.append(value)
    return {k for k in found if not k.startswith("x-")}


def test_dralint_lsp_help_names_the_guide() -> None:
    pytest.importorskip("pygls")
    run = subprocess.run([sys.executable, "-m", "dralint", "lsp", "--help"], capture_output=True, text=True,
                         timeout=60)
    assert run.returncode == 0 and "docs/editors.md" in run.stdout


def test_without_the_extra_the_command_says_what_to_install() -> None:
    code = ("import io, sys; sys.modules['pygls'] = None; from dralint.cli import main; err = io.StringIO(); "
            "code = main(['lsp'], stderr=err); print(code, err.getvalue())")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert run.stdout.startswith("2 dralint: error: dralint lsp needs the lsp extra"), run.stdout + run.stderr
    assert "pip install 'dralint[lsp]'" in run.stdout
