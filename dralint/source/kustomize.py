"""Kustomize's files that are not manifests: ``kustomization.yaml`` itself, and what it uses as patches.

A strategic-merge patch looks like an object but holds only the fields it changes, so judged as
a whole object it would miss every required field; a JSON 6902 patch is a list of operations.
Neither is ever applied as it is, so neither is linted (kustomize's output is: ``kustomize build
DIR | dralint -``). Files named by ``resources`` and ``components`` are whole objects and are.
"""
from __future__ import annotations

import os
from typing import Any, Iterable, Iterator

KUSTOMIZATION_NAMES = ("kustomization.yaml", "kustomization.yml", "Kustomization")
KUSTOMIZATION = "kustomization"
PATCH = "kustomize-patch"


def non_manifests(files: Iterable[str]) -> dict[str, str]:
    """``file → why`` for the given files that are kustomizations or files a kustomization uses as
    patches (or as its configuration); kustomizations are looked for among the files and in their
    folders, so a patch named alone (by pre-commit) is still recognised."""
    files = [f for f in files if f != "-"]
    by_real = {os.path.realpath(f): f for f in files}
    found: dict[str, str] = {}
    for kustomization in _kustomizations(files):
        if kustomization in by_real:
            found[by_real[kustomization]] = KUSTOMIZATION
        folder = os.path.dirname(kustomization)
        for used in _patch_paths(_read(kustomization)):
            if "\0" in used:   # names no file (and os.path refuses it)
                continue
            real = os.path.realpath(os.path.join(folder, used))
            if real in by_real:
                found.setdefault(by_real[real], PATCH)
    return found


def _kustomizations(files: list[str]) -> list[str]:
    """Real paths of the kustomization files among ``files`` and in their folders."""
    folders = dict.fromkeys(os.path.dirname(os.path.realpath(f)) for f in files)
    return [os.path.join(folder, name) for folder in folders for name in KUSTOMIZATION_NAMES
            if os.path.isfile(os.path.join(folder, name))]


def _read(path: str) -> Any:
    import yaml  # only where a kustomization is met

    try:
        with open(path, encoding="utf-8") as handle:
            return yaml.load(handle, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except (OSError, UnicodeDecodeError, yaml.YAMLError):  # kustomize's to judge, not ours
        return None


def _patch_paths(kustomization: Any) -> Iterator[str]:
    """The files a kustomization uses as patches, replacements, configurations or Helm values."""
    if not isinstance(kustomization, dict):
        return
    for entry in _list(kustomization.get("patchesStrategicMerge")) + _list(kustomization.get("configurations")):
        if isinstance(entry, str) and "\n" not in entry:  # an inline patch is YAML text, not a path
            yield entry
    for key in ("patches", "patchesJson6902", "replacements"):
        for entry in _list(kustomization.get(key)):
            if isinstance(entry, dict) and isinstance(entry.get("path"), str):
                yield entry["path"]
    for chart in _list(kustomization.get("helmCharts")):
        if isinstance(chart, dict) and isinstance(chart.get("valuesFile"), str):
            yield chart["valuesFile"]
    openapi = kustomization.get("openapi")
    if isinstance(openapi, dict) and isinstance(openapi.get("path"), str):
        yield openapi["path"]


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []
