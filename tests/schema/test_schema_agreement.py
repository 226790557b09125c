"""Our compiled checkers agree with ``jsonschema`` on the same schema files.

Hypothesis builds a valid object from a randomly chosen schema, applies one mutation (a value of
the wrong type, an extra field, a null, nested garbage) and compares: same verdict, and each of
our problems sits where jsonschema reports an error (the object holding an unknown field, for
``additionalProperties``). ``required``, ``enum`` and ``const`` are not ours to report (the
semantic rules do), so jsonschema's errors of those three keywords are left out of the
comparison; the valid objects carry every required field, so nothing else is hidden.
"""
from __future__ import annotations

import copy
import json
import re
from functools import lru_cache
from typing import Any, Callable

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dralint.resources import data_path
from dralint.schema import UNKNOWN_FIELD, validate
from dralint.schema.served import known_releases, served_releases
from dralint.schema.validator import compiled

SCHEMAS = data_path("schemas")
INDEX = json.loads((SCHEMAS / "index.json").read_text(encoding="utf-8"))
TARGETS = sorted((release, api_version, kind) for release, versions in INDEX.items()
                 for api_version, kinds in versions.items() for kind in kinds)
TIMESTAMPS = ["2024-05-06T07:08:09Z", "1999-12-31T23:59:59.5+05:30"]
MAX_DEPTH = 7

Draw = Callable[[st.SearchStrategy[Any]], Any]


@lru_cache(maxsize=None)
def schema_of(release: str, api_version: str, kind: str) -> dict[str, Any]:
    path = SCHEMAS / release / api_version.split("/")[1] / f"{kind}.json"
    return json.loads(path.read_text(encoding="utf-8"))


# apimachinery's quantity grammar, written out independently of dralint.kube.quantity.
QUANTITY = re.compile(r"[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([KMGTPE]i|[numkMGTPE]|[eE][+-]?[0-9]+)?")
QUANTITIES = ["1", "0.5", "10Gi", "500m", "1e3", 4, 2.5]


def reference_format_checker() -> jsonschema.FormatChecker:
    checker = jsonschema.FormatChecker(["date-time"])

    @checker.checks("quantity")
    def is_quantity(value: object) -> bool:
        if isinstance(value, bool) or not isinstance(value, (str, int, float)):
            return True  # the type keyword judges other types
        return not isinstance(value, str) or (QUANTITY.fullmatch(value) is not None
                                              and value not in ("+", "-", ".", "+.", "-."))

    return checker


@lru_cache(maxsize=None)
def reference_validator(release: str, api_version: str, kind: str) -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(schema_of(release, api_version, kind),
                                           format_checker=reference_format_checker())


def valid_instance(draw: Draw, node: dict[str, Any], defs: dict[str, Any], depth: int = 0) -> Any:
    """A value ``node`` accepts (required properties always present, others by chance)."""
    if "$ref" in node:
        return valid_instance(draw, defs[node["$ref"].rsplit("/", 1)[1]], defs, depth)
    if "const" in node:
        return node["const"]
    if "type" not in node:  # any JSON
        return draw(st.sampled_from([{"apiVersion": "x/v1", "kind": "K"}, [1, "a"], "s", 3, None]))
    types = [node["type"]] if isinstance(node["type"], str) else node["type"]
    if "null" in types and (depth >= MAX_DEPTH or draw(st.integers(0, 9)) == 0):
        return None
    if node.get("format") == "quantity":
        return draw(st.sampled_from(QUANTITIES))
    kind = draw(st.sampled_from([t for t in types if t != "null"]))
    if kind == "object" and "properties" in node:
        required = set(node.get("required", ()))
        chosen = [name for name in sorted(node["properties"])
                  if name in required or (depth < MAX_DEPTH and draw(st.integers(0, 2)) == 0)]
        return {name: valid_instance(draw, node["properties"][name], defs, depth + 1) for name in chosen}
    if kind == "object":
        keys = draw(st.lists(st.sampled_from(["a", "b.example.com/c", "d"]), max_size=2, unique=True))
        return {key: valid_instance(draw, node["additionalProperties"], defs, depth + 1) for key in keys}
    if kind == "array":
        size = draw(st.integers(0, 2 if depth < MAX_DEPTH else 0))
        return [valid_instance(draw, node["items"], defs, depth + 1) for _ in range(size)]
    if kind == "string":
        return draw(st.sampled_from(TIMESTAMPS)) if node.get("format") == "date-time" else draw(st.text(max_size=5))
    if kind == "integer":
        return draw(st.integers(node.get("minimum", -(2**70)), node.get("maximum", 2**70)))
    if kind == "number":
        return draw(st.floats(allow_nan=False, allow_infinity=False))
    return draw(st.booleans())


def locations(value: Any, path: tuple = ()) -> list[tuple]:
    """Every path inside ``value`` (the root excluded)."""
    found: list[tuple] = []
    children = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, item in children:
        found.append((*path, key))
        found.extend(locations(item, (*path, key)))
    return found


GARBAGE = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**65), 2**65) | st.floats(allow_nan=False)
    | st.text(max_size=6),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=8)


def mutate(draw: Draw, obj: dict[str, Any]) -> tuple[dict[str, Any], tuple]:
    """One random change, and where: a value replaced by garbage or null, or an extra key in an object."""
    obj = copy.deepcopy(obj)
    # apiVersion/kind at the top are pinned with const, which we leave to the manifest stage.
    targets = [path for path in locations(obj) if path not in (("apiVersion",), ("kind",))]
    objects = [()] + [path for path in targets if isinstance(get(obj, path), dict)]
    if targets and draw(st.booleans()):
        path = draw(st.sampled_from(targets))
        set_at(obj, path, draw(st.none() | GARBAGE))
        return obj, path
    path = draw(st.sampled_from(objects))
    holder = get(obj, path)
    name = draw(st.text(min_size=1, max_size=8))
    if name not in holder:
        holder[name] = draw(GARBAGE)
    return obj, (*path, name)


def get(obj: Any, path: tuple) -> Any:
    for key in path:
        obj = obj[key]
    return obj


def set_at(obj: Any, path: tuple, value: Any) -> None:
    get(obj, path[:-1])[path[-1]] = value


def ours(obj: Any, target: tuple[str, str, str]) -> set[tuple[str, tuple]]:
    found = set()
    for problem in validate(obj, *target):
        path = tuple(str(seg) if isinstance(seg, str) else seg for seg in problem.path)
        found.add(("unknown", path[:-1]) if problem.kind == UNKNOWN_FIELD else ("type", path))
    return found


NOT_OURS = frozenset({"required", "enum", "const"})


def theirs(obj: Any, target: tuple[str, str, str]) -> set[tuple[str, tuple]]:
    return {("unknown" if error.validator == "additionalProperties" else "type", tuple(error.absolute_path))
            for error in reference_validator(*target).iter_errors(obj) if error.validator not in NOT_OURS}


def check_agreement(draw: Draw, target: tuple[str, str, str]) -> None:
    schema = schema_of(*target)
    valid = valid_instance(draw, schema, schema["$defs"])
    assert ours(valid, target) == set()
    assert list(reference_validator(*target).iter_errors(valid)) == []
    mutated, where = mutate(draw, valid)
    assert ours(mutated, target) == theirs(mutated, target)
    # The quick predicate says yes exactly when the reporting walk finds nothing.
    checker = compiled(*target)
    assert checker is not None and checker.valid(valid)
    reported: list = []
    checker.check(mutated, (), reported)
    assert checker.valid(mutated) == (not reported)
    # Problems only inside the change, and none below another one (no cascade under a wrong value).
    paths = [tuple(problem.path) for problem in validate(mutated, *target)]
    assert all(path[:len(where)] == where for path in paths)
    assert not any(p != q and q[:len(p)] == p for p in paths for q in paths)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_agrees_with_jsonschema(data: st.DataObject) -> None:
    check_agreement(data.draw, data.draw(st.sampled_from(TARGETS)))


@pytest.mark.slow
@pytest.mark.parametrize("target", TARGETS, ids="/".join)
def test_agrees_with_jsonschema_on_every_schema(target: tuple[str, str, str]) -> None:
    @settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(st.data())
    def run(data: st.DataObject) -> None:
        check_agreement(data.draw, target)

    run()


def test_targets_cover_every_release() -> None:
    assert {release for release, _, _ in TARGETS} == set(known_releases())
    assert all(release in served_releases(api_version, kind) for release, api_version, kind in TARGETS)
