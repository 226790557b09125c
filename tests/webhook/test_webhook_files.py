"""Files the webhook re-reads (policy, cluster state, certificate): never lost, never half-read, never
on the request path when they are large, and the state of each visible in /metrics and /readyz."""
from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest
import yaml

from dralint_webhook.app import Settings, build_webhook, create_app
from dralint_webhook.cluster import ClusterError
from dralint_webhook.guard import ReviewAborted
from dralint_webhook.reloading import Reloading
from test_webhook_app import HEALTH_PORT
from test_webhook_server import claim, review_of
from test_webhook_state import CLASS, slice_obj
from test_webhook_watch import wait_for

def write_docs(path: Path, *docs: dict) -> None:
    path.write_text("---\n".join(yaml.safe_dump(d) for d in docs))


# --- Reloading: settled, never lost -------------------------------------------------------------------------

def test_a_change_is_loaded_only_once_the_file_has_settled(tmp_path):
    path = tmp_path / "value.txt"
    path.write_text("1")
    value = Reloading("value", (str(path),), path.read_text, interval=0, settle=0.3)
    path.write_text("12")          # a writer in the middle of its work: looks the same for less than 0.3 s
    assert value.current() == "1"
    path.write_text("123")
    assert value.current() == "1"
    time.sleep(0.35)
    assert value.current() == "123"


def test_a_load_interrupted_by_a_reviews_deadline_is_tried_again(tmp_path):
    path = tmp_path / "value.txt"
    path.write_text("1")
    interrupt = [True]

    def load() -> str:
        if interrupt[0] and path.read_text() == "2":
            interrupt[0] = False
            raise ReviewAborted()    # what the guard raises in a review's thread at its deadline
        return path.read_text()

    value = Reloading("value", (str(path),), load, interval=0)
    path.write_text("2")
    with pytest.raises(ReviewAborted):
        value.current()
    assert value.current() == "2"     # not lost: the next look loads it


def test_a_followed_value_is_loaded_off_the_request_path(tmp_path):
    path = tmp_path / "value.txt"
    path.write_text("1")
    loads: list[str] = []

    def load() -> str:
        loads.append(threading.current_thread().name)
        return path.read_text()

    value = Reloading("value", (str(path),), load, interval=0.05)
    value.start()
    path.write_text("2")
    wait_for(lambda: value.current() == "2")
    assert loads[1:] == ["reload-value"]


# --- the cluster state from files ------------------------------------------------------------------------

def test_a_state_that_lost_every_slice_is_refused(tmp_path):
    folder = tmp_path / "cluster"
    folder.mkdir()
    write_docs(folder / "class.yaml", CLASS)
    write_docs(folder / "slices.yaml", slice_obj("node-0"), slice_obj("node-1"))
    hook = build_webhook(Settings(cluster_paths=(str(folder),), reload_interval=0))
    (folder / "slices.yaml").unlink()
    state = hook.cluster()
    assert len(state.index.slices) == 2
    assert "no ResourceSlice, where the state in force has 2" in hook.cluster_source.error
    write_docs(folder / "slices.yaml", slice_obj("node-3"))
    assert [s.name for s in hook.cluster().index.slices] == ["node-3-gpu"] and hook.cluster_source.error == ""


def test_a_state_without_slices_from_the_start_is_taken(tmp_path):
    from dralint.engine import Options
    from dralint_webhook.cluster import load_state

    (tmp_path / "class.yaml").write_text(yaml.safe_dump(CLASS))
    assert load_state((str(tmp_path),), Options()).index.slices == []
    with pytest.raises(ClusterError):
        load_state((str(tmp_path / "missing"),), Options())


def test_files_keep_a_feasibility_view_so_reviews_never_build_one(tmp_path, monkeypatch):
    folder = tmp_path / "cluster"
    folder.mkdir()
    write_docs(folder / "cluster.yaml", CLASS, slice_obj("node-0", devices=2))
    policy = tmp_path / "policy.yaml"
    policy.write_text("feasibility: deny\n")
    hook = build_webhook(Settings(cluster_paths=(str(folder),), policy_file=str(policy), reload_interval=0))
    assert hook.cluster().fleet.ready()

    import dralint.feasibility.world as world_module
    monkeypatch.setattr(world_module.World, "from_index", classmethod(lambda *a, **k: pytest.fail("built a world")))
    client = create_app(hook).test_client()

    def allowed(count: int) -> bool:
        body = json.dumps(review_of(claim(count=count), "CREATE", None, "", False, "u1"))
        return client.post("/validate", data=body, content_type="application/json").get_json()["response"]["allowed"]

    assert allowed(2) is True
    assert allowed(3) is False          # two GPUs on the only node: never allocatable (DRA701), denied


# --- visible: /metrics and /readyz ----------------------------------------------------------------------

def test_a_refused_policy_edit_is_visible_before_any_restart(tmp_path):
    policy = tmp_path / "policy.yaml"
    policy.write_text("organization:\n  maxDevicesPerClaim: 2\n")
    hook = build_webhook(Settings(policy_file=str(policy), reload_interval=0))
    client = create_app(hook).test_client()
    first = hook.policy().digest
    assert len(first) == 64
    metrics = client.get("/metrics", environ_base=HEALTH_PORT).get_data(as_text=True)
    assert f'dralint_webhook_policy_info{{role="worker",slot="0",sha256="{first}"}} 1' in metrics
    assert 'dralint_webhook_reload_success{role="worker",slot="0",what="policy"} 1' in metrics

    policy.write_text("organization:\n  maxDevicesPerClaim:\n")    # the file cut after a key: no limit?
    hook.policy()
    ready = client.get("/readyz")
    assert ready.status_code == 200 and "policy: the last edit was refused" in ready.get_data(as_text=True)
    metrics = client.get("/metrics", environ_base=HEALTH_PORT).get_data(as_text=True)
    assert 'dralint_webhook_reload_success{role="worker",slot="0",what="policy"} 0' in metrics
    assert f'dralint_webhook_policy_info{{role="worker",slot="0",sha256="{first}"}} 1' in metrics  # the first in force
    assert hook.policy().org.max_devices == 2


# --- building beside the state in force -------------------------------------------------------------------

def test_the_collector_is_paused_while_any_build_runs_and_the_result_frozen():
    import gc

    from dralint_webhook.collector import Collector

    collector = Collector()
    frozen = gc.get_freeze_count()
    with collector.paused():
        built = [[i] for i in range(1000)]    # lists: the collector tracks them (a dict of ints it does not)
        with collector.paused():           # a second build at once (the files' and the policy's)
            assert not gc.isenabled()
        assert not gc.isenabled()           # the first is still running
    assert gc.isenabled()
    assert gc.get_freeze_count() >= frozen + len(built)


def test_a_fleet_view_is_behind_when_the_policy_changes_its_release_or_turns_it_off(tmp_path):
    from dralint.index import Index
    from dralint.kube.releases import Release
    from dralint_webhook.fleet import FleetView

    wanted = [Release(34)]
    view = FleetView(lambda: wanted[0])
    assert view.behind()
    view.update(Index(), [])
    assert not view.behind() and view.ready()
    wanted[0] = Release(35)
    assert view.behind() and not view.ready()
    view.update(Index(), [])
    wanted[0] = None                        # feasibility: off, the view's memory is to be let go
    assert view.behind() and view.ready()
    view.update(Index(), [])
    assert not view.behind()


def test_a_replaced_state_and_the_judgements_on_it_leave_no_reference_cycle(tmp_path):
    # The collector freezes each state it builds, and whatever cyclic garbage exists then: a cycle of a
    # replaced state, or one of a judgement that holds the state, would never be freed.
    import gc

    folder = tmp_path / "cluster"
    folder.mkdir()
    write_docs(folder / "cluster.yaml", CLASS, slice_obj("node-0"), slice_obj("node-1"))
    policy = tmp_path / "policy.yaml"
    policy.write_text("feasibility: deny\n")
    hook = build_webhook(Settings(cluster_paths=(str(folder),), policy_file=str(policy), reload_interval=0))
    client = create_app(hook).test_client()

    def judge_some() -> None:
        for count in (1, 2, 3):
            body = json.dumps(review_of(claim(count=count), "CREATE", None, "", False, "u1"))
            client.post("/validate", data=body, content_type="application/json")

    judge_some()
    gc.collect()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        write_docs(folder / "cluster.yaml", CLASS, slice_obj("node-0"), slice_obj("node-2"))
        assert [s.name for s in hook.cluster().index.slices] == ["node-0-gpu", "node-2-gpu"]
        judge_some()
        gc.collect()
        ours = {type(o).__qualname__ for o in gc.garbage if type(o).__module__.startswith("dralint")}
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
    assert ours == set()
