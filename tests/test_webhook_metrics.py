"""Metrics: per-worker snapshots added up, and the Prometheus text format."""
from __future__ import annotations

import re

from dralint_webhook.metrics import BUCKETS, Metrics, Sample, render

LINE = re.compile(r'^[a-z_]+(\{([a-z_]+="([^"\\]|\\.)*",?)*\})? [0-9.e+-]+$')


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


def test_a_snapshot_is_written_only_after_a_change(tmp_path):
    m = Metrics(str(tmp_path))
    m.bind_process()
    m.flush()
    assert list(tmp_path.glob("worker-*.json")) == []
    m.count("reloads", "policy", "success")
    m.close()
    (snapshot,) = tmp_path.glob("worker-*.json")
    assert Sample.from_json(snapshot.read_text()).counters["reloads"] == {("policy", "success"): 1.0}


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
    text = render(sample)
    assert text.endswith("\n")
    for line in text.splitlines():
        assert line.startswith("# HELP ") or line.startswith("# TYPE ") or LINE.match(line), line
    assert 'dralint_webhook_requests_total{kind="Pod",operation="CREATE",allowed="false"} 3' in text
    assert r'rule="we\"ird\\rule\n"' in text
    assert "# TYPE dralint_webhook_review_duration_seconds histogram" in text
    assert 'dralint_webhook_review_duration_seconds_bucket{le="+Inf"} 1' in text
