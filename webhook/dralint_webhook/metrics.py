"""Prometheus metrics of the webhook, in the text exposition format, written here.

Why not ``prometheus_client``: the webhook needs a few counters, gauges and one histogram, and
gunicorn runs several worker processes, each with its own memory. prometheus_client's multiprocess mode
solves that with mmap files and an environment variable that must be set before import; the
same thing fits in this module: each worker keeps its numbers in memory (a lock, a dict add per
request: about a microsecond) and, when a metrics folder is given, a thread writes a snapshot
file once a second when something changed, and once more when the worker exits; ``/metrics``
adds the snapshots of all workers, those that have exited included, so counters never go down.
Counters and the histogram are added up; gauges are one process's (below). Label values come
from fixed sets: kinds the webhook judges (any other is "other"), the four operations, rule ids of
the catalog. The folder belongs to the master: a worker's exit never removes it.

Every process of the replica has a snapshot file, named by its role, pid and start: the master and
the watcher write theirs once (to be listed), a worker whenever its numbers change. Beside the
counters, a worker's file holds its gauges (the policy and cluster state it serves, the result of
its last reloads), which are never added up: ``/metrics`` shows those of each process still
running, labelled with its role and slot (:mod:`.processes`), with its ``process_*`` numbers. The
files of exited processes are folded into one (``exited.json``) by the next scrape, so neither the
folder nor the series grow with every worker gunicorn replaces.
"""
from __future__ import annotations

import fcntl
import json
import os
import platform
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Sequence

import gunicorn

from dralint import __version__

from . import processes
from .processes import Process

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
# One process's numbers, never added up: each running process's, labelled with its role and slot.
_GAUGES = {
    "reload_success": ("dralint_webhook_reload_success",
                       "1 when the last attempt to re-read the file succeeded; 0 while a broken edit is refused and "
                       "the previous one stays in force.", ("what",)),
    "reload_attempt": ("dralint_webhook_reload_attempt_timestamp_seconds",
                       "When the file was last read, successfully or not.", ("what",)),
    "loaded": ("dralint_webhook_loaded_timestamp_seconds", "When the value in force was read.", ("what",)),
    "policy": ("dralint_webhook_policy_info", "The policy in force: sha256 of its file (empty: the defaults).",
               ("sha256",)),
    "state_generation": ("dralint_webhook_cluster_state_generation",
                         "Generation of the watched cluster state the worker judges with (compare "
                         "dralint_webhook_cluster_published_generation: a worker behind it is lagging).", ()),
}
Gauges = dict[str, dict[tuple[str, ...], float]]
EXITED = "exited.json"
_LOCK = "fold.lock"


@dataclass
class Sample:
    """One process's numbers: counters by family and label values, the latency histogram, and its
    gauges with the process they are of (a total of several processes has none)."""

    counters: dict[str, dict[tuple[str, ...], float]] = field(default_factory=lambda: {k: {} for k in _COUNTERS})
    buckets: list[int] = field(default_factory=lambda: [0] * len(BUCKETS))
    duration_sum: float = 0.0
    duration_count: int = 0
    gauges: Gauges = field(default_factory=dict)
    process: Process | None = None

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
        return json.dumps(self.to_dict())

    def to_dict(self) -> dict[str, Any]:
        return {"counters": {f: [[list(k), v] for k, v in s.items()] for f, s in self.counters.items()},
                "buckets": self.buckets, "sum": self.duration_sum, "count": self.duration_count,
                "gauges": {f: [[list(k), v] for k, v in s.items()] for f, s in self.gauges.items()},
                "process": self.process.to_dict() if self.process else None}

    @classmethod
    def from_json(cls, text: str) -> "Sample":
        return cls.from_dict(json.loads(text))

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> "Sample":
        sample = cls()
        for family, series in raw["counters"].items():
            if family in _COUNTERS:
                sample.counters[family] = {tuple(k): float(v) for k, v in series}
        if len(raw["buckets"]) == len(BUCKETS):
            sample.buckets = [int(b) for b in raw["buckets"]]
        sample.duration_sum = float(raw["sum"])
        sample.duration_count = int(raw["count"])
        sample.gauges = {f: {tuple(k): float(v) for k, v in series}
                         for f, series in (raw.get("gauges") or {}).items() if f in _GAUGES}
        sample.process = Process.from_dict(raw["process"]) if raw.get("process") else None
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
        # This process's gauges, asked for at each snapshot and scrape (the webhook sets it).
        self.gauges: Callable[[], Gauges] = dict
        self.process: Process | None = None

    def bind_process(self, role: str = "worker", slot: int = 0, *, follow: bool = True) -> None:
        """In a process of the replica (a worker after fork, the watcher, the master): name its snapshot
        file and write it at once, so that the process is listed from its start; with ``follow``, write
        it again once a second when something changed (never in gunicorn's master: it forks)."""
        self.process = Process.this(role, slot)
        if self._folder is None:
            return
        # pid plus start time: a later process that reuses a pid must not overwrite a dead one's counts.
        self._file = self._folder / f"{role}-{os.getpid()}-{time.monotonic_ns()}.json"
        with self._lock:
            self._sample = Sample(process=self.process)
            self._changes, self._written = 1, 0
        self.flush()
        if follow:
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
        gauges = self.gauges()
        with self._flush_lock:  # the snapshot thread and the exiting worker share the temporary file
            with self._lock:
                if gauges != self._sample.gauges:
                    self._sample.gauges = gauges
                    self._changes += 1
                if self._changes == self._written:
                    return
                changes, text = self._changes, self._sample.to_json()
            tmp = self._file.with_suffix(".tmp")
            tmp.parent.mkdir(parents=True, exist_ok=True)
            tmp.write_text(text, encoding="utf-8")
            os.replace(tmp, self._file)  # readers see the old or the new snapshot, never half of one
            self._written = changes

    def collect(self) -> Sample:
        """This process's numbers plus every other process's last snapshot, exited ones included."""
        return self.scrape()[0]

    def scrape(self) -> tuple[Sample, list[Sample]]:
        """Every process's numbers added up (exited ones included), and the sample of each process still
        running (this one first), for its gauges; the files of exited processes are folded on the way."""
        own = Sample(gauges=self.gauges(), process=self.process or Process.this("worker"))
        with self._lock:
            own.add(self._sample)
        total, running = Sample(), [own]
        total.add(own)
        if self._folder is not None:
            try:
                others, running_others = self._others(self._folder)
            except OSError:
                return total, running     # the folder is gone: the master is stopping the replica
            total.add(others)
            running += running_others
        return total, running

    def _others(self, folder: Path) -> tuple[Sample, list[Sample]]:
        """The other processes' snapshots: all added up, and those of the running ones."""
        total, running = Sample(), []
        with _folding(folder):
            exited, folded = _read_exited(folder)
            gone: list[Path] = []
            for path in sorted(folder.glob("*.json")):
                if path == self._file or path.name == EXITED or path.name in folded:
                    continue
                try:
                    sample = Sample.from_json(path.read_text(encoding="utf-8"))
                except (OSError, ValueError, KeyError, TypeError):
                    continue  # a file damaged or replaced under us; its numbers return at the next scrape
                if sample.process is not None and not sample.process.running():
                    exited.add(sample)      # its last snapshot: an exited process writes no more
                    gone.append(path)
                    continue
                total.add(sample)
                if sample.process is not None:
                    running.append(sample)
            total.add(exited)
            if gone:
                try:
                    # Written before the files go: a scrape stopped in between finds them named as folded.
                    _write_exited(folder, exited, [path.name for path in gone])
                    for path in gone:
                        path.unlink(missing_ok=True)
                except OSError:
                    pass    # a full folder: the files stay, counted as exited, and are folded next time
        return total, running

    def exposition(self) -> str:
        """The Prometheus text format (version 0.0.4) of :meth:`scrape`."""
        return render(*self.scrape())


@contextmanager
def _folding(folder: Path) -> Iterator[None]:
    """One scrape at a time reads and folds the folder (scrapes are seconds apart and take milliseconds)."""
    with open(folder / _LOCK, "a+b") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _read_exited(folder: Path) -> tuple[Sample, set[str]]:
    """The numbers of every exited process, and the names of the files already folded into them (a
    scrape interrupted between writing the total and removing the files must not count them twice)."""
    try:
        raw = json.loads((folder / EXITED).read_text(encoding="utf-8"))
        return Sample.from_dict(raw["sample"]), set(raw["folded"])
    except FileNotFoundError:
        return Sample(), set()


def _write_exited(folder: Path, exited: Sample, folded: list[str]) -> None:
    tmp = folder / (EXITED + ".tmp")
    tmp.write_text(json.dumps({"sample": exited.to_dict(), "folded": folded}), encoding="utf-8")
    os.replace(tmp, folder / EXITED)


def render(sample: Sample, running: Sequence[Sample] = ()) -> str:
    """Prometheus text exposition of ``sample`` (counters and histogram), with the build, and the gauges
    and ``process_*`` numbers of each process in ``running``."""
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
    ordered = sorted(((s.process, s) for s in running if s.process is not None),
                     key=lambda pair: (processes.ROLES.index(pair[0].role), pair[0].slot))
    for family, (name, help_text, label_names) in _GAUGES.items():
        lines.append(f"# HELP {name} {help_text}")
        lines.append(f"# TYPE {name} gauge")
        for process, each in ordered:
            for labels, value in sorted(each.gauges.get(family, {}).items()):
                pairs = zip(processes.LABELS + label_names, process.labels() + labels, strict=True)
                lines.append(f"{name}{_labels(pairs)} {_number(value)}")
    lines += build_info()
    lines += processes.lines(process for process, _ in ordered)
    return "\n".join(lines) + "\n"


def build_info() -> list[str]:
    """``dralint_webhook_build_info``: one series per replica, since every process of it is a fork of
    the master after it imported the code (gunicorn's ``preload_app``): none can run another build."""
    name = "dralint_webhook_build_info"
    labels = _labels((("version", __version__), ("python", platform.python_version()),
                      ("implementation", platform.python_implementation()), ("gunicorn", gunicorn.__version__)))
    return [f"# HELP {name} The webhook's version and what runs it; always 1.", f"# TYPE {name} gauge",
            f"{name}{labels} 1"]


def _labels(pairs: Iterable[tuple[str, str]]) -> str:
    body = ",".join(f'{k}="{_escape(v)}"' for k, v in pairs)
    return "{" + body + "}" if body else ""


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _number(value: float) -> str:
    return str(int(value)) if value == int(value) else repr(value)
