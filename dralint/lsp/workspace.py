"""The editor's view of a project: its configuration, its files, and the findings of its open documents.

A document is judged in the context of every manifest of the workspace (for references and
feasibility), read from disk except where the editor holds newer text, plus the ``cluster`` state
the configuration names: the findings are those ``dralint <workspace>`` would report for that
file with the editor's text. Files read from disk are kept, parsed, until they change on disk.
No LSP types here: the server turns these records into messages.

A large document's objects are context for the others as a :class:`Layer`, taken from its own
run and laid over the index of the other files: the documents being typed in never wait for the
large one to be judged again (the server judges it on a thread of its own).
"""
from __future__ import annotations

import dataclasses
import functools
import os
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Collection, Mapping, Sequence

from .. import source
from ..cancel import checkpoint
from ..catalog import Catalog
from ..convert import Canonical
from ..config import Config, ConfigError, find_config, load_config, options as config_options
from ..options import Options
from ..engine import RunResult, Surroundings, index_surroundings, lint_files
from ..findings import Finding
from ..engine.result import Subject
from ..fixers import attach
from ..index import Index
from ..kube.releases import ReleaseError
from ..rule_filter import UsageError
from ..source.records import SourceFile

# At most this many files of a workspace are read as context: a repository with more YAML than
# this is mostly not Kubernetes manifests, and reading it all would stall the first diagnostics.
MAX_CONTEXT_FILES = 5000
_AROUND_KEPT = 2
# Fixes are made this many findings at a time (each batch reads the text's lines once).
_FIX_BATCH = 1000
# What a run while typing leaves out: the feasibility stage (DRA7xx), and the report of unused
# suppressions (DRA910), which cannot be judged without it.
FEASIBILITY_RULES = "DRA7"
WHOLE_RUN_RULES = (FEASIBILITY_RULES, "DRA910")
# The feasibility stage's wall-clock bound in the editor (the command line counts search steps only: a
# verdict there must not depend on the machine's load; an editor must answer while the user types).
FEASIBILITY_SECONDS = 10.0


@dataclass(frozen=True)
class Linted:
    """One judged document: its findings, the parsed text they point into, and the settings they
    were judged with (their fixes are made on request, with the same)."""

    findings: list[Finding]
    parsed: SourceFile
    settings: "Settings"
    subjects: Mapping[Finding, Subject] = field(default_factory=dict)
    """What the run held about each fixable finding, for its fix (:func:`dralint.fixers.attach`)."""


@dataclass(frozen=True)
class Layer:
    """A large document's objects as the other documents' context: those the API server would
    accept (as it would store them), the identities of those it would refuse, and all of them in
    order (for DRA605), from the run that judged its ``text``."""

    path: str
    text: str
    accepted: list[Canonical]
    refused: dict[tuple[str, str, str], str]
    linted: tuple[Canonical, ...]


@dataclass
class Settings:
    """What the configuration says, and what was wrong with it."""

    config: Config = field(default_factory=Config)
    options: Options = field(default_factory=Options)
    notes: list[str] = field(default_factory=list)
    error: str | None = None

    @functools.cached_property
    def quick(self) -> Options:
        """The options of a run while typing: without the feasibility stage and unused suppressions."""
        return dataclasses.replace(self.options, ignore=self.options.ignore + (FEASIBILITY_RULES,),
                                   report_unused_ignores=False)


@dataclass(frozen=True)
class _Stamp:
    """What tells a file on disk changed."""

    mtime_ns: int
    size: int


def _stamp(path: str) -> _Stamp | None:
    try:
        info = os.stat(path)
    except OSError:
        return None
    return _Stamp(info.st_mtime_ns, info.st_size)


class Workspace:
    """Configuration, context files and the linting of open documents, for one set of folders.

    Safe for runs on several threads at once (the server judges large documents on threads of
    their own): the kept files, indexes and settings change under a lock, and each run reads the
    settings once, so a configuration read again meanwhile applies from the next run on.
    """

    def __init__(self, roots: Sequence[Path], catalog: Catalog) -> None:
        self.roots = [r.resolve() for r in roots]
        self.catalog = catalog
        self.settings = Settings()
        self._lock = threading.RLock()
        self._paths: list[str] | None = None
        self._cluster: list[str] | None = None
        self._disk: dict[str, tuple[_Stamp, SourceFile]] = {}
        self._texts: dict[str, tuple[str, SourceFile]] = {}
        self._config_seen: tuple[Path | None, _Stamp | None] | None = None
        self._around: OrderedDict[frozenset[str], _Around] = OrderedDict()
        self._layered: OrderedDict[tuple[frozenset[str], frozenset[str]], _Layered] = OrderedDict()
        self.truncated = False
        self.reload_config()

    # -- configuration -----------------------------------------------------------------------

    def _config_path(self) -> Path | None:
        return find_config(self.roots[0] if self.roots else Path.cwd())

    def config_changed(self) -> bool:
        """Whether the configuration file found, or its contents, changed since it was read."""
        found = self._config_path()
        return (found, _stamp(str(found)) if found else None) != self._config_seen

    def reload_config(self) -> Settings:
        """Read the configuration again (the nearest to the first folder, as ``dralint`` run there).

        A broken configuration keeps the settings that were in force and says what is wrong.
        """
        with self._lock:
            found = self._config_path()
            self._config_seen = (found, _stamp(str(found)) if found else None)
            try:
                config = load_config(found, self.catalog) if found else Config()
                options, notes = config_options(config)
                if options.max_seconds is None:  # an editor waits for its answer: the search is bounded in time too
                    options = dataclasses.replace(options, max_seconds=FEASIBILITY_SECONDS)
            except (ConfigError, ReleaseError, UsageError, ValueError) as exc:
                self.settings = Settings(self.settings.config, self.settings.options, error=str(exc))
                return self.settings
            self.settings = Settings(config, options, notes)
            self._cluster = None
            self._cluster_paths(self.settings.notes)
            return self.settings

    def _current_settings(self) -> Settings:
        """The settings of a run: the configuration is read again first when it changed on disk (so
        editors without file watching see it too: one ``stat`` per folder up to the repository root)."""
        with self._lock:
            if self.config_changed():
                self.reload_config()
            return self.settings

    # -- files ---------------------------------------------------------------------------------

    def files_changed(self) -> None:
        """Files were created or deleted: find the workspace's files again before the next lint."""
        with self._lock:
            self._paths = None
            self._cluster = None

    def _workspace_paths(self) -> list[str]:
        with self._lock:
            if self._paths is None:
                found, _ = source.discover([str(r) for r in self.roots])
                self.truncated = len(found) > MAX_CONTEXT_FILES
                self._paths = [os.path.normpath(p) for p in found[:MAX_CONTEXT_FILES]]
                kept = set(self._paths)
                self._disk = {p: v for p, v in self._disk.items() if p in kept}
            return self._paths

    def _cluster_paths(self, notes: list[str] | None = None) -> list[str]:
        with self._lock:
            if self._cluster is None:
                found, problems = source.discover(list(self.settings.options.cluster))
                if notes is not None:
                    notes += [f"cluster: {p.file}: {p.message}" for p in problems]
                self._cluster = [os.path.normpath(p) for p in found]
            return self._cluster

    def _from_disk(self, path: str) -> SourceFile:
        stamp = _stamp(path)
        with self._lock:
            kept = self._disk.get(path)
        if kept is not None and stamp is not None and kept[0] == stamp:
            return kept[1]
        loaded = source.load_file(path)
        if stamp is not None:
            with self._lock:
                self._disk[path] = (stamp, loaded)
        return loaded

    def read_text(self, path: str, text: str) -> SourceFile:
        """``text`` parsed as the file ``path`` (kept until the text changes)."""
        path = os.path.normpath(path)
        with self._lock:
            kept = self._texts.get(path)
        if kept is not None and kept[0] == text:
            return kept[1]
        loaded = source.load_text(text, path)
        with self._lock:
            self._texts[path] = (text, loaded)
        return loaded

    def forget(self, path: str) -> None:
        """The editor closed ``path``: its text is the file's on disk again."""
        with self._lock:
            self._texts.pop(path, None)

    # -- linting -------------------------------------------------------------------------------

    def lint(self, judged: Collection[str], texts: Mapping[str, str], *, feasibility: bool = True,
             layers: Sequence[Layer] = ()) -> dict[str, Linted]:
        """Findings of the documents ``judged`` (paths), with ``texts`` the editor's unsaved or open
        text by path, in the context of every workspace file, the ``layers`` of large documents
        (which stand for their files) and the configured cluster state. Without ``feasibility``
        the allocator's stage (DRA7xx) is left out: it can take longer than typing allows, so the
        server runs it once typing pauses. Findings come without fixes (:meth:`fixes`).
        """
        return self._lint({os.path.normpath(p) for p in judged}, texts, feasibility=feasibility, layers=layers)[0]

    def _lint(self, judged: set[str], texts: Mapping[str, str], *, feasibility: bool = True,
              layers: Sequence[Layer] = ()) -> tuple[dict[str, Linted], RunResult]:
        settings = self._current_settings()
        run = self._run(settings, judged, texts, layers)
        surroundings = self._with_layers(self._surroundings(settings, run), layers, run)
        paths = sorted(judged)
        files = [run.read(p) for p in paths]
        options = settings.options if feasibility else settings.quick
        result = lint_files(files, options, surroundings=surroundings)
        out = {p: Linted([], f, settings, result.subjects) for p, f in zip(paths, files, strict=True)}
        for finding in result.findings:
            linted = out.get(finding.file)
            if linted is not None and not settings.config.ignored(finding.file, finding.rule):
                linted.findings.append(finding)
        return out, result

    def lint_large(self, path: str, text: str, texts: Mapping[str, str],
                   layers: Sequence[Layer] = ()) -> tuple[Linted, Layer]:
        """A large document judged whole (as :meth:`lint`), and its objects as the context of the
        others, from the same run: those the API server would accept (as the command line leaves
        the others out), the identities of the others, and all of them for DRA605."""
        path = os.path.normpath(path)
        out, result = self._lint({path}, {**texts, path: text}, layers=[lay for lay in layers if lay.path != path])
        assert result.index is not None

        def mine(obj: Canonical) -> bool:
            return obj.manifest.document.file == path

        index = result.index
        layer = Layer(path, text, [o for o in index.all_objects() + index.context_objects if mine(o)],
                      {key: file for key, file in index.refused.items() if file == path},
                      tuple(o for o in result.linted if mine(o)))
        return out[path], layer

    def fixes(self, linted: Linted, findings: Sequence[Finding]) -> list[Finding]:
        """``findings`` (of ``linted``) with their fixes: made on request, for the findings a code
        action asks about, rather than for every finding of every run. In batches, between which
        a cancelled request stops (the fixes of a whole large document take a while)."""
        out: list[Finding] = []
        for start in range(0, len(findings), _FIX_BATCH):
            checkpoint()
            out += attach(findings[start:start + _FIX_BATCH], linted.subjects, [linted.parsed],
                          linted.settings.options.release, self.catalog)
        return out

    def _run(self, settings: Settings, judged: set[str], texts: Mapping[str, str], layers: Sequence[Layer]) -> "_Run":
        """The files of a run judging ``judged``: the command line's order of files (of ``dralint
        <workspace>``), the cluster state after them; what the layers stand for is no file of it."""
        texts = {os.path.normpath(p): t for p, t in texts.items()}
        cluster = [p for p in self._cluster_paths() if p not in judged]
        layered = {layer.path for layer in layers}
        run = [p for p in self._workspace_paths() if p not in cluster]
        run += sorted(set(texts).union(layered).difference(run, cluster))
        around = [p for p in run if p not in judged and p not in layered]

        def read(path: str) -> SourceFile:
            return self.read_text(path, texts[path]) if path in texts else self._from_disk(path)

        return _Run(frozenset(judged), around, cluster, _run_order(run), read)

    def _surroundings(self, settings: Settings, run: "_Run") -> Surroundings:
        """The index of everything but the judged documents (and the layers), kept while none of it
        changes; the judged documents' objects join it in the run's order.

        Two are kept: the one around the document being edited, and the one around the others,
        which are judged again when typing pauses.
        """
        around = [run.read(p) for p in run.around]
        cluster = [run.read(p) for p in run.cluster]
        with self._lock:
            kept = self._around.get(run.judged)
            if kept is not None and kept.settings is settings and _same(kept.around, around) \
                    and _same(kept.cluster, cluster):
                self._around.move_to_end(run.judged)
                return kept.surroundings
        surroundings = dataclasses.replace(index_surroundings(around, settings.options, cluster_files=cluster),
                                           order=run.order)
        with self._lock:
            self._around[run.judged] = _Around(settings, around, cluster, surroundings)
            while len(self._around) > _AROUND_KEPT:
                self._around.popitem(last=False)
        return surroundings

    def _with_layers(self, surroundings: Surroundings, layers: Sequence[Layer], run: "_Run") -> Surroundings:
        """``surroundings`` with the objects of ``layers`` laid over it (kept while neither changes)."""
        if not layers:
            return surroundings
        key = run.judged, frozenset(layer.path for layer in layers)
        with self._lock:
            kept = self._layered.get(key)
            if kept is not None and kept.under is surroundings and _same(kept.layers, layers):
                self._layered.move_to_end(key)
                return kept.surroundings
        order = run.order
        index: Index = surroundings.index.overlay([o for layer in layers for o in layer.accepted], beside=order)
        for layer in layers:
            for identity, file in layer.refused.items():
                index.refused.setdefault(identity, file)
        linted = sorted([*surroundings.linted, *(o for layer in layers for o in layer.linted)], key=order)
        layered = Surroundings(index, surroundings.cluster_given, tuple(linted), order)
        with self._lock:
            self._layered[key] = _Layered(surroundings, list(layers), layered)
            while len(self._layered) > _AROUND_KEPT:
                self._layered.popitem(last=False)
        return layered


@dataclass(frozen=True)
class _Run:
    """The files of one run: the judged, the others (in run order), the cluster state's, how to
    read each, and the order of their objects."""

    judged: frozenset[str]
    around: list[str]
    cluster: list[str]
    order: Callable[[Canonical], int]
    read: Callable[[str], SourceFile]


@dataclass(frozen=True)
class _Around:
    """One kept index, with what it was built from (the parsed files are kept until they change)."""

    settings: Settings
    around: list[SourceFile]
    cluster: list[SourceFile]
    surroundings: Surroundings


@dataclass(frozen=True)
class _Layered:
    """One kept index with layers laid over it, with what it was made of."""

    under: Surroundings
    layers: list[Layer]
    surroundings: Surroundings


def _run_order(paths: Sequence[str]) -> Callable[[Canonical], int]:
    """The sort key of objects by their file's place in ``paths`` (a run's files); other files
    (the cluster state) come last."""
    rank = {path: number for number, path in enumerate(paths)}
    return lambda obj: rank.get(obj.manifest.document.file, len(rank))


def _same(kept: Sequence[object], now: Sequence[object]) -> bool:
    return len(kept) == len(now) and all(a is b for a, b in zip(kept, now, strict=True))
