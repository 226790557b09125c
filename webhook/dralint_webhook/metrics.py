"""Prometheus metrics of the webhook, in the text exposition format, written here.

Why not ``prometheus_client``: the webhook needs four counters and one histogram, and gunicorn
runs several worker processes, each with its own memory. prometheus_client's multiprocess mode
solves that with mmap files and an environment variable that must be set before import; the
same thing fits in this module: each worker keeps its numbers in memory (a lock, a dict add per
request: about a microsecond) and, when a metrics folder is given, a thread writes a snapshot
file once a second when something changed, and once more when the worker exits; ``/metrics``
adds the snapshots of all workers, those that have exited included, so counters never go down.
Every metric here is a counter or a histogram, so adding is the right merge. Label values come
from fixed sets: kinds the webhook judges (any other is "other"), the four operations, rule ids of
the catalog. The folder belongs to the master: a worker's exit never removes it.
"""
from __future__ import annotations

import json
import os
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

# Admission latency budget is the webhook timeout (seconds); the interesting part is under 50 ms.
BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0)
FLUSH_INTERVAL = 1.0

_COUNTERS = {
    "requests": ("dralint_webhook_requests_total", "Admission reviews answered, by kind, operation and verdict.",
                 ("kind", "operation", "allowed")),
    "findings": ("dralint_webhook_findings_total", "Findings reported in admission reviews, by rule and severity.",
                 ("rule", "severity")),
    "rejected": ("dralint_webhook_invalid_requests_total",
                 "Request bodies that were not AdmissionReviews, by HTTP status.", ("code",)),
    "would_deny": ("dralint_webhook_would_deny_total",
                   "Reviews a rule would have denied had it been enforced as deny, by rule and the enforcement "
                   "(warn or dryrun) that admitted them.", ("rule", "enforcement")),
    "internal_errors": ("dralint_webhook_internal_errors_total",
                        "Reviews dralint failed to judge, by the action the policy took.", ("action",)),
    "reloads": ("dralint_webhook_reloads_total", "Reloads of the policy, cluster state and certificate, by result.",
                ("what", "result")),
    "cache_drops": ("dralint_webhook_cache_drops_total",
                    "Times a worker near its memory ceiling (from 90% of it) dropped its caches, which comes "
                    "before stopping any review for memory.", ()),
    "retirements": ("dralint_webhook_worker_retirements_total",
                    "Workers retired because they stayed over their memory ceiling after dropping their caches "
                    "(stopped gracefully, one at a time; gunicorn starts a fresh one).", ()),
}
_HISTOGRAM = ("dralint_webhook_review_duration_seconds", "Time to judge one admission review (parsing to answer).")


@dataclass
class Sample:
    """One process's numbers: counters by family and label values, and the latency histogram."""

    counters: dict[str, dict[tuple[str, ...], float]] = field(default_factory=lambda: {k: {} for k in _COUNTERS})
    buckets: list[int] = field(default_factory=lambda: [0] * len(BUCKETS))
    duration_sum: float = 0.0
    duration_count: int = 0

    def add(self, other: "Sample") -> None:
        """Add ``other``'s numbers to this one."""
        for family, series in other.counters.items():
            mine = self.counters.setdefault(family, {})
            for labels, value in series.items():
                mine[labels] = mine.get(labels, 0.0) + value
        self.buckets = [a + b for a, b in zip(self.buckets, other.buckets, strict=True)]
        self.duration_sum += other.duration_sum
        self.duration_count += other.duration_count

    def to_json(self) -> str:
        return json.dumps({"counters": {f: [[list(k), v] for k, v in s.items()] for f, s in self.counters.items()},
                           "buckets": self.buckets, "sum": self.duration_sum, "count": self.duration_count})

    @classmethod
    def from_json(cls, text: str) -> "Sample":
        raw = json.loads(text)
        sample = cls()
        for family, series in raw["counters"].items():
            if family in _COUNTERS:
                sample.counters[family] = {tuple(k): float(v) for k, v in series}
        if len(raw["buckets"]) == len(BUCKETS):
            sample.buckets = [int(b) for b in raw["buckets"]]
        sample.duration_sum = float(raw["sum"])
        sample.duration_count = int(raw["count"])
        return sample


class Metrics:
    """The numbers of this process, and (with ``folder``) the snapshot files of every worker."""

    def __init__(self, folder: str | None = None) -> None:
        self._lock = threading.Lock()
        self._flush_lock = threading.Lock()
        self._sample = Sample()
        self._changes = 0        # bumped by every update; a snapshot is written only when it moved
        self._written = 0
        self._folder = Path(folder) if folder else None
        self._file: Path | None = None
        self._stop = threading.Event()

    def bind_process(self) -> None:
        """In a worker after fork: name its snapshot file and start writing it once a second."""
        if self._folder is None:
            return
        # pid plus start time: a later worker that reuses a pid must not overwrite a dead one's counts.
        self._file = self._folder / f"worker-{os.getpid()}-{time.monotonic_ns()}.json"
        with self._lock:
            self._sample = Sample()
            self._changes = self._written = 0
        threading.Thread(target=self._flush_loop, name="metrics-snapshot", daemon=True).start()

    def close(self) -> None:
        """Write the last snapshot and stop (the worker is exiting)."""
        self._stop.set()
        self.flush()

    def count(self, family: str, *labels: str, value: float = 1.0) -> None:
        """Add ``value`` to counter ``family`` (a key of the counter table) with ``labels``."""
        with self._lock:
            series = self._sample.counters[family]
            series[labels] = series.get(labels, 0.0) + value
            self._changes += 1

    def observe_review(self, seconds: float, kind: str, operation: str, allowed: bool,
                       findings: Iterable[tuple[str, str]]) -> None:
        """Record one answered review: its latency, verdict and (rule, severity) findings."""
        with self._lock:
            sample = self._sample
            key = (kind, operation, "true" if allowed else "false")
            sample.counters["requests"][key] = sample.counters["requests"].get(key, 0.0) + 1
            for rule_severity in findings:
                series = sample.counters["findings"]
                series[rule_severity] = series.get(rule_severity, 0.0) + 1
            for i, bound in enumerate(BUCKETS):
                if seconds <= bound:
                    sample.buckets[i] += 1
            sample.duration_sum += seconds
            sample.duration_count += 1
            self._changes += 1

    def _flush_loop(self) -> None:
        while not self._stop.wait(FLUSH_INTERVAL):
            try:
                self.flush()
            except OSError:
                continue   # a full or vanished folder: the numbers stay in memory and are written next time

    def flush(self) -> None:
        """Write this worker's snapshot if anything changed since the last one."""
        if self._file is None:
            return
        with self._flush_lock:  # the snapshot thread and the exiting worker share the temporary file
            with self._lock:
                if self._changes == self._written:
                    return
                changes, text = self._changes, self._sample.to_json()
            tmp = self._file.with_suffix(".tmp")
            tmp.parent.mkdir(parents=True, exist_ok=True)
            tmp.write_text(text, encoding="utf-8")
            os.replace(tmp, self._file)  # readers see the old or the new snapshot, never half of one
            self._written = changes

    def collect(self) -> Sample:
        """This process's numbers plus every other worker's last snapshot."""
        total = Sample()
        with self._lock:
            total.add(self._sample)
        if self._folder is not None:
            for path in sorted(self._folder.glob("worker-*.json")):
                if path == self._file:
                    continue
                try:
                    total.add(Sample.from_json(path.read_text(encoding="utf-8")))
                except (OSError, ValueError, KeyError, TypeError):
                    continue  # a file removed or replaced under us; its numbers return at the next scrape
        return total

    def exposition(self) -> str:
        """The Prometheus text format (version 0.0.4) of :meth:`collect`."""
        return render(self.collect())


def render(sample: Sample) -> str:
    """Prometheus text exposition of ``sample``."""
    lines: list[str] = []
    for family, (name, help_text, label_names) in _COUNTERS.items():
        lines.append(f"# HELP {name} {help_text}")
        lines.append(f"# TYPE {name} counter")
        for labels, value in sorted(sample.counters.get(family, {}).items()):
            lines.append(f"{name}{_labels(zip(label_names, labels, strict=True))} {_number(value)}")
    name, help_text = _HISTOGRAM
    lines.append(f"# HELP {name} {help_text}")
    lines.append(f"# TYPE {name} histogram")
    for bound, count in zip(BUCKETS, sample.buckets, strict=True):
        lines.append(f'{name}_bucket{{le="{bound}"}} {count}')
    lines.append(f'{name}_bucket{{le="+Inf"}} {sample.duration_count}')
    lines.append(f"{name}_sum {sample.duration_sum!r}")
    lines.append(f"{name}_count {sample.duration_count}")
    return "\n".join(lines) + "\n"


def _labels(pairs: Iterable[tuple[str, str]]) -> str:
    body = ",".join(f'{k}="{_escape(v)}"' for k, v in pairs)
    return "{" + body + "}" if body else ""


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _number(value: float) -> str:
    return str(int(value)) if value == int(value) else repr(value)
