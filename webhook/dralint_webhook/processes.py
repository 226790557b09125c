"""The replica's processes as Prometheus sees them: who each one is, whether it still runs, and its
numbers under the names of Prometheus's standard process collector (``process_*``).

A process is named by its role (``master``, ``worker``, ``watcher``) and a slot: gunicorn replaces
workers (a crash, SIGHUP, a retirement over the memory ceiling), and a label of the pid would start a
new series with every replacement. The master gives each new worker the lowest slot no running worker
holds (:func:`assign_slot`), so a replica has as many worker slots as workers (twice as many for the
moments of a SIGHUP, while the old ones drain); the master and the watcher have slot 0. A replaced
process shows as a reset of its slot's counters and a new ``process_start_time_seconds``.

Any process of the replica reads the others' numbers from ``/proc/PID`` at scrape time (same user,
same pid namespace): fresh values, and nothing for the gunicorn master to write, whose loop must not
run threads (a lock held by a thread at fork would stay locked in every worker). The pid with the
start time (clock ticks since boot) names one process for good, so a reused pid is never mistaken
for the process that had it. Where there is no ``/proc``, there are no ``process_*`` numbers.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Iterable

ROLES = ("master", "worker", "watcher")
LABELS = ("role", "slot")
# Prometheus's standard process collector: names, types and help as its clients write them.
FAMILIES = (
    ("process_cpu_seconds_total", "counter", "User and system CPU time spent, in seconds."),
    ("process_resident_memory_bytes", "gauge", "Resident memory size, in bytes."),
    ("process_virtual_memory_bytes", "gauge", "Virtual memory size, in bytes."),
    ("process_start_time_seconds", "gauge", "Start time of the process since the Unix epoch, in seconds."),
    ("process_open_fds", "gauge", "Number of open file descriptors."),
    ("process_max_fds", "gauge", "Maximum number of open file descriptors (the soft limit)."),
)


@dataclass(frozen=True)
class Process:
    """One process of the replica: its role, its slot, and the pid and start time that name it."""

    role: str
    slot: int
    pid: int
    start: int      # clock ticks since boot (/proc/PID/stat), 0 where unknown

    @classmethod
    def this(cls, role: str, slot: int = 0) -> "Process":
        """The calling process, in ``role`` and ``slot``."""
        stat = _stat(os.getpid())
        return cls(role, slot, os.getpid(), stat.start if stat else 0)

    def labels(self) -> tuple[str, str]:
        """Its label values, in the order of :data:`LABELS`."""
        return self.role, str(self.slot)

    def running(self) -> bool:
        """Whether it still runs (a zombie does not: it has exited and waits to be reaped)."""
        if not _proc():
            return True     # nothing tells: every process is kept, as if none had exited
        stat = _stat(self.pid)
        return stat is not None and stat.start == self.start and stat.state != "Z"

    def to_dict(self) -> dict[str, Any]:
        return {"role": self.role, "slot": self.slot, "pid": self.pid, "start": self.start}

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> "Process":
        return cls(str(raw["role"]), int(raw["slot"]), int(raw["pid"]), int(raw["start"]))


@dataclass(frozen=True)
class _Stat:
    state: str
    cpu_ticks: int
    start: int
    virtual_bytes: int
    resident_pages: int


def assign_slot(running: Iterable[Any], worker: Any) -> None:
    """In gunicorn's master before a fork: give ``worker`` the lowest slot no ``running`` worker holds."""
    taken = {getattr(other, "slot", None) for other in running}
    worker.slot = next(slot for slot in range(len(taken) + 1) if slot not in taken)


def lines(processes: Iterable[Process]) -> list[str]:
    """The ``process_*`` families of ``processes``, each process's series labelled with its role and slot."""
    rows: list[tuple[Process, dict[str, float]]] = []
    for process in processes:
        numbers = _numbers(process.pid)
        if numbers is not None:
            rows.append((process, numbers))
    out: list[str] = []
    for name, kind, help_text in FAMILIES:
        out += [f"# HELP {name} {help_text}", f"# TYPE {name} {kind}"]
        for process, numbers in sorted(rows, key=lambda row: (ROLES.index(row[0].role), row[0].slot)):
            if name in numbers:
                role, slot = process.labels()
                out.append(f'{name}{{role="{role}",slot="{slot}"}} {_number(numbers[name])}')
    return out


def _numbers(pid: int) -> dict[str, float] | None:
    """The ``process_*`` values of ``pid`` (None once it is gone); a value the kernel will not show is left out."""
    stat = _stat(pid)
    if stat is None:
        return None
    ticks = os.sysconf("SC_CLK_TCK")
    out = {"process_cpu_seconds_total": stat.cpu_ticks / ticks,
           "process_resident_memory_bytes": float(stat.resident_pages * os.sysconf("SC_PAGE_SIZE")),
           "process_virtual_memory_bytes": float(stat.virtual_bytes)}
    boot = _boot_time()
    if boot is not None:
        out["process_start_time_seconds"] = boot + stat.start / ticks
    try:
        out["process_open_fds"] = float(len(os.listdir(f"/proc/{pid}/fd")))
    except OSError:
        pass
    limit = _max_fds(pid)
    if limit is not None:
        out["process_max_fds"] = float(limit)
    return out


def _stat(pid: int) -> _Stat | None:
    """The fields of ``/proc/PID/stat`` used here (None: no such process, or no ``/proc``)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            text = fh.read().decode("ascii", "replace")
        # The command name (field 2) is in parentheses and may hold spaces and parentheses itself.
        fields = text[text.rindex(")") + 2:].split()
        return _Stat(state=fields[0], cpu_ticks=int(fields[11]) + int(fields[12]), start=int(fields[19]),
                     virtual_bytes=int(fields[20]), resident_pages=int(fields[21]))
    except (OSError, ValueError, IndexError):
        return None


def _max_fds(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/limits", encoding="ascii", errors="replace") as fh:
            for line in fh:
                if line.startswith("Max open files"):
                    soft = line[len("Max open files"):].split()[0]
                    return int(soft) if soft.isdigit() else None
    except OSError:
        return None
    return None


# The two memos below take no argument: each holds one float or bool about this machine, for good.
@lru_cache(maxsize=1)
def _boot_time() -> float | None:
    try:
        with open("/proc/stat", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("btime "):
                    return float(line.split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return None


@lru_cache(maxsize=1)
def _proc() -> bool:
    return os.path.isdir("/proc/self")


def _number(value: float) -> str:
    return str(int(value)) if value == int(value) else repr(round(value, 6))
