"""The editor's view of a project: its configuration, its files, and the findings of its open documents.

A document is judged in the context of every manifest of the workspace (for references and
feasibility), read from disk except where the editor holds newer text, plus the ``cluster`` state
the configuration names: the findings are those ``dralint <workspace>`` would report for that
file with the editor's text. Files read from disk are kept, parsed, until they change on disk.
No LSP types here: the server turns these records into messages.
"""
from __future__ import annotations

import dataclasses
import functools
import io
import os
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Collection, Mapping, Sequence

from .. import source
from ..catalog import Catalog
from ..convert import Canonical
from ..config import Config, ConfigError, find_config, load_config
from ..engine import Options, Surroundings, index_surroundings, lint_files
from ..findings import Finding
from ..releases import GateError
from ..rule_filter import UsageError
from ..source.records import SourceFile

# At most this many files of a workspace are read as context: a repository with more YAML than
# this is mostly not Kubernetes manifests, and reading it all would stall the first diagnostics.
MAX_CONTEXT_FILES = 5000
_AROUND_KEPT = 2
# What a run while typing leaves out: the feasibility stage (DRA7xx), and the report of unused
# suppressions (DRA910), which cannot be judged without it.
FEASIBILITY_RULES = "DRA7"
WHOLE_RUN_RULES = (FEASIBILITY_RULES, "DRA910")


@dataclass(frozen=True)
class Linted:
    """One judged document: its findings and the parsed text they point into."""

    findings: list[Finding]
    parsed: SourceFile


@dataclass
class Settings:
    """What the configuration says, and what was wrong with it."""

    config: Config = field(default_factory=Config)
    options: Options = field(default_factory=lambda: Options(fixes=True))
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

    Not thread-safe: the server runs one lint at a time.
    """

    def __init__(self, roots: Sequence[Path], catalog: Catalog) -> None:
        self.roots = [r.resolve() for r in roots]
        self.catalog = catalog
        self.settings = Settings()
        self._paths: list[str] | None = None
        self._cluster: list[str] | None = None
        self._disk: dict[str, tuple[_Stamp, SourceFile]] = {}
        self._texts: dict[str, tuple[str, SourceFile]] = {}
        self._config_seen: tuple[Path | None, _Stamp | None] | None = None
        self._around: OrderedDict[frozenset[str], _Around] = OrderedDict()
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
        from ..cli import config_options  # the command line's reading of a configuration, shared

        notes = io.StringIO()
        found = self._config_path()
        self._config_seen = (found, _stamp(str(found)) if found else None)
        try:
            config = load_config(found, self.catalog) if found else Config()
            options = dataclasses.replace(config_options(config, notes), fixes=True)  # for code actions
        except (ConfigError, GateError, UsageError, ValueError) as exc:
            self.settings = Settings(self.settings.config, self.settings.options, error=str(exc))
            return self.settings
        self.settings = Settings(config, options, [n for n in notes.getvalue().splitlines() if n])
        self._cluster = None
        self._cluster_paths(self.settings.notes)
        return self.settings

    # -- files ---------------------------------------------------------------------------------

    def files_changed(self) -> None:
        """Files were created or deleted: find the workspace's files again before the next lint."""
        self._paths = None
        self._cluster = None

    def _workspace_paths(self) -> list[str]:
        if self._paths is None:
            found, _ = source.discover([str(r) for r in self.roots])
            self.truncated = len(found) > MAX_CONTEXT_FILES
            self._paths = [os.path.normpath(p) for p in found[:MAX_CONTEXT_FILES]]
            kept = set(self._paths)
            self._disk = {p: v for p, v in self._disk.items() if p in kept}
        return self._paths

    def _cluster_paths(self, notes: list[str] | None = None) -> list[str]:
        if self._cluster is None:
            found, problems = source.discover(list(self.settings.options.cluster))
            if notes is not None:
                notes += [f"cluster: {p.file}: {p.message}" for p in problems]
            self._cluster = [os.path.normpath(p) for p in found]
        return self._cluster

    def _from_disk(self, path: str) -> SourceFile:
        stamp = _stamp(path)
        kept = self._disk.get(path)
        if kept is not None and stamp is not None and kept[0] == stamp:
            return kept[1]
        loaded = source.load_file(path)
        if stamp is not None:
            self._disk[path] = (stamp, loaded)
        return loaded

    def _from_text(self, path: str, text: str) -> SourceFile:
        kept = self._texts.get(path)
        if kept is not None and kept[0] == text:
            return kept[1]
        loaded = source.load_text(text, path)
        self._texts[path] = (text, loaded)
        return loaded

    def forget(self, path: str) -> None:
        """The editor closed ``path``: its text is the file's on disk again."""
        self._texts.pop(path, None)

    # -- linting -------------------------------------------------------------------------------

    def lint(self, judged: Collection[str], texts: Mapping[str, str], *, feasibility: bool = True) -> dict[str, Linted]:
        """Findings of the documents ``judged`` (paths), with ``texts`` the editor's unsaved or open
        text by path, in the context of every workspace file and the configured cluster state.
        Without ``feasibility`` the allocator's stage (DRA7xx) is left out: it can take longer
        than typing allows, so the server runs it once typing pauses.

        The configuration is read again first when it changed on disk (so editors without file
        watching see it too: one ``stat`` per folder up to the repository root).
        """
        if self.config_changed():
            self.reload_config()
        judged = {os.path.normpath(p) for p in judged}
        texts = {os.path.normpath(p): t for p, t in texts.items()}
        cluster = [p for p in self._cluster_paths() if p not in judged]
        # The command line's order of files (of ``dralint <workspace>``), the cluster state after them.
        run = [p for p in self._workspace_paths() if p not in cluster]
        run += sorted(set(texts).difference(run, cluster))
        around = [p for p in run if p not in judged]

        def read(path: str) -> SourceFile:
            return self._from_text(path, texts[path]) if path in texts else self._from_disk(path)

        surroundings = self._surroundings(frozenset(judged), [read(p) for p in around], [read(p) for p in cluster],
                                          _run_order(run))
        paths = sorted(judged)
        files = [read(p) for p in paths]
        options = self.settings.options if feasibility else self.settings.quick
        result = lint_files(files, options, surroundings=surroundings)
        config = self.settings.config
        out = {p: Linted([], f) for p, f in zip(paths, files, strict=True)}
        for finding in result.findings:
            linted = out.get(finding.file)
            if linted is not None and not config.ignored(finding.file, finding.rule):
                linted.findings.append(finding)
        return out

    def _surroundings(self, judged: frozenset[str], around: list[SourceFile], cluster: list[SourceFile],
                      order: Callable[[Canonical], int]) -> Surroundings:
        """The index of everything but the judged documents, kept while none of it changes; the judged
        documents' objects join it in the run's ``order``.

        Two are kept: the one around the document being edited, and the one around the others,
        which are judged again when typing pauses.
        """
        kept = self._around.get(judged)
        if kept is not None and kept.settings is self.settings and _same(kept.around, around) \
                and _same(kept.cluster, cluster):
            self._around.move_to_end(judged)
            return kept.surroundings
        surroundings = dataclasses.replace(index_surroundings(around, self.settings.options, cluster_files=cluster),
                                           order=order)
        self._around[judged] = _Around(self.settings, around, cluster, surroundings)
        while len(self._around) > _AROUND_KEPT:
            self._around.popitem(last=False)
        return surroundings


@dataclass(frozen=True)
class _Around:
    """One kept index, with what it was built from (the parsed files are kept until they change)."""

    settings: Settings
    around: list[SourceFile]
    cluster: list[SourceFile]
    surroundings: Surroundings


def _run_order(paths: Sequence[str]) -> Callable[[Canonical], int]:
    """The sort key of objects by their file's place in ``paths`` (a run's files); other files
    (the cluster state) come last."""
    rank = {path: number for number, path in enumerate(paths)}
    return lambda obj: rank.get(obj.manifest.document.file, len(rank))


def _same(kept: list[SourceFile], now: list[SourceFile]) -> bool:
    return len(kept) == len(now) and all(a is b for a, b in zip(kept, now, strict=True))
