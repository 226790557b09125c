"""The shipped schemas/: valid draft 2020-12, consistent with index.json, compilable; served versions."""
from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from dralint.resources import data_path
from dralint.schema import known_releases, served_releases, serves
from dralint.schema.compiler import compile_schema
from dralint.schema.served import schema_file

SCHEMAS = data_path("schemas")
INDEX = json.loads((SCHEMAS / "index.json").read_text(encoding="utf-8"))
ALL_FILES = sorted(SCHEMAS.glob("*/*/*.json"))


def test_every_kind_in_the_index_has_exactly_one_file() -> None:
    listed = {Path(release) / api_version.split("/")[1] / f"{kind}.json"
              for release, versions in INDEX.items() for api_version, kinds in versions.items() for kind in kinds}
    assert listed == {path.relative_to(SCHEMAS) for path in ALL_FILES}
    assert len(listed) > 100


@pytest.mark.parametrize("path", ALL_FILES, ids=lambda p: str(p.relative_to(SCHEMAS)))
def test_file_is_a_valid_2020_12_schema_and_compiles(path: Path) -> None:
    schema = json.loads(path.read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(schema)
    release, version, kind = path.relative_to(SCHEMAS).with_suffix("").parts
    assert schema["properties"]["apiVersion"] == {"const": f"resource.k8s.io/{version}"}
    assert schema["properties"]["kind"] == {"const": kind}
    assert compile_schema(schema).check is not None


def test_known_releases() -> None:
    assert known_releases() == [f"1.{minor}" for minor in range(26, 39)]


@pytest.mark.parametrize(("api_version", "kind", "releases"), [
    ("resource.k8s.io/v1alpha1", "ResourceClass", ["1.26"]),
    ("resource.k8s.io/v1alpha1", "PodScheduling", ["1.26"]),
    ("resource.k8s.io/v1alpha2", "ResourceClass", ["1.27", "1.28", "1.29", "1.30"]),
    ("resource.k8s.io/v1alpha2", "ResourceSlice", ["1.30"]),
    ("resource.k8s.io/v1alpha2", "ResourceClaimParameters", ["1.30"]),
    ("resource.k8s.io/v1alpha3", "PodSchedulingContext", ["1.31"]),
    ("resource.k8s.io/v1alpha3", "DeviceClass", ["1.31", "1.32", "1.33"]),
    ("resource.k8s.io/v1alpha3", "DeviceTaintRule", ["1.33", "1.34", "1.35", "1.36", "1.37", "1.38"]),
    ("resource.k8s.io/v1alpha3", "ResourcePoolStatusRequest", ["1.36", "1.37", "1.38"]),
    ("resource.k8s.io/v1beta1", "ResourceClaim", ["1.32", "1.33", "1.34", "1.35", "1.36", "1.37"]),
    ("resource.k8s.io/v1beta2", "DeviceClass", ["1.33", "1.34", "1.35", "1.36", "1.37", "1.38"]),
    ("resource.k8s.io/v1beta2", "DeviceTaintRule", ["1.36", "1.37", "1.38"]),
    ("resource.k8s.io/v1", "ResourceSlice", ["1.34", "1.35", "1.36", "1.37", "1.38"]),
    ("resource.k8s.io/v1", "DeviceTaintRule", ["1.37", "1.38"]),
    ("resource.k8s.io/v1", "ResourceClaimList", []),
    ("resource.k8s.io/v2", "ResourceClaim", []),
    ("v1", "Pod", []),
])
def test_served_releases(api_version: str, kind: str, releases: list[str]) -> None:
    assert served_releases(api_version, kind) == releases
    for release in known_releases():
        assert serves(release, api_version, kind) == (release in releases)


@pytest.mark.parametrize("args", [
    ("1.32", "resource.k8s.io/v1beta2", "DeviceClass"),
    ("1.9", "resource.k8s.io/v1", "DeviceClass"),
    (None, "resource.k8s.io/v1", "DeviceClass"),
    (["1.35"], "resource.k8s.io/v1", "DeviceClass"),
    ("1.35", {"a": 1}, "DeviceClass"),
    ("1.35", "resource.k8s.io/v1", 7),
])
def test_not_served_never_raises(args: tuple) -> None:
    assert serves(*args) is False
    assert schema_file(*args) is None


def test_served_releases_tolerates_junk() -> None:
    assert served_releases(None, ["x"]) == []  # type: ignore[arg-type]
