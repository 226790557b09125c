"""The rule catalog: one YAML file per rule in ``rules/``, read once per process.

The engine takes every rule's name, category and default severity from here, so a check only
says *which* rule it found; docs and ``--explain`` are generated from the same files.

Parsing the 160-odd YAML files took 40 ms of every start; ``rules/index.json`` holds the same
mappings as JSON, each under the length and checksums of its file's bytes (:func:`digest`;
``scripts/gen_rule_index.py`` writes it). A file whose digest is not in the index is read from its
YAML, so an index that is behind the files is slower, never wrong; a test keeps the shipped index
fresh.
"""
from __future__ import annotations

import json
import re
import zlib
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Mapping

from .findings import Category, Severity
from .fixes import Safety
from .org_policy import OrgPolicy
from .resources import data_path

RULE_ID = re.compile(r"^DRA\d{3}$")
RULE_NAME = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
_FIELDS = {"id", "name", "category", "severity", "cluster_state", "summary", "rationale", "fix", "autofix", "kubernetes",
           "api_server", "examples"}
_EXAMPLE_FIELDS = {"title", "verdict", "manifest", "old", "cluster", "kube_version", "feature_gates", "options", "fixed"}


class CatalogError(ValueError):
    """A catalog file that does not follow rules/README.md."""


@dataclass(frozen=True)
class Example:
    title: str
    verdict: str  # "good" or "bad"
    manifest: str
    old: str | None = None
    cluster: str | None = None
    kube_version: str | None = None
    feature_gates: Mapping[str, bool] = field(default_factory=dict)
    options: Mapping[str, Any] = field(default_factory=dict)   # Options fields; org_policy an OrgPolicy
    fixed: str | None = None  # a bad example of a rule with a fix: the manifest once its fix is applied


@dataclass(frozen=True)
class Rule:
    id: str
    name: str
    category: Category
    severity: Severity
    summary: str
    rationale: str
    fix: str
    kubernetes: Mapping[str, Any]
    api_server: str
    examples: tuple[Example, ...]
    source: str
    autofix: Safety | None = None  # the rule's findings may carry a fix this safe (None: the rule has no fix)
    # Its findings exist only because other objects were given (the run's, the cluster's): they depend on
    # a state the judged object's author does not own, which may change or arrive later. The webhook's
    # `feasibility` switch governs these rules.
    cluster_state: bool = False


INDEX = "index.json"


def read_rule_file(path: Path) -> Any:
    """The mapping a rule file holds, parsed from its YAML."""
    import yaml  # only for a rule file the index does not hold (rules/index.json is read instead)

    # libyaml's loader: the pure-Python one takes half a second for the whole catalog.
    try:
        return yaml.load(path.read_text(encoding="utf-8"), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise CatalogError(f"{path}: {exc}") from exc


def digest(data: bytes) -> str:
    """The key of a rule file's mapping in the index: the length and two checksums of its bytes.

    Not a cryptographic hash: the index is the project's own, and ``hashlib`` (OpenSSL) costs
    two milliseconds of every start; 64 bits of checksum tell an edited rule file from its entry.
    """
    return f"{len(data)}-{zlib.crc32(data):08x}{zlib.adler32(data):08x}"


def _load_rule(path: Path, index: Mapping[str, Any] | None = None) -> Rule:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise CatalogError(f"{path}: {exc}") from exc
    raw = (index or {}).get(digest(data))
    return _rule(path, read_rule_file(path) if raw is None else raw)


def _read_index(folder: Path) -> Mapping[str, Any]:
    """The index's mappings by file digest; empty when the folder has none (a folder of tests' own)."""
    try:
        index = json.loads((folder / INDEX).read_bytes())
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        raise CatalogError(f"{folder / INDEX}: {exc} (regenerate it: python scripts/gen_rule_index.py)") from exc
    return index if isinstance(index, dict) else {}


def _rule(path: Path, raw: Any) -> Rule:
    if not isinstance(raw, dict):
        raise CatalogError(f"{path}: a rule file holds one mapping")
    unknown = set(raw) - _FIELDS
    missing = {"id", "name", "category", "severity", "summary", "rationale", "fix", "examples"} - set(raw)
    if unknown or missing:
        raise CatalogError(f"{path}: unknown keys {sorted(unknown)}; missing keys {sorted(missing)}")
    if not RULE_ID.match(str(raw["id"])) or not RULE_NAME.match(str(raw["name"])):
        raise CatalogError(f"{path}: id must be DRA + 3 digits and name kebab-case")
    if not path.stem.startswith(f"{raw['id']}-{raw['name']}"):
        raise CatalogError(f"{path}: the file must be named {raw['id']}-{raw['name']}.yaml")
    examples = []
    for i, ex in enumerate(raw.get("examples") or []):
        if not isinstance(ex, dict) or set(ex) - _EXAMPLE_FIELDS or ex.get("verdict") not in ("good", "bad") \
                or not isinstance(ex.get("manifest"), str):
            raise CatalogError(f"{path}: examples[{i}] needs title, verdict good|bad and a manifest string")
        examples.append(Example(title=str(ex.get("title", f"example {i}")), verdict=ex["verdict"], manifest=ex["manifest"],
                                old=ex.get("old"), cluster=ex.get("cluster"), kube_version=ex.get("kube_version"),
                                feature_gates=ex.get("feature_gates") or {}, options=_options(ex.get("options") or {}),
                                fixed=ex.get("fixed")))
    if raw.get("autofix") not in (None, "safe", "unsafe"):
        raise CatalogError(f"{path}: autofix must be safe or unsafe")
    if not isinstance(raw.get("cluster_state", False), bool):
        raise CatalogError(f"{path}: cluster_state must be true or false")
    if any(ex.fixed is not None for ex in examples) and raw.get("autofix") is None:
        raise CatalogError(f"{path}: an example shows a fix (`fixed`), but the rule declares no autofix")
    try:
        return Rule(id=raw["id"], name=raw["name"], category=Category(raw["category"]), severity=Severity(raw["severity"]),
                    summary=str(raw["summary"]).strip(), rationale=str(raw["rationale"]).strip(), fix=str(raw["fix"]).strip(),
                    kubernetes=raw.get("kubernetes") or {}, api_server=str(raw.get("api_server") or "").strip(),
                    examples=tuple(examples), source=path.name,
                    autofix=Safety(raw["autofix"]) if raw.get("autofix") else None,
                    cluster_state=raw.get("cluster_state", False))
    except ValueError as exc:
        raise CatalogError(f"{path}: {exc}") from exc


def _options(raw: Mapping[str, Any]) -> Mapping[str, Any]:
    """An example's options as ``Options`` takes them: an ``org_policy`` is written as a mapping of its fields."""
    if "org_policy" not in raw:
        return raw
    return {**raw, "org_policy": OrgPolicy.from_fields(raw["org_policy"])}


@dataclass(frozen=True)
class Catalog:
    rules: Mapping[str, Rule]

    def get(self, rule_id: str) -> Rule:
        return self.rules[rule_id]

    def resolve(self, token: str) -> Rule | None:
        """A rule by id (any case) or by name."""
        token = token.strip()
        if token.upper() in self.rules:
            return self.rules[token.upper()]
        return next((r for r in self.rules.values() if r.name == token), None)

    def __iter__(self):
        return iter(sorted(self.rules.values(), key=lambda r: r.id))


@lru_cache(maxsize=4)
def load_catalog(folder: Path | None = None) -> Catalog:
    """Read every ``DRAnnn-name.yaml`` in the catalog folder; ids and names must be unique."""
    folder = folder or data_path("rules")
    index = _read_index(folder)
    rules: dict[str, Rule] = {}
    names: set[str] = set()
    for path in sorted(folder.glob("DRA*.yaml")):
        rule = _load_rule(path, index)
        if rule.id in rules or rule.name in names:
            raise CatalogError(f"{path}: rule id {rule.id} or name {rule.name} is used twice")
        rules[rule.id] = rule
        names.add(rule.name)
    return Catalog(rules)
