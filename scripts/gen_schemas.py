#!/usr/bin/env python3
"""Generate dralint's per-release JSON Schemas from the Kubernetes OpenAPI v3 documents.

Reads ``<openapi>/by-release/<release>/resource.k8s.io_<version>.json`` for every release folder
and writes, for each top-level kind a release serves in that version,
``<out>/<release>/<version>/<Kind>.json``: a standalone JSON Schema (draft 2020-12) holding only
the definitions the kind reaches, plus ``<out>/index.json`` (release -> apiVersion -> kinds).

The translation follows what the API server's decoder (with ``fieldValidation=Strict``) accepts,
not what the OpenAPI document literally says; see docs/schemas.md.

Usage::

    python scripts/gen_schemas.py                # regenerate schemas/
    python scripts/gen_schemas.py --check        # exit 1 and name the stale files
    python scripts/gen_schemas.py --openapi DIR --out DIR
"""
from __future__ import annotations

import argparse
import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

GROUP = "resource.k8s.io"
JSON_SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"
REPO_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_OPENAPI = REPO_ROOT.parent / "shared" / "k8s-openapi"
DEFAULT_OUT = REPO_ROOT / "schemas"
INDEX_NAME = "index.json"

_RELEASE_DIR = re.compile(r"^1\.(\d+)$")
_DOCUMENT_FILE = re.compile(r"^resource\.k8s\.io_(v\d+(?:(?:alpha|beta)\d+)?)\.json$")
_COMPONENTS_PREFIX = "#/components/schemas/"
# Only DRA definitions keep their descriptions: the apimachinery ones (ObjectMeta, ...) are the
# same prose in every one of the ~100 files and would double the size of schemas/.
_DESCRIBED_PREFIX = "io.k8s.api.resource."
# JSON decoding into a Go int32/int64 fails outside these bounds.
_INT_RANGES = {"int32": (-(2**31), 2**31 - 1), "int64": (-(2**63), 2**63 - 1)}
# Keys that carry no validation meaning for the decoder (documentation, defaults, merge hints).
_IGNORED_KEYS = frozenset({"description", "default", "x-kubernetes-group-version-kind", "x-kubernetes-list-type",
                           "x-kubernetes-list-map-keys", "x-kubernetes-map-type", "x-kubernetes-patch-strategy",
                           "x-kubernetes-patch-merge-key", "x-kubernetes-unions"})
_UNDERSTOOD_KEYS = _IGNORED_KEYS | {"type", "format", "properties", "required", "additionalProperties", "items",
                                    "allOf", "$ref", "oneOf", "enum", "x-kubernetes-preserve-unknown-fields"}


class UnsupportedSchema(ValueError):
    """An OpenAPI construct this generator does not know how to translate faithfully."""


@dataclass(frozen=True)
class KindSchema:
    """One generated file: the schema of ``kind`` in ``version`` as served by ``release``."""

    release: str
    version: str
    kind: str
    schema: dict[str, Any]

    @property
    def relative_path(self) -> Path:
        return Path(self.release) / self.version / f"{self.kind}.json"


def release_key(release: str) -> tuple[int, ...]:
    """Sort key for ``1.9`` < ``1.10``."""
    return tuple(int(part) for part in release.split("."))


def find_documents(openapi_dir: Path) -> dict[str, dict[str, Path]]:
    """release -> version -> path of its OpenAPI document, from ``<openapi_dir>/by-release``."""
    found: dict[str, dict[str, Path]] = {}
    for release_dir in sorted((openapi_dir / "by-release").iterdir()):
        if not (release_dir.is_dir() and _RELEASE_DIR.match(release_dir.name)):
            continue
        for doc in sorted(release_dir.iterdir()):
            match = _DOCUMENT_FILE.match(doc.name)
            if match:
                found.setdefault(release_dir.name, {})[match.group(1)] = doc
    return dict(sorted(found.items(), key=lambda item: release_key(item[0])))


# Releases without published OpenAPI documents of their own yet, made from an earlier release's:
# release -> (the release whose documents describe its types, the versions it no longer serves).
# 1.38 (code freeze 2026-11-19, due 2026-12-16): v1beta1 is no longer served there (v1beta2
# follows in 1.39); the other versions keep 1.37's types, since no OpenAPI document or type file
# of the release-1.38 branch was available to compare with. See docs/schemas.md, "1.38".
DERIVED_RELEASES: dict[str, tuple[str, frozenset[str]]] = {"1.38": ("1.37", frozenset({"v1beta1"}))}


def with_derived(found: dict[str, dict[str, Path]]) -> dict[str, dict[str, Path]]:
    """``found`` plus the derived releases whose base release is present (an own document wins)."""
    out = dict(found)
    for release, (base, dropped) in DERIVED_RELEASES.items():
        if release not in out and base in found:
            out[release] = {version: path for version, path in found[base].items() if version not in dropped}
    return dict(sorted(out.items(), key=lambda item: release_key(item[0])))


def top_level_kinds(components: Mapping[str, Any], version: str) -> dict[str, str]:
    """kind -> definition name for the objects the document's group-version serves (no ``*List``)."""
    kinds: dict[str, str] = {}
    for name, definition in components.items():
        if not name.startswith(_DESCRIBED_PREFIX):
            continue  # meta/v1 Status, DeleteOptions, WatchEvent are listed under every GVK
        for gvk in definition.get("x-kubernetes-group-version-kind", ()):
            if gvk.get("group") == GROUP and gvk.get("version") == version and not gvk["kind"].endswith("List"):
                kinds[gvk["kind"]] = name
    return dict(sorted(kinds.items()))


class Translator:
    """Translates OpenAPI v3 definitions of one document into JSON Schema ``$defs`` entries."""

    def __init__(self, components: Mapping[str, Any]) -> None:
        self._components = components

    def kind_schema(self, release: str, version: str, kind: str, definition_name: str) -> dict[str, Any]:
        """The standalone strict schema of one top-level kind."""
        definition = self._components[definition_name]
        referenced: set[str] = set()
        root = self._translate(definition, definition_name, referenced, nullable=False)
        api_version = f"{GROUP}/{version}"
        root["properties"]["apiVersion"] = {"const": api_version}
        root["properties"]["kind"] = {"const": kind}
        root["required"] = ["apiVersion", "kind", *definition.get("required", ())]
        defs: dict[str, Any] = {}
        pending = sorted(referenced)
        while pending:
            name = pending.pop()
            if name in defs:
                continue
            found: set[str] = set()
            defs[name] = self._translate(self._definition(name), name, found, nullable=True)
            pending.extend(sorted(found - defs.keys()))
        return {
            "$schema": JSON_SCHEMA_DIALECT,
            "title": f"{api_version} {kind} (Kubernetes {release})",
            **root,
            "$defs": dict(sorted(defs.items())),
        }

    def _definition(self, name: str) -> Mapping[str, Any]:
        try:
            return self._components[name]
        except KeyError:
            raise UnsupportedSchema(f"reference to missing definition {name!r}") from None

    def _ref(self, ref: str, referenced: set[str]) -> dict[str, Any]:
        if not ref.startswith(_COMPONENTS_PREFIX):
            raise UnsupportedSchema(f"reference outside components/schemas: {ref!r}")
        name = ref[len(_COMPONENTS_PREFIX):]
        self._definition(name)
        referenced.add(name)
        return {"$ref": f"#/$defs/{name}"}

    def _translate(self, node: Mapping[str, Any], owner: str, referenced: set[str], *,
                   nullable: bool) -> dict[str, Any]:
        """Translate one schema node; ``owner`` is the definition it belongs to (for messages)."""
        unknown = set(node) - _UNDERSTOOD_KEYS
        if unknown:
            raise UnsupportedSchema(f"{owner}: unsupported OpenAPI keys {sorted(unknown)}")
        out: dict[str, Any] = {}
        if owner.startswith(_DESCRIBED_PREFIX) and "description" in node:
            out["description"] = node["description"]
        out.update(self._shape(node, owner, referenced))
        if nullable and "type" in out:
            # encoding/json treats null as "leave unset" for every Go type, so the decoder accepts
            # null wherever a value may stand (fields, list items, map values).
            out["type"] = sorted({*_as_list(out["type"]), "null"})
            if "enum" in out:
                out["enum"] = [*out["enum"], None]
        return out

    def _shape(self, node: Mapping[str, Any], owner: str, referenced: set[str]) -> dict[str, Any]:
        if "$ref" in node:
            return self._ref(node["$ref"], referenced)
        if "allOf" in node:
            # kube-openapi wraps a $ref that has siblings (description, default) in a one-element allOf.
            parts = node["allOf"]
            if len(parts) != 1 or set(parts[0]) != {"$ref"}:
                raise UnsupportedSchema(f"{owner}: allOf other than a wrapped $ref")
            return self._ref(parts[0]["$ref"], referenced)
        if "oneOf" in node:
            shape: dict[str, Any] = {"type": _one_of_types(node["oneOf"], owner)}
            if owner == _QUANTITY_DEFINITION:
                shape["format"] = "quantity"
            return shape
        kind = node.get("type")
        if kind == "object":
            return self._object(node, owner, referenced)
        if kind == "array":
            return {"type": "array", "items": self._translate(node["items"], owner, referenced, nullable=True)}
        if kind in ("string", "integer", "number", "boolean"):
            return _scalar(node, kind, owner)
        if kind is None and node.get("x-kubernetes-preserve-unknown-fields"):
            return {}
        raise UnsupportedSchema(f"{owner}: unsupported type {kind!r}")

    def _object(self, node: Mapping[str, Any], owner: str, referenced: set[str]) -> dict[str, Any]:
        if "properties" in node:
            out: dict[str, Any] = {
                "type": "object",
                "properties": {name: self._translate(prop, owner, referenced, nullable=True)
                               for name, prop in sorted(node["properties"].items())},
            }
            if not node.get("x-kubernetes-preserve-unknown-fields"):
                out["additionalProperties"] = False  # what fieldValidation=Strict enforces
            if node.get("required"):
                out["required"] = list(node["required"])
            return out
        if "additionalProperties" in node:
            return {"type": "object",
                    "additionalProperties": self._translate(node["additionalProperties"], owner, referenced,
                                                            nullable=True)}
        # A bare "type: object" is how kube-openapi spells types with their own JSON decoding
        # (runtime.RawExtension, meta/v1 FieldsV1, Patch): the decoder keeps any JSON value.
        return {}


def _as_list(kind: str | list[str]) -> list[str]:
    return [kind] if isinstance(kind, str) else list(kind)


# apimachinery's Quantity decodes its own JSON: a number, or a string in the quantity grammar; any
# other string fails the decoding (HTTP 400), so the schema names the format for the validator.
_QUANTITY_DEFINITION = "io.k8s.apimachinery.pkg.api.resource.Quantity"


def _one_of_types(options: list[Mapping[str, Any]], owner: str) -> list[str]:
    """``oneOf`` of bare primitive types as one type list.

    kube-openapi writes Quantity as string | number and IntOrString as integer | string.
    """
    kinds = [option.get("type") for option in options]
    if any(set(option) != {"type"} for option in options) or len(set(kinds)) != len(kinds):
        raise UnsupportedSchema(f"{owner}: oneOf other than distinct bare types")
    return sorted(kinds)


def _scalar(node: Mapping[str, Any], kind: str, owner: str) -> dict[str, Any]:
    out: dict[str, Any] = {"type": kind}
    fmt = node.get("format")
    if fmt in _INT_RANGES and kind == "integer":
        out["minimum"], out["maximum"] = _INT_RANGES[fmt]
    elif fmt == "date-time" and kind == "string":
        out["format"] = "date-time"  # meta/v1 Time: the decoder parses RFC 3339 and fails otherwise
    elif fmt is not None:
        raise UnsupportedSchema(f"{owner}: unsupported format {fmt!r} for type {kind!r}")
    if "enum" in node:
        out["enum"] = list(node["enum"])
    return out


def build(openapi_dir: Path) -> tuple[list[KindSchema], dict[str, dict[str, list[str]]]]:
    """Every kind schema of every release, and the index release -> apiVersion -> kinds."""
    schemas: list[KindSchema] = []
    index: dict[str, dict[str, list[str]]] = {}
    for release, documents in with_derived(find_documents(openapi_dir)).items():
        for version, path in sorted(documents.items()):
            components = json.loads(path.read_text(encoding="utf-8"))["components"]["schemas"]
            kinds = top_level_kinds(components, version)
            if not kinds:
                continue
            translator = Translator(components)
            index.setdefault(release, {})[f"{GROUP}/{version}"] = list(kinds)
            for kind, definition_name in kinds.items():
                schemas.append(KindSchema(release, version, kind,
                                          translator.kind_schema(release, version, kind, definition_name)))
    return schemas, index


def render(value: Any) -> str:
    """Deterministic JSON text: sorted keys, two-space indent, trailing newline."""
    return json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def expected_files(openapi_dir: Path) -> dict[Path, str]:
    """Relative path -> text of every file the generator owns in the output folder."""
    schemas, index = build(openapi_dir)
    files = {schema.relative_path: render(schema.schema) for schema in schemas}
    files[Path(INDEX_NAME)] = render(index)
    return files


def existing_files(out_dir: Path) -> set[Path]:
    """The generated-looking files present in ``out_dir`` (index.json and <release>/<version>/*.json)."""
    if not out_dir.is_dir():
        return set()
    found = {path.relative_to(out_dir) for path in out_dir.glob("*/*/*.json")
             if _RELEASE_DIR.match(path.relative_to(out_dir).parts[0])}
    if (out_dir / INDEX_NAME).is_file():
        found.add(Path(INDEX_NAME))
    return found


def stale_files(out_dir: Path, expected: Mapping[Path, str]) -> list[str]:
    """Human-readable list of differences between ``out_dir`` and ``expected``."""
    problems: list[str] = []
    for rel, text in sorted(expected.items()):
        target = out_dir / rel
        if not target.is_file():
            problems.append(f"missing: {rel}")
        elif target.read_text(encoding="utf-8") != text:
            problems.append(f"out of date: {rel}")
    for rel in sorted(existing_files(out_dir) - expected.keys()):
        problems.append(f"not generated (delete it): {rel}")
    return problems


def write(out_dir: Path, expected: Mapping[Path, str]) -> int:
    """Write ``expected`` into ``out_dir``, removing generated files that are no longer produced."""
    changed = 0
    for rel in existing_files(out_dir) - expected.keys():
        (out_dir / rel).unlink()
        changed += 1
    for rel, text in expected.items():
        target = out_dir / rel
        if target.is_file() and target.read_text(encoding="utf-8") == text:
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
        changed += 1
    for folder in sorted(out_dir.glob("*/*"), reverse=True) + sorted(out_dir.glob("*"), reverse=True):
        if folder.is_dir() and not any(folder.iterdir()):
            folder.rmdir()  # a release or version that no longer has files
    return changed


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point; returns the exit status."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--openapi", type=Path, default=DEFAULT_OPENAPI,
                        help="folder holding by-release/<release>/resource.k8s.io_<version>.json "
                             "(default: ../shared/k8s-openapi next to the repository)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="output folder (default: schemas/)")
    parser.add_argument("--check", action="store_true",
                        help="do not write; exit 1 and list the files that differ from what would be written")
    args = parser.parse_args(argv)
    if not (args.openapi / "by-release").is_dir():
        print(f"gen_schemas: no by-release/ folder under {args.openapi}", file=sys.stderr)
        return 2
    try:
        expected = expected_files(args.openapi)
    except (UnsupportedSchema, KeyError, ValueError) as err:
        print(f"gen_schemas: cannot translate the OpenAPI documents: {err}", file=sys.stderr)
        return 2
    if args.check:
        problems = stale_files(args.out, expected)
        for line in problems:
            print(f"gen_schemas: {line}", file=sys.stderr)
        if problems:
            print("gen_schemas: schemas are stale; run `python scripts/gen_schemas.py`", file=sys.stderr)
            return 1
        print(f"gen_schemas: {len(expected)} files up to date in {args.out}")
        return 0
    changed = write(args.out, expected)
    print(f"gen_schemas: wrote {len(expected)} files to {args.out} ({changed} changed)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
