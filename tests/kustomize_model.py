"""Render a kustomization as ``kubectl kustomize`` does, for the features webhook/deploy and its docs use.

``resources`` (files of one or more documents, and folders holding a Kustomization, rendered
first), ``components`` (folders holding a ``kind: Component``: after the resources, each applies
its own resources, generators and patches to everything accumulated so far), ``configMapGenerator``
(``files``, ``namespace``, ``options.labels``, ``options.disableNameSuffixHash: true``),
``patches`` given inline, either as a JSON 6902 list of ``add`` operations with a ``target`` of
group, version, kind and name, or as a strategic merge patch (an object naming its own target,
merged by the merge keys of :mod:`apply_model`, the patch's list elements first; a patch whose
target is missing is an error, as in kustomize), and ``images`` (``name``, ``newName``, ``newTag``, ``digest``, on the containers of
Deployments). In that order, as kustomize runs them. Anything else in a kustomization is refused
with an error rather than ignored, so a file that starts using a new feature fails the tests here
until this model learns it. ``kubectl kustomize`` (kustomize v5, shipped inside kubectl) renders
every folder to the same objects where it is installed: tests/webhook/test_webhook_upgrade.py checks that.
"""
from __future__ import annotations

import copy
import shutil
import subprocess
from pathlib import Path
from typing import Any

import yaml

from apply_model import FieldPath, merge_key, strategic_merge

KNOWN_FIELDS = {"apiVersion", "kind", "resources", "components", "configMapGenerator", "patches", "images"}
KINDS = {"Kustomization": "kustomize.config.k8s.io/v1beta1", "Component": "kustomize.config.k8s.io/v1alpha1"}


def load_documents(path: Path) -> list[dict[str, Any]]:
    """Every non-empty YAML document of ``path``."""
    return [d for d in yaml.safe_load_all(path.read_text(encoding="utf-8")) if d is not None]


def render(folder: Path) -> list[dict[str, Any]]:
    """The objects ``kubectl kustomize folder`` prints (order aside)."""
    return _build(folder, [], "Kustomization")


def _build(folder: Path, accumulated: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    """``folder``'s kustomization (of ``kind``) run on ``accumulated``: a Component's on what the
    kustomization listing it has so far, a Kustomization's on nothing."""
    kustomization = load_documents(folder / "kustomization.yaml")[0]
    found = kustomization.get("kind", "Kustomization")
    if found != kind or kustomization.get("apiVersion") != KINDS[kind]:
        raise ValueError(f"{folder}: a {kind} ({KINDS[kind]}) expected, found {found}")   # kustomize refuses it
    unknown = set(kustomization) - KNOWN_FIELDS
    if unknown:
        raise NotImplementedError(f"{folder}: kustomization fields this model does not render: {sorted(unknown)}")
    out = copy.deepcopy(accumulated)
    for resource in kustomization.get("resources", []):
        path = folder / resource
        out.extend(render(path) if path.is_dir() else load_documents(path))
    for component in kustomization.get("components", []):
        out = _build(folder / component, out, "Component")
    out.extend(_config_map(folder, gen) for gen in kustomization.get("configMapGenerator", []))
    for patch in kustomization.get("patches", []):
        _patch(out, patch)
    for image in kustomization.get("images", []):
        _image(out, image)
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
    operations = yaml.safe_load(patch["patch"])
    if isinstance(operations, dict) and set(patch) == {"patch"}:
        _strategic_merge_patch(objects, operations)
        return
    target = patch.get("target", {})
    if set(patch) != {"target", "patch"} or set(target) - {"group", "version", "kind", "name"}:
        raise NotImplementedError(f"patch form not rendered by this model: {sorted(patch)}, target {sorted(target)}")
    if not isinstance(operations, list):
        raise NotImplementedError("only JSON 6902 patches (a list of operations) take a target in this model")
    matched = [obj for obj in objects if _targets(target, obj)]
    if not matched:
        raise ValueError(f"patch target matches nothing: {target}")   # kustomize ignores it silently; we do not
    for obj in matched:
        for op in operations:
            _json6902(obj, op)


def _strategic_merge_patch(objects: list[dict[str, Any]], patch: dict[str, Any]) -> None:
    """A patch naming its target by its own apiVersion, kind, namespace and name."""
    at = [i for i, obj in enumerate(objects) if identity(obj) == identity(patch)]
    if len(at) != 1:
        raise ValueError(f"no resource matches strategic merge patch {identity(patch)}")   # kustomize's words
    merged = strategic_merge(objects[at[0]], patch, patch["kind"])
    _patch_first(merged, patch, patch["kind"], ())
    objects[at[0]] = merged


def _patch_first(merged: Any, patch: Any, kind: str, path: FieldPath) -> None:
    """kustomize's order of a list merged by key (it sends no ``$setElementOrder``): the patch's
    elements first, in its order, then the others in theirs."""
    if not isinstance(patch, dict) or not isinstance(merged, dict):
        return
    for key, value in patch.items():
        mkey = merge_key(kind, (*path, key))
        if mkey and isinstance(value, list) and isinstance(merged.get(key), list):
            order = [item[mkey] for item in value]
            merged[key].sort(key=lambda item: order.index(item[mkey]) if item[mkey] in order else len(order))
            for item in merged[key]:
                _patch_first(item, next((p for p in value if p[mkey] == item[mkey]), None), kind, (*path, key))
        elif isinstance(value, dict):
            _patch_first(merged.get(key), value, kind, (*path, key))


def _image(objects: list[dict[str, Any]], image: dict[str, Any]) -> None:
    """``images:``: the containers whose image is ``name`` (any tag or digest) get the new name, and the
    new digest, else the new tag, else the tag or digest they had."""
    if set(image) - {"name", "newName", "newTag", "digest"}:
        raise NotImplementedError(f"images entry not rendered by this model: {sorted(image)}")
    for obj in objects:
        if obj["kind"] != "Deployment":
            continue
        pod = obj["spec"]["template"]["spec"]
        for container in pod.get("containers", []) + pod.get("initContainers", []):
            name, suffix = _split_image(container["image"])
            if name != image["name"]:
                continue
            if "digest" in image:
                suffix = "@" + image["digest"]
            elif "newTag" in image:
                suffix = ":" + str(image["newTag"])
            container["image"] = image.get("newName", name) + suffix


def _split_image(image: str) -> tuple[str, str]:
    """An image's name and its tag or digest (with its ``:`` or ``@``); a registry's port is in the name."""
    if "@" in image:
        name, digest = image.split("@", 1)
        return name, "@" + digest
    name, colon, tag = image.rpartition(":")
    if not colon or "/" in tag:
        return image, ""
    return name, ":" + tag


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
