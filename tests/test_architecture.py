"""The house as the design draws it: imports flow one way, no circles, no oversized rooms.

Measured from the code's own imports (module level, function level and ``TYPE_CHECKING`` alike:
a lazy import is still an arrow), for the library and the webhook.
"""
from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PACKAGES = (REPO / "dralint", REPO / "webhook" / "dralint_webhook")
MAX_LINES = 600
# The faces over the engine: nothing below them may import them.
FACES = ("dralint.cli", "dralint.__main__", "dralint.lsp", "dralint.autofix", "dralint.parallel", "dralint_webhook")
# The ground floor: Kubernetes knowledge and the records every stage shares.
GROUND = {"dralint.kube": ("dralint.kube", "dralint.bounded_cache"),
          "dralint.problems": ("dralint.findings", "dralint.paths"),
          "dralint.findings": ("dralint.paths", "dralint.fixes"),
          "dralint.fixes": (),
          "dralint.paths": ()}


def _modules() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for package in PACKAGES:
        for path in sorted(package.rglob("*.py")):
            parts = list(path.relative_to(package.parent).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


def _imports(name: str, path: Path, modules: dict[str, Path]) -> Iterator[str]:
    """The modules of ours that ``name`` imports; ``from pkg import mod`` counts as ``pkg.mod``."""
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = ".".join(package[:len(package) - node.level + 1] + ([node.module] if node.module else [])) \
                if node.level else node.module or ""
            subs = [f"{base}.{alias.name}" for alias in node.names if f"{base}.{alias.name}" in modules]
            targets = subs if len(subs) == len(node.names) else [base, *subs]
        else:
            continue
        yield from (t for t in targets if t in modules and t != name)


@pytest.fixture(scope="module")
def graph() -> dict[str, set[str]]:
    modules = _modules()
    return {name: set(_imports(name, path, modules)) for name, path in modules.items()}


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles: list[list[str]] = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, edges = work[-1]
            for nxt in edges:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph[nxt]))))
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        circles.append(sorted(component))
    return circles


def _within(name: str, prefixes: tuple[str, ...]) -> bool:
    return any(name == p or name.startswith(p + ".") for p in prefixes)


def test_no_import_circles(graph):
    assert _circles(graph) == []


def test_circles_are_found():
    assert _circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_only_faces_import_faces(graph):
    upward = sorted(f"{name} -> {target}" for name, targets in graph.items() if not _within(name, FACES)
                    for target in targets if _within(target, FACES))
    assert upward == []


def test_the_library_never_imports_the_webhook(graph):
    assert sorted(f"{n} -> {t}" for n, ts in graph.items() if n.startswith("dralint.") or n == "dralint"
                  for t in ts if t.startswith("dralint_webhook")) == []


def test_the_language_server_does_not_borrow_the_command_line(graph):
    assert sorted(f"{n} -> {t}" for n, ts in graph.items() if _within(n, ("dralint.lsp",))
                  for t in ts if _within(t, ("dralint.cli",))) == []


@pytest.mark.parametrize("floor", sorted(GROUND))
def test_the_ground_floor_stands_alone(graph, floor):
    allowed = GROUND[floor] + (floor,)
    assert sorted(f"{n} -> {t}" for n, ts in graph.items() if _within(n, (floor,))
                  for t in ts if not _within(t, allowed)) == []


def test_no_module_is_oversized():
    sizes = {name: len(path.read_text(encoding="utf-8").splitlines()) for name, path in _modules().items()}
    assert {name: lines for name, lines in sizes.items() if lines > MAX_LINES} == {}


def test_the_engines_seams_are_typed():
    """The engine's public calls name their types; ``Any`` only as the values of a Kubernetes object
    read from JSON or YAML (``Mapping[str, Any]``), which are any JSON value."""
    import inspect

    import dralint.engine as engine

    loose = []
    for name in engine.__all__:
        member = getattr(engine, name)
        if not inspect.isfunction(member):
            continue
        signature = inspect.signature(member)
        annotations = {p: str(v.annotation) for p, v in signature.parameters.items()}
        annotations["return"] = str(signature.return_annotation)
        for where, text in annotations.items():
            if "Any" in text.replace("Mapping[str, Any]", ""):
                loose.append(f"{name}({where}: {text})")
    assert loose == []
