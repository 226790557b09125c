"""Render a kustomization as ``kubectl kustomize`` does, for the features webhook/deploy uses.

``resources`` (files of one or more documents, and folders holding a kustomization, rendered
first), ``configMapGenerator`` (``files``, ``namespace``, ``options.labels``,
``options.disableNameSuffixHash: true``) and ``patches`` given inline as a JSON 6902 list, with a
``target`` of group, version, kind and name. Anything else in a kustomization is refused with an
error rather than ignored, so a file that starts using a new feature fails the tests here until
this model learns it. ``kubectl kustomize`` (kustomize v5, shipped inside kubectl) renders every
folder to the same objects where it is installed: tests/test_webhook_upgrade.py checks that.
"""
from __future__ import annotations

import copy
import shutil
import subprocess
from pathlib import Path
from typing import Any

import yaml

KNOWN_FIELDS = {"apiVersion", "kind", "resources", "configMapGenerator", "patches"}


def load_documents(path: Path) -> list[dict[str, Any]]:
    """Every non-empty YAML document of ``path``."""
    return [d for d in yaml.safe_load_all(path.read_text(encoding="utf-8")) if d is not None]


def render(folder: Path) -> list[dict[str, Any]]:
    """The objects ``kubectl kustomize folder`` prints (order aside)."""
    kustomization = load_documents(folder / "kustomization.yaml")[0]
    unknown = set(kustomization) - KNOWN_FIELDS
    if unknown:
        raise NotImplementedError(f"{folder}: kustomization fields this model does not render: {sorted(unknown)}")
    out: list[dict[str, Any]] = []
    for resource in kustomization.get("resources", []):
        path = folder / resource
        out.extend(render(path) if path.is_dir() else load_documents(path))
    out.extend(_config_map(folder, gen) for gen in kustomization.get("configMapGenerator", []))
    for patch in kustomization.get("patches", []):
        _patch(out, patch)
    keys = [identity(obj) for obj in out]
    duplicates = {k for k in keys if keys.count(k) > 1}
    if duplicates:
        raise ValueError(f"{folder}: objects defined twice: {sorted(duplicates)}")   # kustomize refuses them too
    return out


def identity(obj: dict[str, Any]) -> tuple[str, str, str, str]:
    """apiVersion, kind, namespace ("" for cluster-scoped) and name: what kubectl applies an object by."""
    meta = obj["metadata"]
    return obj["apiVersion"], obj["kind"], meta.get("namespace", ""), meta["name"]


def kubectl_kustomize(folder: Path) -> list[dict[str, Any]] | None:
    """The real rendering by ``kubectl kustomize``; None where kubectl is not installed."""
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        return None
    text = subprocess.run([kubectl, "kustomize", str(folder)], capture_output=True, text=True, check=True,
                          timeout=60).stdout
    return [d for d in yaml.safe_load_all(text) if d is not None]


def _config_map(folder: Path, gen: dict[str, Any]) -> dict[str, Any]:
    unknown = set(gen) - {"name", "namespace", "files", "options"}
    options = gen.get("options", {})
    hashed = options.get("disableNameSuffixHash") is not True
    if unknown or set(options) - {"disableNameSuffixHash", "labels"} or hashed:
        # A hashed name would need kustomize's hash and the rewriting of every reference to it.
        raise NotImplementedError(f"{folder}: configMapGenerator {gen['name']}: not rendered by this model")
    metadata: dict[str, Any] = {"name": gen["name"]}
    if "namespace" in gen:
        metadata["namespace"] = gen["namespace"]
    if "labels" in options:
        metadata["labels"] = dict(options["labels"])
    data = {Path(f).name: (folder / f).read_text(encoding="utf-8") for f in gen.get("files", [])}
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata, "data": data}


def _patch(objects: list[dict[str, Any]], patch: dict[str, Any]) -> None:
    target = patch["target"]
    if set(patch) != {"target", "patch"} or set(target) - {"group", "version", "kind", "name"}:
        raise NotImplementedError(f"patch form not rendered by this model: {sorted(patch)}, target {sorted(target)}")
    operations = yaml.safe_load(patch["patch"])
    if not isinstance(operations, list):
        raise NotImplementedError("only JSON 6902 patches (a list of operations) are rendered by this model")
    matched = [obj for obj in objects if _targets(target, obj)]
    if not matched:
        raise ValueError(f"patch target matches nothing: {target}")   # kustomize ignores it silently; we do not
    for obj in matched:
        for op in operations:
            _json6902(obj, op)


def _targets(target: dict[str, Any], obj: dict[str, Any]) -> bool:
    group, _, version = obj["apiVersion"].rpartition("/")
    return (target.get("group", group) == group and target.get("version", version) == version
            and target.get("kind", obj["kind"]) == obj["kind"] and target.get("name", obj["metadata"]["name"])
            == obj["metadata"]["name"])


def _json6902(obj: dict[str, Any], op: dict[str, Any]) -> None:
    if op["op"] != "add":
        raise NotImplementedError(f"JSON 6902 op {op['op']!r} is not rendered by this model")
    *parents, last = [p.replace("~1", "/").replace("~0", "~") for p in op["path"].split("/")[1:]]
    node: Any = obj
    for part in parents:
        node = node[int(part)] if isinstance(node, list) else node[part]
    value = copy.deepcopy(op["value"])
    if isinstance(node, list):
        node.insert(len(node) if last == "-" else int(last), value)
    else:
        node[last] = value
