"""Every check module declares the rules it can report (``RULES``), and the declarations agree with
the catalog and with the rule ids the module's own code names, as ``fixers.FIXERS`` does for fixes."""
from __future__ import annotations

import ast
import importlib.util
from pathlib import Path
from types import ModuleType

import pytest

from dralint.catalog import RULE_ID, load_catalog
from dralint.checks import MODULES, derived, fields, nodeselector, opaque, tolerations

CATALOG = load_catalog()
CHECKS = [m for m in MODULES if isinstance(m, ModuleType)]
# The shared validators: their rules reach a check through its calls, not through ids it writes.
HELPERS = (fields, nodeselector, tolerations, opaque, derived)
CHECKS_DIR = Path(fields.__file__).parent


def _files(module: ModuleType) -> list[tuple[Path, str]]:
    """The module's source files, each with the package its relative imports start from."""
    path = Path(module.__file__)
    if path.name == "__init__.py":
        return [(f, module.__name__) for f in sorted(path.parent.glob("*.py"))]
    return [(path, module.__package__)]


def _is_rules(node: ast.AST) -> bool:
    return isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "RULES" for t in node.targets)


def _written(files: list[tuple[Path, str]]) -> set[str]:
    """Rule ids the code writes as strings (the ``RULES`` declaration itself left out)."""
    ids: set[str] = set()
    for path, _ in files:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        skipped = {id(n) for stmt in tree.body if _is_rules(stmt) for n in ast.walk(stmt)}
        ids |= {n.value for n in ast.walk(tree) if id(n) not in skipped and isinstance(n, ast.Constant)
                and isinstance(n.value, str) and RULE_ID.match(n.value)}
    return ids


def _imported(files: list[tuple[Path, str]]) -> set[str]:
    """Names of the modules the code imports from, or might import (relative imports resolved)."""
    names: set[str] = set()
    for path, package in files:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                base = importlib.util.resolve_name("." * node.level + (node.module or ""), package) \
                    if node.level else node.module or ""
                names.add(base)
                names.update(f"{base}.{alias.name}" for alias in node.names)  # `from . import derived`
    return names


@pytest.mark.parametrize("module", CHECKS + list(HELPERS), ids=lambda m: m.__name__)
def test_a_module_declares_its_rules_once_each_all_in_the_catalog(module):
    rules = module.RULES
    assert isinstance(rules, tuple) and list(rules) == sorted(set(rules))
    assert set(rules) <= set(CATALOG.rules)


@pytest.mark.parametrize("module", CHECKS + list(HELPERS), ids=lambda m: m.__name__)
def test_a_module_declares_every_rule_its_code_names(module):
    assert _written(_files(module)) <= set(module.RULES)


@pytest.mark.parametrize("module", CHECKS + list(HELPERS), ids=lambda m: m.__name__)
def test_a_module_declares_only_rules_its_code_or_the_shared_validators_it_calls_name(module):
    files = _files(module)
    imported = _imported(files)
    reachable = _written(files).union(*(h.RULES for h in HELPERS if h.__name__ in imported and h is not module))
    assert set(module.RULES) <= reachable


def test_every_rule_the_checks_name_is_declared_by_a_registered_check():
    named = _written([(path, "dralint.checks") for path in CHECKS_DIR.rglob("*.py")])
    declared = set().union(*(m.RULES for m in CHECKS))
    assert named <= declared
