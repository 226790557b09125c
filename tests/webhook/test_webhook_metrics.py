"""Metrics: per-process snapshots added up, each running process's gauges and numbers, the text format."""
from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path
import re

from dralint_webhook.live import LiveCluster
from dralint_webhook.metrics import BUCKETS, EXITED, Metrics, Sample, render
from dralint_webhook.processes import Process, assign_slot, lines

LINE = re.compile(r'^[a-z_]+(\{([a-z_0-9]+="([^"\\]|\\.)*",?)*\})? [0-9.e+-]+$')
README = Path(__file__).resolve().parents[2] / "webhook" / "README.md"


def test_workers_snapshots_add_up_and_survive_their_workers(tmp_path):
    a, b, scraper = Metrics(str(tmp_path)), Metrics(str(tmp_path)), Metrics(str(tmp_path))
    for m in (a, b, scraper):
        m.bind_process()
    a.observe_review(0.002, "ResourceClaim", "CREATE", True, [("DRA201", "error")])
    b.observe_review(0.02, "ResourceClaim", "CREATE", True, [("DRA201", "error"), ("DRA217", "warning")])
    b.count("rejected", "400")
    a.close()   # an exited worker's counts stay: counters never go down
    b.flush()
    total = scraper.collect()
    assert total.counters["requests"] == {("ResourceClaim", "CREATE", "true"): 2.0}
    assert total.counters["findings"] == {("DRA201", "error"): 2.0, ("DRA217", "warning"): 1.0}
    assert total.counters["rejected"] == {("400",): 1.0}
    assert total.duration_count == 2
    assert total.buckets[BUCKETS.index(0.0025)] == 1 and total.buckets[BUCKETS.index(0.025)] == 2
    for m in (b, scraper):
        m.close()


def test_a_snapshot_is_written_at_start_then_only_after_a_change(tmp_path):
    m = Metrics(str(tmp_path))
    m.bind_process("worker", 3, follow=False)
    (snapshot,) = tmp_path.glob("worker-*.json")     # listed from its start, before it counts anything
    assert Sample.from_json(snapshot.read_text()).process == Process.this("worker", 3)
    written = snapshot.stat().st_mtime_ns, snapshot.read_text()
    time.sleep(0.01)
    m.flush()
    assert (snapshot.stat().st_mtime_ns, snapshot.read_text()) == written
    m.count("reloads", "policy", "success")
    m.gauges = lambda: {"state_generation": {(): 7.0}}
    m.close()
    sample = Sample.from_json(snapshot.read_text())
    assert sample.counters["reloads"] == {("policy", "success"): 1.0}
    assert sample.gauges == {"state_generation": {(): 7.0}}


def exited_worker(folder: Path, slot: int, rejected: int) -> None:
    """A real process that counts ``rejected`` 400s as worker ``slot`` and exits."""
    subprocess.run([sys.executable, "-c", f"""
from dralint_webhook.metrics import Metrics
m = Metrics({str(folder)!r})
m.gauges = lambda: {{"policy": {{("old",): 1.0}}}}
m.bind_process("worker", {slot}, follow=False)
m.count("rejected", "400", value={rejected})
m.close()
"""], check=True, timeout=60)


def test_an_exited_worker_keeps_its_counts_but_not_its_series_and_its_file_is_folded(tmp_path):
    exited_worker(tmp_path, 1, 5)
    exited_worker(tmp_path, 1, 2)       # its replacement, in the same slot, exited too
    scraper = Metrics(str(tmp_path))
    scraper.gauges = lambda: {"policy": {("new",): 1.0}}
    scraper.bind_process("worker", 0, follow=False)
    scraper.count("rejected", "400")
    for _ in range(2):     # the second scrape reads the fold, not the files: the same numbers
        total, running = scraper.scrape()
        assert total.counters["rejected"] == {("400",): 8.0}
        assert [s.process for s in running] == [Process.this("worker", 0)]
        text = render(total, running)
        assert 'dralint_webhook_invalid_requests_total{code="400"} 8' in text
        assert 'sha256="old"' not in text
        assert 'dralint_webhook_policy_info{role="worker",slot="0",sha256="new"} 1' in text
        assert sorted(p.name for p in tmp_path.glob("*.json")) == sorted([EXITED, scraper._file.name])


def test_a_fold_cut_short_before_the_files_go_counts_them_once(tmp_path):
    exited_worker(tmp_path, 1, 5)
    (snapshot,) = tmp_path.glob("worker-*.json")
    kept = snapshot.read_text()
    scraper = Metrics(str(tmp_path))
    scraper.scrape()                    # folds it
    snapshot.write_text(kept)           # as if that scrape had stopped before removing the file
    assert scraper.collect().counters["rejected"] == {("400",): 5.0}
    assert scraper.collect().counters["rejected"] == {("400",): 5.0}


def test_gauges_are_each_running_process_s_own_labelled_by_role_and_slot(tmp_path):
    workers = []
    for slot, generation in ((0, 41.0), (1, 40.0)):
        m = Metrics(str(tmp_path))
        m.gauges = lambda g=generation: {"state_generation": {(): g}, "reload_success": {("policy",): 1.0}}
        m.bind_process("worker", slot, follow=False)
        workers.append(m)
    Metrics(str(tmp_path)).bind_process("watcher", follow=False)
    text = workers[0].exposition()
    assert 'dralint_webhook_cluster_state_generation{role="worker",slot="0"} 41' in text
    assert 'dralint_webhook_cluster_state_generation{role="worker",slot="1"} 40' in text    # never added up
    assert 'dralint_webhook_reload_success{role="worker",slot="1",what="policy"} 1' in text
    for role, slot in (("worker", 0), ("worker", 1), ("watcher", 0)):
        assert re.search(rf'^process_resident_memory_bytes{{role="{role}",slot="{slot}"}} [1-9]', text, re.M)
    assert text.count("dralint_webhook_build_info{") == 1


def test_the_process_numbers_are_read_from_proc():
    text = "\n".join(lines([Process.this("worker", 2)]))
    values = {m[1]: float(m[2]) for m in re.finditer(r'^(\w+)\{role="worker",slot="2"\} (\S+)$', text, re.M)}
    assert set(values) == {"process_cpu_seconds_total", "process_resident_memory_bytes", "process_virtual_memory_bytes",
                           "process_start_time_seconds", "process_open_fds", "process_max_fds"}
    assert values["process_cpu_seconds_total"] > 0 and values["process_resident_memory_bytes"] > 1 << 20
    assert time.time() - 7 * 86400 < values["process_start_time_seconds"] <= time.time()
    assert 3 <= values["process_open_fds"] <= values["process_max_fds"]


def test_a_process_is_its_pid_and_start_time():
    me = Process.this("worker")
    assert me.running()
    assert not Process("worker", 0, me.pid, me.start + 1).running()     # the pid of an earlier process
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait(timeout=60)
    assert not Process("worker", 0, child.pid, 0).running()


class FakeWorker:
    pass


def test_slots_are_the_lowest_free_so_replacements_reuse_them():
    running: dict[int, FakeWorker] = {}

    def spawn(pid: int) -> int:
        worker = FakeWorker()
        assign_slot(running.values(), worker)
        running[pid] = worker
        return worker.slot

    assert [spawn(pid) for pid in (10, 11)] == [0, 1]
    del running[10]                        # a worker crashed or retired: its replacement takes its slot
    assert spawn(12) == 0
    assert [spawn(pid) for pid in (13, 14)] == [2, 3]   # SIGHUP: new workers while the old ones drain
    del running[11], running[12]
    assert spawn(15) == 0
    assert {w.slot for w in running.values()} == {0, 2, 3}


def test_every_metric_is_documented_and_every_documented_one_exists(tmp_path):
    scraper = Metrics(str(tmp_path))
    scraper.bind_process("worker", follow=False)
    text = scraper.exposition() + "\n".join(LiveCluster(str(tmp_path / "state")).metric_lines())
    served = {line.split()[2] for line in text.splitlines() if line.startswith("# TYPE ")}
    table = README.read_text().split("* **Metrics**", 1)[1].split("\n## ", 1)[0]
    documented = {name for row in table.splitlines() if row.lstrip().startswith("| `")
                  for name in re.findall(r"`((?:dralint_webhook|process)_\w+)`", row)}
    assert served - documented == set(), "metrics missing from webhook/README.md's table"
    assert documented - served == set(), "webhook/README.md's table names metrics nobody serves"


def test_a_damaged_snapshot_is_skipped(tmp_path):
    (tmp_path / "worker-1-1.json").write_text("{not json")
    m = Metrics(str(tmp_path))
    m.count("rejected", "413")
    assert m.collect().counters["rejected"] == {("413",): 1.0}


def test_exposition_format():
    sample = Sample()
    sample.counters["requests"][("Pod", "CREATE", "false")] = 3.0
    sample.counters["findings"][('we"ird\\rule\n', "error")] = 1.0
    sample.buckets = [1] * len(BUCKETS)
    sample.duration_sum, sample.duration_count = 0.5, 1
    worker = Sample(gauges={"policy": {("ab12",): 1.0}, "loaded": {("policy",): 1732812345.125}},
                    process=Process.this("worker", 1))
    text = render(sample, [worker])
    assert text.endswith("\n")
    for line in text.splitlines():
        assert line.startswith("# HELP ") or line.startswith("# TYPE ") or LINE.match(line), line
    assert 'dralint_webhook_requests_total{kind="Pod",operation="CREATE",allowed="false"} 3' in text
    assert r'rule="we\"ird\\rule\n"' in text
    assert "# TYPE dralint_webhook_review_duration_seconds histogram" in text
    assert 'dralint_webhook_review_duration_seconds_bucket{le="+Inf"} 1' in text
    assert 'dralint_webhook_policy_info{role="worker",slot="1",sha256="ab12"} 1' in text
    assert 'dralint_webhook_loaded_timestamp_seconds{role="worker",slot="1",what="policy"} 1732812345.125' in text
    assert "process_open_fds{" in text and "dralint_webhook_build_info{" in text
    families = [line.split()[2] for line in text.splitlines() if line.startswith("# TYPE ")]
    assert len(families) == len(set(families))
