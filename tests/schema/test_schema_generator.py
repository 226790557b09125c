"""scripts/gen_schemas.py: translation rules on small OpenAPI documents, and the committed files are fresh."""
from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import jsonschema
import pytest

from dralint.schema import SchemaProblem
from dralint.schema.compiler import compile_schema

REPO = Path(__file__).resolve().parents[2]
SHARED = Path(__file__).resolve().parents[3] / "shared"
OPENAPI = SHARED / "k8s-openapi"
SCRIPT = REPO / "scripts" / "gen_schemas.py"


def _load_generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gen_schemas", SCRIPT)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules["gen_schemas"] = module  # dataclasses look their module up while decorating
    spec.loader.exec_module(module)
    return module


gen = _load_generator()

REF = "#/components/schemas/"
META = "io.k8s.apimachinery.pkg.apis.meta.v1."
DRA = "io.k8s.api.resource.v9beta1."


def _ref(name: str, **siblings: Any) -> dict[str, Any]:
    return {"allOf": [{"$ref": REF + name}], **siblings}


def _document(extra_spec: dict[str, Any] | None = None) -> dict[str, Any]:
    """A tiny OpenAPI v3 document in kube-openapi's shape with one kind, Widget."""
    spec_props: dict[str, Any] = {
        "count": {"type": "integer", "format": "int64", "description": "How many."},
        "small": {"type": "integer", "format": "int32"},
        "size": _ref("io.k8s.apimachinery.pkg.api.resource.Quantity", default={}),
        "port": {"$ref": REF + "io.k8s.apimachinery.pkg.util.intstr.IntOrString"},
        "parameters": _ref("io.k8s.apimachinery.pkg.runtime.RawExtension"),
        "labels": {"type": "object", "additionalProperties": {"type": "string", "default": ""}},
        "items": {"type": "array", "items": _ref(DRA + "Item", default={}), "x-kubernetes-list-type": "atomic"},
        "mode": {"type": "string", "enum": ["A", "B"]},
        "loose": {"type": "object", "properties": {"known": {"type": "boolean"}},
                  "x-kubernetes-preserve-unknown-fields": True},
        "when": _ref(META + "Time"),
        **(extra_spec or {}),
    }
    return {"openapi": "3.0.0", "components": {"schemas": {
        DRA + "Widget": {
            "description": "A widget.",
            "type": "object",
            "required": ["spec"],
            "properties": {
                "apiVersion": {"type": "string", "description": "APIVersion ..."},
                "kind": {"type": "string"},
                "metadata": _ref(META + "ObjectMeta", default={}),
                "spec": _ref(DRA + "WidgetSpec", default={}),
            },
            "x-kubernetes-group-version-kind": [{"group": "resource.k8s.io", "kind": "Widget", "version": "v9beta1"}],
        },
        DRA + "WidgetList": {
            "type": "object", "properties": {"items": {"type": "array", "items": _ref(DRA + "Widget")}},
            "x-kubernetes-group-version-kind": [
                {"group": "resource.k8s.io", "kind": "WidgetList", "version": "v9beta1"}],
        },
        DRA + "WidgetSpec": {"type": "object", "required": ["count"], "properties": spec_props},
        DRA + "Item": {"type": "object", "properties": {"name": {"type": "string"}}},
        DRA + "Unused": {"type": "object", "properties": {"x": {"type": "string"}}},
        META + "ObjectMeta": {"description": "ObjectMeta is ...", "type": "object",
                              "properties": {"name": {"type": "string", "description": "Name ..."},
                                             "creationTimestamp": _ref(META + "Time")}},
        META + "Time": {"type": "string", "format": "date-time"},
        META + "Status": {"type": "object", "properties": {"code": {"type": "integer", "format": "int32"}},
                          "x-kubernetes-group-version-kind": [{"group": "resource.k8s.io", "kind": "Status",
                                                               "version": "v9beta1"}]},
        "io.k8s.apimachinery.pkg.api.resource.Quantity": {"oneOf": [{"type": "string"}, {"type": "number"}]},
        "io.k8s.apimachinery.pkg.util.intstr.IntOrString": {"oneOf": [{"type": "integer"}, {"type": "string"}]},
        "io.k8s.apimachinery.pkg.runtime.RawExtension": {"type": "object", "description": "RawExtension ..."},
    }}}


def _openapi_tree(root: Path, document: dict[str, Any], release: str = "1.99") -> Path:
    folder = root / "by-release" / release
    folder.mkdir(parents=True)
    (folder / "resource.k8s.io_v9beta1.json").write_text(json.dumps(document), encoding="utf-8")
    return root


@pytest.fixture()
def widget(tmp_path: Path) -> dict[str, Any]:
    files = gen.expected_files(_openapi_tree(tmp_path / "openapi", _document()))
    assert sorted(map(str, files)) == ["1.99/v9beta1/Widget.json", "index.json"]
    return json.loads(files[Path("1.99/v9beta1/Widget.json")])


def test_index_lists_top_level_kinds_only(tmp_path: Path) -> None:
    files = gen.expected_files(_openapi_tree(tmp_path / "openapi", _document()))
    assert json.loads(files[Path("index.json")]) == {"1.99": {"resource.k8s.io/v9beta1": ["Widget"]}}


def test_root_pins_api_version_and_kind(widget: dict[str, Any]) -> None:
    assert widget["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert widget["type"] == "object"
    assert widget["properties"]["apiVersion"] == {"const": "resource.k8s.io/v9beta1"}
    assert widget["properties"]["kind"] == {"const": "Widget"}
    assert widget["required"] == ["apiVersion", "kind", "spec"]
    assert widget["additionalProperties"] is False


def test_defs_hold_only_reachable_definitions(widget: dict[str, Any]) -> None:
    assert sorted(widget["$defs"]) == sorted([
        DRA + "WidgetSpec", DRA + "Item", META + "ObjectMeta", META + "Time",
        "io.k8s.apimachinery.pkg.api.resource.Quantity", "io.k8s.apimachinery.pkg.util.intstr.IntOrString",
        "io.k8s.apimachinery.pkg.runtime.RawExtension"])


def test_decoder_rules(widget: dict[str, Any]) -> None:
    defs = widget["$defs"]
    spec = defs[DRA + "WidgetSpec"]
    props = spec["properties"]
    assert spec["type"] == ["null", "object"] and spec["additionalProperties"] is False
    assert spec["required"] == ["count"]
    assert props["count"] == {"type": ["integer", "null"], "minimum": -(2**63), "maximum": 2**63 - 1,
                              "description": "How many."}
    assert props["small"]["minimum"] == -(2**31) and props["small"]["maximum"] == 2**31 - 1
    assert props["size"] == {"$ref": "#/$defs/io.k8s.apimachinery.pkg.api.resource.Quantity"}
    assert defs["io.k8s.apimachinery.pkg.api.resource.Quantity"] == {"type": ["null", "number", "string"],
                                                                    "format": "quantity"}
    assert defs["io.k8s.apimachinery.pkg.util.intstr.IntOrString"] == {"type": ["integer", "null", "string"]}
    assert defs["io.k8s.apimachinery.pkg.runtime.RawExtension"] == {}
    assert props["labels"] == {"type": ["null", "object"], "additionalProperties": {"type": ["null", "string"]}}
    assert props["items"] == {"type": ["array", "null"], "items": {"$ref": f"#/$defs/{DRA}Item"}}
    assert props["mode"] == {"type": ["null", "string"], "enum": ["A", "B", None]}
    assert props["loose"] == {"type": ["null", "object"], "properties": {"known": {"type": ["boolean", "null"]}}}
    assert defs[META + "Time"] == {"type": ["null", "string"], "format": "date-time"}


def test_descriptions_kept_for_dra_types_only(widget: dict[str, Any]) -> None:
    assert widget["description"] == "A widget."
    meta = widget["$defs"][META + "ObjectMeta"]
    assert "description" not in meta and "description" not in meta["properties"]["name"]


GOOD_WIDGET = {"apiVersion": "resource.k8s.io/v9beta1", "kind": "Widget",
               "metadata": {"name": None, "creationTimestamp": "2024-05-06T07:08:09Z"},
               "spec": {"count": 3, "size": 1.5, "port": "http", "parameters": [1, {"x": None}],
                        "labels": {"a": None}, "items": [None, {"name": "n"}], "mode": None,
                        "loose": {"known": True, "other": 1}, "when": None}}
BAD_SPECS = [
    ({"count": "3"}, "spec.count", "expected integer, found string \"3\""),
    ({"small": 2**31}, "spec.small", f"expected integer from {-(2**31)} to {2**31 - 1}, found integer {2**31}"),
    ({"size": True}, "spec.size", "expected string or number, found boolean true"),
    ({"port": 1.5}, "spec.port", "expected string or integer, found number 1.5"),
    ({"items": {}}, "spec.items", "expected array, found object"),
    ({"extra": 1}, "spec.extra", "unknown field `extra`"),
    ({"when": "yesterday"}, "spec.when", 'expected RFC 3339 date-time string such as "2006-01-02T15:04:05Z", '
                                         'found string "yesterday"'),
    ({"loose": {"known": "yes"}}, "spec.loose.known", 'expected boolean, found string "yes"'),
]


def test_translated_schema_behaves_like_the_decoder(widget: dict[str, Any]) -> None:
    validator = jsonschema.Draft202012Validator(widget, format_checker=jsonschema.FormatChecker())
    assert list(validator.iter_errors(GOOD_WIDGET)) == []
    for spec_patch, _, _ in BAD_SPECS:
        bad = {**GOOD_WIDGET, "spec": {**GOOD_WIDGET["spec"], **spec_patch}}
        assert list(validator.iter_errors(bad)), spec_patch


def test_compiled_checker_reads_every_translated_construct(widget: dict[str, Any]) -> None:
    check = compile_schema(widget).check
    found: list[SchemaProblem] = []
    check({**GOOD_WIDGET, "spec": {**GOOD_WIDGET["spec"], "mode": "C"}}, (), found)
    assert found == []  # enum values are the semantic rules' business
    for spec_patch, path, message in BAD_SPECS:
        found = []
        check({**GOOD_WIDGET, "spec": {**GOOD_WIDGET["spec"], **spec_patch}}, (), found)
        assert [(p.path.render(), p.message) for p in found] == [(path, message)]


@pytest.mark.parametrize("patch", [
    {"odd": {"type": "string", "pattern": "^a"}},
    {"odd": {"type": "string", "format": "byte"}},
    {"odd": {"allOf": [{"$ref": REF + DRA + "Item"}, {"type": "object"}]}},
    {"odd": {"$ref": REF + DRA + "Missing"}},
])
def test_unsupported_constructs_fail_loudly(tmp_path: Path, patch: dict[str, Any],
                                            capsys: pytest.CaptureFixture[str]) -> None:
    openapi = _openapi_tree(tmp_path / "openapi", _document(patch))
    assert gen.main(["--openapi", str(openapi), "--out", str(tmp_path / "out")]) == 2
    assert "cannot translate" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_write_then_check_then_stale(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    openapi = _openapi_tree(tmp_path / "openapi", _document())
    out = tmp_path / "out"
    assert gen.main(["--openapi", str(openapi), "--out", str(out)]) == 0
    first = (out / "1.99" / "v9beta1" / "Widget.json").read_text(encoding="utf-8")
    assert first.endswith("}\n")
    assert gen.main(["--openapi", str(openapi), "--out", str(out), "--check"]) == 0

    (out / "1.99" / "v9beta1" / "Widget.json").write_text(first.replace("How many.", "How few."), encoding="utf-8")
    (out / "1.98" / "v1").mkdir(parents=True)
    (out / "1.98" / "v1" / "Old.json").write_text("{}\n", encoding="utf-8")
    (out / "index.json").unlink()
    capsys.readouterr()
    assert gen.main(["--openapi", str(openapi), "--out", str(out), "--check"]) == 1
    err = capsys.readouterr().err
    assert "out of date: 1.99/v9beta1/Widget.json" in err
    assert "missing: index.json" in err
    assert "not generated (delete it): 1.98/v1/Old.json" in err

    assert gen.main(["--openapi", str(openapi), "--out", str(out)]) == 0
    assert (out / "1.99" / "v9beta1" / "Widget.json").read_text(encoding="utf-8") == first
    assert not (out / "1.98").exists()
    assert gen.main(["--openapi", str(openapi), "--out", str(out), "--check"]) == 0


def test_missing_openapi_folder_is_a_usage_error(tmp_path: Path) -> None:
    assert gen.main(["--openapi", str(tmp_path), "--out", str(tmp_path / "out")]) == 2


@pytest.mark.skipif(not OPENAPI.is_dir(), reason="shared OpenAPI documents not available")
def test_committed_schemas_are_up_to_date() -> None:
    run = subprocess.run([sys.executable, str(SCRIPT), "--check", "--openapi", str(OPENAPI),
                          "--out", str(REPO / "schemas")], capture_output=True, text=True, check=False)
    assert run.returncode == 0, run.stderr
