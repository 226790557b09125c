"""validate(): what it reports, where, and in which words."""
from __future__ import annotations

import copy
import datetime
import importlib.util
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from dralint.paths import FieldPath, Key
from dralint.schema import UNKNOWN_FIELD, WRONG_TYPE, SchemaProblem, validate

SHARED = Path(__file__).resolve().parents[3] / "shared"
GEN_CORPUS = SHARED / "bench" / "gen_corpus.py"
V1 = "resource.k8s.io/v1"

CLAIM: dict[str, Any] = {
    "apiVersion": V1, "kind": "ResourceClaim",
    "metadata": {"name": "gpu", "namespace": "ml", "labels": {"team": "a"}, "creationTimestamp": None},
    "spec": {"devices": {
        "requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com", "count": 2,
                                                 "selectors": [{"cel": {"expression": "true"}}]}}],
        "config": [{"requests": ["gpu"], "opaque": {"driver": "gpu.example.com",
                                                   "parameters": {"apiVersion": "x/v1", "kind": "C"}}}],
    }},
}


def claim(**spec_request: Any) -> dict[str, Any]:
    """CLAIM with its first request's ``exactly`` updated."""
    obj = copy.deepcopy(CLAIM)
    obj["spec"]["devices"]["requests"][0]["exactly"].update(spec_request)
    return obj


def problems(obj: Any, release: str = "1.35", api_version: str = V1, kind: str = "ResourceClaim",
             strict: bool = True) -> list[tuple[str, str, str]]:
    return [(p.kind, p.path.render(), p.message) for p in validate(obj, release, api_version, kind, strict=strict)]


REQ = "spec.devices.requests[0].exactly"


def test_valid_claim_has_no_problems() -> None:
    assert problems(CLAIM) == []


def test_unknown_field_with_suggestion() -> None:
    found = validate(claim(cout=2), "1.35", V1, "ResourceClaim")
    assert found == [SchemaProblem(UNKNOWN_FIELD, FieldPath.parse(f"{REQ}.cout"),
                                   "unknown field `cout`; did you mean `count`?", "count")]


def test_unknown_field_matching_is_case_sensitive_and_suggests_case_blind() -> None:
    [found] = validate(claim(DEVICECLASSNAME="x"), "1.35", V1, "ResourceClaim")
    assert found.suggestion == "deviceClassName"
    [found] = validate(claim(zzzz=1), "1.35", V1, "ResourceClaim")
    assert found.message == "unknown field `zzzz`" and found.suggestion is None


def test_unknown_fields_skipped_when_not_strict() -> None:
    obj = claim(cout=2, count="2")
    assert problems(obj, strict=False) == [(WRONG_TYPE, f"{REQ}.count", 'expected integer, found string "2"')]


def test_unknown_fields_in_metadata_and_at_top_level() -> None:
    obj = copy.deepcopy(CLAIM)
    obj["metadata"]["lables"] = {}
    obj["sepc"] = {}
    assert problems(obj) == [
        (UNKNOWN_FIELD, "metadata.lables", "unknown field `lables`; did you mean `labels`?"),
        (UNKNOWN_FIELD, "sepc", "unknown field `sepc`; did you mean `spec`?"),
    ]


@pytest.mark.parametrize(("patch", "path", "message"), [
    ({"count": "2"}, "count", 'expected integer, found string "2"'),
    ({"count": True}, "count", "expected integer, found boolean true"),
    ({"count": 2.5}, "count", "expected integer, found number 2.5"),
    ({"count": 2**63}, "count", f"expected integer from {-(2**63)} to {2**63 - 1}, found integer {2**63}"),
    ({"count": [1]}, "count", "expected integer, found array"),
    ({"selectors": {"cel": {"expression": "true"}}}, "selectors", "expected array, found object"),
    ({"selectors": ["true"]}, "selectors[0]", 'expected object, found string "true"'),
    ({"deviceClassName": 7}, "deviceClassName", "expected string, found integer 7"),
    ({"adminAccess": "yes"}, "adminAccess", 'expected boolean, found string "yes"'),
    ({"deviceClassName": "x" * 100}, None, None),
])
def test_wrong_types(patch: dict[str, Any], path: str | None, message: str | None) -> None:
    expected = [] if path is None else [(WRONG_TYPE, f"{REQ}.{path}", message)]
    assert problems(claim(**patch)) == expected


def test_long_values_are_shortened_in_messages() -> None:
    [(_, _, message)] = problems(claim(count="y" * 200))
    assert message.startswith('expected integer, found string "yyy') and message.endswith("…")
    assert len(message) < 80


def test_whole_numbers_and_nulls_are_accepted() -> None:
    obj = claim(count=2.0, selectors=[None], tolerations=None, allocationMode=None)
    obj["metadata"]["labels"]["empty"] = None
    assert problems(obj) == []


def test_one_problem_for_a_wrong_container_not_a_cascade() -> None:
    obj = copy.deepcopy(CLAIM)
    obj["spec"]["devices"] = [{"requests": {"bogus": [1, 2, 3]}}]
    assert problems(obj) == [(WRONG_TYPE, "spec.devices", "expected object, found array")]


def test_map_values_have_key_segments() -> None:
    obj = copy.deepcopy(CLAIM)
    obj["metadata"]["labels"]["example.com/tier"] = 1
    [found] = validate(obj, "1.35", V1, "ResourceClaim")
    assert found.path == FieldPath(("metadata", "labels", Key("example.com/tier")))
    assert found.path.render() == "metadata.labels[example.com/tier]"


def test_opaque_parameters_accept_any_json() -> None:
    for parameters in ([1, 2], "text", 3, None, {"deep": [[[{"x": None}]]]}):
        obj = copy.deepcopy(CLAIM)
        obj["spec"]["devices"]["config"][0]["opaque"]["parameters"] = parameters
        assert problems(obj) == [], parameters


def test_quantities_accept_strings_and_numbers() -> None:
    for value in ("80Gi", 1, 1.5):
        assert problems(claim(capacity={"requests": {"memory": value}})) == []
    assert problems(claim(capacity={"requests": {"memory": True}})) == [
        (WRONG_TYPE, f"{REQ}.capacity.requests[memory]", "expected string or number, found boolean true")]


def test_timestamps_follow_go_rfc3339() -> None:
    def with_created(value: Any) -> dict[str, Any]:
        obj = copy.deepcopy(CLAIM)
        obj["metadata"]["creationTimestamp"] = value
        return obj

    for good in ("2024-05-06T07:08:09Z", "2024-05-06T07:08:09.123+02:00",
                 datetime.datetime(2024, 5, 6, 7, 8, 9, tzinfo=datetime.timezone.utc)):
        assert problems(with_created(good)) == [], good
    for bad in ("yesterday", "2024-05-06", "2024-02-30T00:00:00Z", datetime.date(2024, 5, 6), 1715000000):
        [(kind, path, message)] = problems(with_created(bad))
        assert (kind, path) == (WRONG_TYPE, "metadata.creationTimestamp"), bad
        expected = "RFC 3339 date-time string" if isinstance(bad, (str, datetime.date)) else "string"
        assert message.startswith(f"expected {expected}"), message


def test_yaml_timestamps_count_as_strings() -> None:
    obj = yaml.safe_load("apiVersion: resource.k8s.io/v1\nkind: DeviceClass\nmetadata:\n  name: 2024-01-01\n"
                         "  labels:\n    built: 2024-01-01T00:00:00Z\nspec: {}\n")
    assert isinstance(obj["metadata"]["name"], datetime.date)
    assert problems(obj, kind="DeviceClass") == []
    obj["spec"]["selectors"] = datetime.date(2024, 1, 1)
    assert problems(obj, kind="DeviceClass") == [
        (WRONG_TYPE, "spec.selectors", 'expected array, found string "2024-01-01"')]


def test_int32_range() -> None:
    obj = {"apiVersion": "resource.k8s.io/v1alpha3", "kind": "ResourcePoolStatusRequest", "metadata": {"name": "r"},
           "spec": {"driver": "d", "limit": 2**31}}
    assert problems(obj, "1.36", "resource.k8s.io/v1alpha3", "ResourcePoolStatusRequest") == [
        (WRONG_TYPE, "spec.limit", f"expected integer from {-(2**31)} to {2**31 - 1}, found integer {2**31}")]


def test_each_version_is_checked_in_its_own_shape() -> None:
    beta1 = {"apiVersion": "resource.k8s.io/v1beta1", "kind": "ResourceClaim",
             "spec": {"devices": {"requests": [{"name": "a", "deviceClassName": "c", "cout": 1}]}}}
    assert problems(beta1, api_version="resource.k8s.io/v1beta1") == [
        (UNKNOWN_FIELD, "spec.devices.requests[0].cout", "unknown field `cout`; did you mean `count`?")]
    # The same request in v1 must be wrapped in `exactly`.
    assert [p[1] for p in problems({**beta1, "apiVersion": V1})] == [
        "spec.devices.requests[0].deviceClassName", "spec.devices.requests[0].cout"]


def test_fields_follow_the_release() -> None:
    slice_ = {"apiVersion": V1, "kind": "ResourceSlice", "metadata": {"name": "s"},
              "spec": {"driver": "d", "pool": {"name": "p", "resourceSliceCount": 1, "generation": 1},
                       "allNodes": True, "devices": [{"name": "d0", "attributes": {"a": {"ints": [1, 2]}}}]}}
    assert problems(slice_, "1.36", kind="ResourceSlice") == []
    assert problems(slice_, "1.35", kind="ResourceSlice") == [
        (UNKNOWN_FIELD, "spec.devices[0].attributes[a].ints", "unknown field `ints`; did you mean `int`?")]


@pytest.mark.parametrize("obj", [None, [], "text", 3, {"spec": []}])
def test_non_objects(obj: Any) -> None:
    found = problems(obj)
    assert len(found) == 1 and found[0][0] == WRONG_TYPE


def test_odd_python_values_do_not_crash() -> None:
    obj = copy.deepcopy(CLAIM)
    obj["metadata"][1] = "int key"
    obj["metadata"]["labels"][2] = "int key in a map is fine"
    obj["metadata"]["annotations"] = {"a": b"bytes", "b": {1, 2}}
    assert problems(obj) == [
        (UNKNOWN_FIELD, "metadata.1", "unknown field `1`"),
        (WRONG_TYPE, "metadata.annotations[a]", "expected string, found bytes"),
        (WRONG_TYPE, "metadata.annotations[b]", "expected string, found set"),
    ]


def test_deeply_nested_garbage_gives_one_problem() -> None:
    deep: Any = "x"
    for _ in range(5000):
        deep = [deep]
    assert problems(claim(selectors=[{"cel": deep}])) == [
        (WRONG_TYPE, f"{REQ}.selectors[0].cel", "expected object, found array")]
    assert problems(claim(count=deep)) == [(WRONG_TYPE, f"{REQ}.count", "expected integer, found array")]


@pytest.mark.parametrize(("release", "api_version", "kind"), [
    ("1.33", V1, "ResourceClaim"),         # v1 not served yet
    ("1.35", V1, "Pod"),
    ("2.0", V1, "ResourceClaim"),
    (None, V1, "ResourceClaim"),
    ("1.35", None, "ResourceClaim"),
    ("1.35", V1, ["ResourceClaim"]),
])
def test_unserved_or_junk_arguments_give_nothing(release: Any, api_version: Any, kind: Any) -> None:
    assert validate(claim(count="x"), release, api_version, kind) == []


def _corpus_generator() -> Any:
    spec = importlib.util.spec_from_file_location("gen_corpus", GEN_CORPUS)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules["gen_corpus"] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def corpus() -> list[dict[str, Any]]:
    """200 benchmark-corpus documents (all resource.k8s.io/v1), read back the way the bench reads them."""
    if not GEN_CORPUS.is_file():
        pytest.skip("shared benchmark corpus generator not available")
    generator = _corpus_generator().Generator(7, 200)
    text = yaml.dump_all(list(generator.documents()), Dumper=yaml.CSafeDumper)
    return list(yaml.load_all(text, Loader=yaml.CSafeLoader))


@pytest.mark.parametrize("release", ["1.34", "1.35", "1.36", "1.37"])
def test_corpus_documents_are_clean_in_every_release_serving_v1(corpus: list[dict[str, Any]], release: str) -> None:
    for doc in corpus:
        assert validate(doc, release, doc["apiVersion"], doc["kind"]) == [], doc["metadata"]
