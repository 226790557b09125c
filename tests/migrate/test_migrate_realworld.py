"""The proof over real manifests: every migrated object means what it meant, and lints no worse.

For each file of ``../shared/realworld`` and ``examples/``: every object ``dralint migrate --to v1``
rewrites equals the original in canonical (v1) form, compared here with the linter's own
conversion; the text changes only inside the migrated objects; and the migrated file, linted at a
release that serves v1, has no error the original did not have at a release that served it.
"""
from __future__ import annotations

import difflib
import io
import os
from collections import Counter
from pathlib import Path

import pytest

from dralint.cli import main
from dralint.kube.releases import Release, parse_version
from dralint.convert import to_canonical
from dralint.engine import Options, lint_text
from dralint.manifest import Manifest, identify
from dralint.migrate.rewrite import MIGRATED, migrate_text
from dralint.source import load_text
from dralint.yamltext.layout import read_layout

from conftest import REPO

_NEWEST_V1 = "1.37"
# The newest release serving each original version (v1alpha3's last is 1.33, where v1beta1 and
# v1beta2 are served too).
_SERVED_BEFORE = {"v1alpha3": "1.33", "v1beta1": "1.33", "v1beta2": "1.33", "v1": _NEWEST_V1}


def _files(shared: Path) -> list[Path]:
    return sorted((shared / "realworld").rglob("*.yaml")) + sorted((REPO / "examples").rglob("*.yaml"))


def _objects(text: str) -> dict[tuple, Manifest]:
    out = {}
    for document in load_text(text, "m.yaml").documents:
        for item in identify(document):
            if isinstance(item, Manifest):
                out[(document.index, tuple(item.base))] = item
    return out


def _canonical(manifest: Manifest) -> dict:
    value = dict(to_canonical(manifest).value)
    value.pop("apiVersion")
    for spec in manifest.pod_spec_paths:  # pods: the 1.31 shape (claim names beside the entry)
        node = value
        for segment in tuple(spec) + ("resourceClaims",):
            node = node.get(segment) if isinstance(node, dict) else None
        for entry in node if isinstance(node, list) else ():
            if isinstance(entry, dict) and isinstance(entry.get("source"), dict):
                entry.update(entry.pop("source"))
    return value


def _errors(text: str, release: str) -> Counter:
    return Counter((f.rule, f.object) for f in lint_text(text, Options(release=Release(parse_version(release))))
                   if f.severity.value == "error" and f.rule != "DRA801")


def test_every_migrated_object_is_proven_equal_and_lints_no_worse(shared):
    files = _files(shared)
    assert len([f for f in files if "realworld" in f.parts]) == 246
    figures: Counter = Counter()
    reasons: Counter = Counter()
    for path in files:
        text = path.read_text(encoding="utf-8")
        outcome = migrate_text(text, str(path), "v1")
        assert not outcome.error, f"{path}: {outcome.error}"
        for obj in outcome.objects:
            figures[obj.status] += 1
            if obj.status != MIGRATED:
                reasons[obj.reason.split(":")[0].split(" (")[0]] += 1
        if not outcome.changed:
            continue
        figures["files"] += 1
        before, after = _objects(text), _objects(outcome.new_text)
        assert before.keys() == after.keys(), path
        migrated = {(o.ref.document, tuple(o.ref.base)) for o in outcome.objects if o.status == MIGRATED}
        for key in before:
            if key in migrated:
                assert after[key].version == "v1" or not after[key].is_dra, (path, key)
                assert _canonical(after[key]) == _canonical(before[key]), (path, key)
            else:
                assert after[key].value == before[key].value, (path, key)
        _assert_changes_inside(text, outcome.new_text, [o.ref for o in outcome.objects if o.status == MIGRATED], path)
        versions = {m.version for m in before.values() if m.is_dra} & set(_SERVED_BEFORE)
        release = min((_SERVED_BEFORE[v] for v in versions), key=lambda r: int(r.split(".")[1]), default=_NEWEST_V1)
        new_errors = _errors(outcome.new_text, _NEWEST_V1) - _errors(text, release)
        assert not new_errors, f"{path}: {dict(new_errors)}"
    print(f"\nmigrate --to v1 over {len(files)} files: {figures['files']} files migrated, "
          f"{figures[MIGRATED]} objects migrated, {figures['refused']} refused: {dict(reasons)}")
    assert figures["files"] >= 90 and figures[MIGRATED] >= 100


def _assert_changes_inside(old: str, new: str, refs, path) -> None:
    """Every changed line of ``old`` lies inside one of the migrated objects."""
    layout = read_layout(old)
    spans = []
    for ref in refs:
        node = layout.roots[ref.document].find(tuple(ref.base))
        spans.append((node.line, layout.line_of(layout.content_end(node))))
    matcher = difflib.SequenceMatcher(None, old.splitlines(True), new.splitlines(True), autojunk=False)
    for tag, i1, i2, _, _ in matcher.get_opcodes():
        if tag != "equal":
            last = max(i1, i2 - 1)
            assert any(start <= i1 and last <= end for start, end in spans), f"{path}: lines {i1 + 1}-{i2} changed"


@pytest.mark.parametrize("target", ["v1beta1", "v1beta2"])
def test_the_examples_go_to_older_versions_and_back_unchanged(target):
    for path in sorted((REPO / "examples").rglob("*.yaml")):
        text = path.read_text(encoding="utf-8")
        there = migrate_text(text, str(path), target)
        if not there.changed:
            continue
        back = migrate_text(there.new_text, str(path), "v1")
        assert _objects(back.new_text).keys() == _objects(text).keys()
        for key, manifest in _objects(back.new_text).items():
            assert _canonical(manifest) == _canonical(_objects(text)[key]), (path, key)


def test_the_drivers_own_hand_migrated_files_are_what_migrate_writes(shared):
    folder = shared / "realworld" / "kubernetes-sigs__dra-driver-nvidia-gpu"
    same, differ = [], {}
    for beta in sorted(folder.glob("demo__specs__quickstart__v1beta1__*.yaml")):
        theirs = folder / beta.name.replace("__v1beta1__", "__v1__")
        if not theirs.exists():
            continue
        ours = migrate_text(beta.read_text(encoding="utf-8"), beta.name, "v1").new_text.splitlines()
        lines = theirs.read_text(encoding="utf-8").splitlines()
        changed = [(a, b) for a, b in zip(ours, lines) if a != b]
        name = beta.name.split("__v1beta1__")[1]
        if not changed and len(ours) == len(lines):
            same.append(name)
        else:
            differ[name] = changed
    assert same == ["gpu-test-mps.yaml", "gpu-test1.yaml", "gpu-test2.yaml", "gpu-test3.yaml", "gpu-test4.yaml",
                    "gpu-test5.yaml", "imex-test1.yaml"]
    assert set(differ) == {"gpu-test6.yaml", "gpu-test-vfiopci.yaml"}
    assert all(a.strip() == b.strip() for a, b in differ["gpu-test6.yaml"])  # indentation inside a block scalar
    assert differ["gpu-test-vfiopci.yaml"] == [("  namespace: gpu-test-vfiopci", "  namespace: gpu-test-vfio")]


def test_the_before_and_after_in_the_docs_is_what_the_command_prints(shared):
    docs = (REPO / "docs" / "migrate.md").read_text(encoding="utf-8")
    block = docs.split("```console\n", 1)[1].split("```", 1)[0]
    command, shown = block.split("\n", 1)
    name = command.split()[-1]
    out, err = io.StringIO(), io.StringIO()
    cwd = os.getcwd()
    os.chdir(shared / "realworld" / "kubernetes-sigs__dra-driver-nvidia-gpu")
    try:
        code = main(["migrate", "--to", "v1", "--diff", name], out, err)
    finally:
        os.chdir(cwd)
    assert code == 0 and out.getvalue() + err.getvalue() == shown
