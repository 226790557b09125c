"""Every cache of the engine is bounded by bytes or keyed by what dralint ships.

A memo keyed by caller data used to be bounded by its number of entries: 4,096 claim shapes of up
to a megabyte each took both webhook workers over their memory ceiling. These tests find every
memo of the package, check the byte bound of each one that holds caller data (its estimate is not
below what an entry really keeps, measured with tracemalloc), and that the caches can be dropped.
"""
from __future__ import annotations

import functools
import gc
import importlib
import pkgutil
import sys
import tracemalloc
from typing import Any, Callable

import pytest

import dralint
import dralint_webhook
from dralint import caches
from dralint.bounded_cache import bounded_cache
from dralint.cel import compile_selector, env_for, lint, regex
from dralint.checks import formats
from dralint.engine import Options, cluster_object, review
from dralint.feasibility import Fleet, model, selection
from dralint.feasibility.selection import cel_evaluator, cel_required_driver
from dralint.feasibility.world import World
from dralint.index import Index
from dralint.kube.quantity import Quantity

# Memos keyed by what dralint ships or what the command line says, never by what a review sends:
# a few entries whatever callers do. (module, name) -> why.
SHIPPED_KEYS = {
    ("dralint.catalog", "load_catalog"): "the rule catalog folder",
    ("dralint.checks.cel_selectors", "_env"): "a release with the gates the command line or webhook sets, stored",
    ("dralint.cel.cost_dra", "_overloads"): "a set of CEL libraries",
    ("dralint.cel.decls", "functions"): "a set of CEL libraries",
    ("dralint.cel.env", "model"): "a CEL environment: release, gates, stored",
    ("dralint.cel.types", "parse_type"): "the declarations of dralint's CEL libraries",
    ("dralint.gating", "_kind_droppers"): "a served kind (objects are converted first), create/update, release",
    ("dralint.gating", "_compiled"): "the pod spec paths of a kind",
    ("dralint.globs", "glob_regex"): "the command line's and config file's globs",
    ("dralint.kube.limits", "limits_for"): "a release",
    ("dralint.project", "repository"): "nothing",
    ("dralint.resources", "data_path"): "a shipped data set",
    ("dralint.schema.core", "_checkers"): "a flag",
    ("dralint.schema.decode", "_schema"): "a served version and kind",
    ("dralint.schema.required", "top_level_required"): "a release, version and kind",
    ("dralint.schema.served", "_index"): "nothing",
    ("dralint.schema.served", "_serving_releases"): "nothing (the shipped index, turned round)",
    ("dralint.schema.validator", "compiled"): "a release, version and kind",
    ("dralint.source.templates", "in_chart_templates"): "a folder of the command line's files (one run)",
    ("dralint_webhook.processes", "_boot_time"): "nothing (the host's boot time, for process_start_time_seconds)",
    ("dralint_webhook.processes", "_proc"): "nothing (whether /proc exists)",
}


def memos() -> dict[tuple[str, str], Any]:
    """Every memo (functools' or ours) defined at module level in dralint and dralint_webhook."""
    found = {}
    for package in (dralint, dralint_webhook):
        for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
            if info.name.endswith("__main__"):
                continue
            module = importlib.import_module(info.name)
            for name, obj in vars(module).items():
                if getattr(obj, "__module__", None) != module.__name__:
                    continue
                if isinstance(obj, functools._lru_cache_wrapper) or hasattr(obj, "cache_clear"):
                    found[(module.__name__, name)] = obj
    return found


def test_every_memo_holds_caller_data_within_bytes_or_is_keyed_by_what_dralint_ships():
    found = memos()
    listed = {entry for entry in caches.CALLER_CACHES if entry[0].startswith("dralint")}
    for key, memo in found.items():
        if key in listed:
            assert memo.cache_info()["max_bytes"] > 0, key
        else:
            assert key in SHIPPED_KEYS, f"{key}: add it to CALLER_CACHES (bounded by bytes) or say why it need not be"
            assert memo.cache_info().maxsize is not None, key
    assert listed <= set(found), "CALLER_CACHES names a memo that does not exist"
    assert set(SHIPPED_KEYS) <= set(found), "SHIPPED_KEYS names a memo that does not exist"


def retained(make: Callable[[], Any]) -> int:
    """Bytes still allocated after ``make()`` ran and its result was let go (what a cache keeps)."""
    gc.collect()
    tracemalloc.start()
    try:
        make()
        gc.collect()
        return tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()


def heavy_claim(i: int, configs: int = 32, selectors: int = 0) -> dict:
    """A valid claim as heavy as the API server lets one be: 32 configs of 10 KB opaque parameters."""
    exactly: dict = {"deviceClassName": "gpu.example.com", "count": 1}
    if selectors:
        exactly["selectors"] = [{"cel": {"expression": big_expression(i * 100 + j)}} for j in range(selectors)]
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"name": f"c{i}", "namespace": "ml"},
            "spec": {"devices": {"requests": [{"name": "gpu", "exactly": exactly}],
                                 "config": [{"requests": ["gpu"], "opaque": {
                                     "driver": "gpu.example.com",
                                     "parameters": {"blob": f"{i}-{j}-" + "x" * 10_000}}} for j in range(configs)]}}}


def big_expression(i: int, size: int = 9_000) -> str:
    parts, n = [], 0
    while sum(len(p) + 4 for p in parts) < size:
        parts.append(f'device.attributes["gpu.example.com"].model == "m{i}-{n}"')
        n += 1
    return " || ".join(parts)


def read(obj: dict) -> model.ClaimSpec:
    canonical = cluster_object(obj, "test")
    assert canonical is not None
    return model.read_claim(canonical, "ml/c")


# --- claim shapes -----------------------------------------------------------------------------------------

def test_a_claims_shape_leaves_out_the_config_the_allocator_never_reads():
    one, other = read(heavy_claim(1)), read(heavy_claim(2))
    assert one.shape == other.shape
    assert len(one.shape) < 500          # not the 330 KB of its opaque parameters
    assert one.requests[0].exactly is not None and one.requests[0].exactly.class_name == "gpu.example.com"


def test_distinct_claim_shapes_stay_within_their_bytes():
    model._read_alike.cache_clear()
    claims = [heavy_claim(i, configs=0, selectors=4) for i in range(40)]
    for obj in claims:
        read(obj)
    info = model._read_alike.cache_info()
    assert info["entries"] == 40 and 0 < info["bytes"] <= info["max_bytes"]
    model._read_alike.cache_clear()
    # What an entry weighs is not below what it keeps (its key, and the requests read from it).
    obj = heavy_claim(99, configs=0, selectors=4)
    kept = retained(lambda: read(obj))
    model._read_alike.cache_clear()
    read(obj)
    assert model._read_alike.cache_info()["bytes"] >= kept


def test_a_bounded_memo_keeps_its_budget_and_weighs_typed_keys_apart():
    calls: list[Any] = []

    @bounded_cache(100, lambda value: 30, typed=True)
    def memo(value: Any) -> Any:
        calls.append(value)
        return value

    for value in (1, 1.0, 1, "a", "b", "c"):
        memo(value)
    assert calls == [1, 1.0, "a", "b", "c"]         # 1 and 1.0 are two entries; the second 1 a hit
    assert memo.cache_info() == {"entries": 3, "bytes": 90, "max_bytes": 100}
    assert memo.cache_clear() == 90 and memo.cache_info()["entries"] == 0


# --- the process-long memos of caller data ---------------------------------------------------------------

CEL_ENV = env_for("1.34", {}, stored=False)
LONG_NUMBER = "0" * 3000 + "Ki"


@pytest.mark.parametrize("call", [
    lambda i: compile_selector(big_expression(i), CEL_ENV),
    lambda i: lint._analyse(big_expression(i)),
    lambda i: Quantity.parse(f"{i}{LONG_NUMBER}"),
    lambda i: model.nanos(f"{i}{LONG_NUMBER}"),
    lambda i: formats.qualified_attribute_errors(f"example.com/{i}" + "n" * 5000, fully_qualified=True),
], ids=["cel-compile", "cel-analyse", "quantity", "nanos", "attribute-name"])
def test_each_memo_of_caller_data_weighs_at_least_what_it_keeps(call):
    caches.drop_caches()
    kept = retained(lambda: call(12345))
    caches.drop_caches()
    call(12345)
    assert sum(getattr(sys.modules[m], a).cache_info()["bytes"] for m, a in caches.CALLER_CACHES
               if m.startswith("dralint") and m in sys.modules) >= kept


def test_distinct_patterns_stay_within_the_regex_budget():
    regex._compile.cache_clear()
    for i in range(300):
        regex.compile_regex(f"(a|b)*c{i}[x-z]{{3}}" * 60)
    info = regex._compile.cache_info()
    assert info["bytes"] <= info["max_bytes"] and info["entries"] < 300


def test_drop_caches_empties_every_memo_of_caller_data():
    compile_selector(big_expression(7), CEL_ENV)
    read(heavy_claim(7, configs=1, selectors=1))
    assert caches.drop_caches() > 0
    for module, attribute in caches.CALLER_CACHES:
        memo = getattr(sys.modules[module], attribute)
        info = memo.cache_info()
        assert (info["entries"] if isinstance(info, dict) else info.currsize) == 0, (module, attribute)


# --- the fleet view (the webhook's world) -------------------------------------------------------------------

CLASS = {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "gpu.example.com"},
         "spec": {"selectors": [{"cel": {"expression": 'device.driver == "gpu.example.com"'}}]}}


def fleet(nodes: int = 4) -> tuple[Index, World]:
    objects = [CLASS] + [{"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
                          "metadata": {"name": f"node-{n}-gpu"},
                          "spec": {"driver": "gpu.example.com", "nodeName": f"node-{n}",
                                   "pool": {"name": f"node-{n}", "generation": 1, "resourceSliceCount": 1},
                                   "devices": [{"name": f"gpu-{i}", "attributes": {"model": {"string": "a100"}}}
                                               for i in range(2)]}} for n in range(nodes)]
    index = Index.build(o for o in (cluster_object(v, "cluster") for v in objects) if o is not None)
    release = Options().release
    world = World.from_index(index, release, cel_evaluator(release), None, cel_required_driver(release), by_name=True)
    return index, world


def judged(index: Index, world: World, obj: dict) -> list[str]:
    return sorted(f.rule for f in review(obj, None, "CREATE", "", Options(), cluster=index, fleet=Fleet(world)))


def test_a_world_without_its_caches_judges_the_same():
    index, world = fleet()
    fits = heavy_claim(1, configs=0, selectors=1)
    fits["spec"]["devices"]["requests"][0]["exactly"]["selectors"] = [
        {"cel": {"expression": 'device.attributes["gpu.example.com"].model == "a100"'}}]
    too_many = heavy_claim(2, configs=0)
    too_many["spec"]["devices"]["requests"][0]["exactly"]["count"] = 3
    before = [judged(index, world, fits), judged(index, world, too_many)]
    assert "DRA701" in before[1] and "DRA701" not in before[0]
    assert len(world.counts._filters) and len(world.selection._combined) and len(world.node_sets)
    assert world.drop_caches() > 0
    assert not (len(world.counts._filters) or len(world.selection._combined) or len(world.node_sets)
                or len(world.selection.columns._columns))
    assert [judged(index, world, fits), judged(index, world, too_many)] == before


def test_what_the_world_keeps_per_expression_is_bounded_by_bytes(monkeypatch):
    monkeypatch.setattr(selection, "EXPRESSION_FACT_BYTES", 60_000)
    monkeypatch.setattr(selection, "MAX_COMBINED_BYTES", 60_000)
    index, world = fleet()
    for i in range(20):
        judged(index, world, heavy_claim(i, configs=0, selectors=1))
    facts, combined = world.selection._names, world.selection._combined
    assert facts.weight <= 60_000 and combined.weight <= 60_000
    assert len(facts) < 20 and len(combined) < 20
    # A filter's counts weigh the selectors of its key, not only its arrays.
    key_bytes = [fc.key_bytes for _, fc in list(world.counts._filters._entries.items())]
    assert key_bytes and max(key_bytes) > 9_000


# --- the kept index's facts ------------------------------------------------------------------------------

def test_facts_keyed_by_what_a_review_names_never_stay_with_the_cluster_state():
    index, _ = fleet(1)
    for i in range(30):
        obj = heavy_claim(i, configs=0)
        obj["spec"]["devices"]["requests"][0]["exactly"]["deviceClassName"] = f"missing-{i}.example.com"
        assert "DRA600" in judged(index, None, obj)
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"p{i}", "namespace": f"ns-{i}"},
               "spec": {"containers": [{"name": "c", "image": "x", "resources": {"claims": [{"name": "gpu"}]}}],
                        "resourceClaims": [{"name": "gpu", "resourceClaimName": f"claim-{i}"}]}}
        review(pod, None, "CREATE", "", Options(), cluster=index)
    assert not [key for key in index._derived if any(f"-{i}" in key for i in range(30))]
    assert len(index._derived) < 10
