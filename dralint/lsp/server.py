"""``dralint lsp``: the language server over stdio (pygls).

Every feature is a short handler registered in :func:`build_server`: it fetches the document,
asks :mod:`.workspace` (the engine, in the context of the whole workspace) or the last findings,
and sends what :mod:`.translate` makes of them. Linting runs on one worker thread, one run at a
time: changes arriving within ``DEBOUNCE`` seconds, or while a run is busy, are judged together
by the next run, so the editor always gets the findings of its newest text.

An edited document is judged at once without the feasibility stage (the allocator's search can
take longer than typing allows); its previous DRA7xx (and DRA910) findings stay shown meanwhile. Once typing
pauses for ``SETTLE`` seconds, every open document is judged whole: the edited ones for
feasibility, the others because an edit may change their verdict.
"""
from __future__ import annotations

import argparse
import asyncio
import logging
import os
import traceback
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.uris import to_fs_path

from .. import __version__
from ..catalog import Catalog, load_catalog
from ..findings import Finding, Severity
from ..source.discover import EXTENSIONS
from . import translate
from .spans import Lines, Point, Span
from .workspace import MAX_CONTEXT_FILES, Workspace

# Changes closer together than this are judged by one run (a burst of keystrokes, a paste, an
# undo of several edits). Short, so that findings follow typing: see bench/bench_lsp.py.
DEBOUNCE = 0.02
# The pause in typing after which open documents are judged whole (with feasibility).
SETTLE = 0.3
_LANGUAGES = frozenset({"yaml", "json", "jsonc"})
# Clients send the whole text on each change: pygls counts lines as str.splitlines does (U+2028,
# form feed and others break lines there, not in LSP), so ranged edits would put a document with
# such characters out of step with the editor's; a 500-line file is 20 kB, nothing over a pipe.
_SYNC = types.TextDocumentSyncKind.Full
_WATCHED = ("**/*.{yaml,yml,json}", "**/.dralint.{yaml,yml}", "**/pyproject.toml")


@dataclass(frozen=True)
class _Published:
    """The findings last sent for one document, with the text they point into."""

    version: int | None
    lines: Lines
    shown: list[translate.Shown]


class DralintServer(LanguageServer):
    """The server's state: the project, the open documents, and the lint loop."""

    def __init__(self) -> None:
        super().__init__("dralint", __version__, text_document_sync_kind=_SYNC)
        self.catalog = load_catalog()
        self.project: Workspace | None = None
        self.open: dict[str, str] = {}              # uri → file path, for the documents we judge
        self.published: dict[str, _Published] = {}
        self._dirty: set[str] = set()               # edited: judge at once, without feasibility
        self._stale: set[str] = set()               # judge whole when typing pauses
        self._wake = asyncio.Event()
        self._loop_task: asyncio.Task | None = None
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="dralint-lint")
        self._settings_seen: object = None
        self.shut_down = False                      # the client asked to shut down before exit
        self._told_truncated = False

    # -- scheduling ----------------------------------------------------------------------------

    def schedule(self, uris: Sequence[str], *, edited: bool) -> None:
        """Judge ``uris`` again: at once if the user edited them, after a pause otherwise."""
        (self._dirty if edited else self._stale).update(u for u in uris if u in self.open)
        if self._loop_task is None:
            self._loop_task = asyncio.get_running_loop().create_task(self._lint_loop())
        self._wake.set()

    async def _lint_loop(self) -> None:
        while True:
            try:
                await self._lint_round()
            except Exception:  # our bug; the loop must outlive it, or the editor hears nothing more
                self.window_log_message(types.LogMessageParams(types.MessageType.Error, traceback.format_exc()))

    async def _lint_round(self) -> None:
        """Wait for work, then judge the edited documents quickly, or all whole once typing paused."""
        await self._wake.wait()
        self._wake.clear()
        await asyncio.sleep(DEBOUNCE)
        if self._dirty:
            judged, self._dirty = self._dirty, set()
            await self._lint(judged, feasibility=False)
            self._stale |= set(self.open)
            self._wake.set()
        elif self._stale:
            try:  # the pause: anything new (an edit above all) is served first
                await asyncio.wait_for(self._wake.wait(), SETTLE)
                return
            except asyncio.TimeoutError:
                pass
            judged, self._stale = self._stale, set()
            await self._lint(judged, feasibility=True)

    async def _lint(self, uris: set[str], *, feasibility: bool) -> None:
        uris = {u for u in uris if u in self.open}
        if not uris or self.project is None:
            return
        documents = {uri: self.workspace.get_text_document(uri) for uri in self.open}
        snapshot = {uri: (doc.version, doc.source) for uri, doc in documents.items()}
        # Findings a quick run does not make stay shown from the last whole run until the next.
        kept = {} if feasibility else {uri: translate.whole_run_only(p.shown) for uri, p in self.published.items()}
        results = await asyncio.get_running_loop().run_in_executor(
            self._executor, self._judge_each, uris, snapshot, feasibility, kept)
        self._report_settings()
        for uri, outcome in results.items():
            if isinstance(outcome, str):  # our bug: say so in the log and in the document, keep serving
                self.window_log_message(types.LogMessageParams(types.MessageType.Error, outcome))
                outcome = _Published(snapshot[uri][0], Lines(snapshot[uri][1]), [internal_error(self.catalog)])
            if uri in self.open and self.workspace.get_text_document(uri).version == outcome.version:
                self.published[uri] = outcome
                self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(
                    uri=uri, version=outcome.version, diagnostics=[s.diagnostic for s in outcome.shown]))

    def _judge_each(self, uris: set[str], snapshot: dict[str, tuple[int | None, str]], feasibility: bool,
                    kept: dict[str, list[translate.Shown]]) -> dict[str, _Published | str]:
        """On the worker thread: the documents judged together, or, when that fails, each alone, so
        that one document the server fails on costs the others nothing (a traceback for that one)."""
        try:
            return dict(self._judge(uris, snapshot, feasibility, kept))
        except Exception:
            if len(uris) == 1:
                return {uri: traceback.format_exc() for uri in uris}
        out: dict[str, _Published | str] = {}
        for uri in uris:
            out.update(self._judge_each({uri}, snapshot, feasibility, kept))
        return out

    def _judge(self, uris: set[str], snapshot: dict[str, tuple[int | None, str]], feasibility: bool,
               kept: dict[str, list[translate.Shown]]) -> dict[str, _Published]:
        """Lint ``uris`` with the editor's texts of every open document."""
        assert self.project is not None
        texts = {self.open[uri]: text for uri, (_, text) in snapshot.items()}
        linted = self.project.lint([self.open[u] for u in uris], texts, feasibility=feasibility)
        codec = self.workspace.position_codec
        out = {}
        for uri in uris:
            version, text = snapshot[uri]
            lines = Lines(text)
            shown = translate.diagnostics(linted[os.path.normpath(self.open[uri])], lines, codec, self.catalog)
            out[uri] = _Published(version, lines, shown + translate.moved(kept.get(uri, []), lines, codec))
        return out

    def _report_settings(self) -> None:
        """Tell the user once about each new reading of the configuration that had something to say,
        and once that the workspace is too large to be read whole."""
        assert self.project is not None
        if self.project.truncated and not self._told_truncated:
            self._told_truncated = True
            self.window_log_message(types.LogMessageParams(types.MessageType.Warning, (
                f"dralint: the workspace has more than {MAX_CONTEXT_FILES} YAML/JSON files; "
                "only the first are read as context")))
        settings = self.project.settings
        if settings is self._settings_seen:
            return
        self._settings_seen = settings
        if settings.error:
            self.window_show_message(types.ShowMessageParams(types.MessageType.Error, f"dralint: {settings.error}"))
        for note in settings.notes:
            self.window_log_message(types.LogMessageParams(types.MessageType.Info, f"dralint: {note}"))

    async def on_project(self, work: Callable[[Workspace], object], *, edited: bool = True) -> None:
        """Run ``work(project)`` on the lint thread (never beside a lint), then judge every open document."""
        if self.project is None:
            return
        await asyncio.get_running_loop().run_in_executor(self._executor, work, self.project)
        self.schedule(list(self.open), edited=edited)


def internal_error(catalog: Catalog) -> translate.Shown:
    """What the user sees when the server itself failed on a document (details in the log)."""
    rule = catalog.get("DRA000")
    finding = Finding(rule.id, rule.name, Severity.ERROR, rule.category,
                      "internal error in the language server; the log has the details, please report it",
                      "", 1, 1)
    span = Span(Point(0, 0), Point(0, 0))
    return translate.Shown(span, finding, types.Diagnostic(
        range=types.Range(types.Position(0, 0), types.Position(0, 0)), message=finding.message,
        severity=types.DiagnosticSeverity.Error, code=rule.id, source=translate.SOURCE))


def _judged(uri: str, language: str | None) -> str | None:
    """The file path to judge for a document, or None for documents that are not manifests."""
    path = to_fs_path(uri) if uri.startswith("file:") else None
    name = path or uri
    if language in _LANGUAGES or name.lower().endswith(EXTENSIONS):
        return os.path.normpath(path) if path else uri
    return None


def build_server() -> DralintServer:
    """The server with its features registered (one place; each handler a few lines)."""
    server = DralintServer()

    @server.feature(types.INITIALIZE)
    def initialize(ls: DralintServer, params: types.InitializeParams) -> None:
        folders = [to_fs_path(f.uri) for f in params.workspace_folders or []]
        root = params.root_uri and to_fs_path(params.root_uri) or params.root_path
        roots = [Path(p) for p in folders or [root] if p]
        ls.project = Workspace(roots, ls.catalog)

    @server.feature(types.INITIALIZED)
    async def initialized(ls: DralintServer, params: types.InitializedParams) -> None:
        ls._report_settings()
        watched = ls.client_capabilities.workspace and ls.client_capabilities.workspace.did_change_watched_files
        if watched and watched.dynamic_registration:
            try:
                await ls.client_register_capability_async(types.RegistrationParams(registrations=[types.Registration(
                    id="dralint-files", method=types.WORKSPACE_DID_CHANGE_WATCHED_FILES,
                    register_options=types.DidChangeWatchedFilesRegistrationOptions(
                        watchers=[types.FileSystemWatcher(glob_pattern=g) for g in _WATCHED]))]))
            except Exception as exc:  # files created later are then found when a document is saved
                ls.window_log_message(types.LogMessageParams(
                    types.MessageType.Warning, f"dralint: the client refused to watch files: {exc}"))

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: DralintServer, params: types.DidOpenTextDocumentParams) -> None:
        path = _judged(params.text_document.uri, params.text_document.language_id)
        if path is not None:
            ls.open[params.text_document.uri] = path
            ls.schedule([params.text_document.uri], edited=True)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: DralintServer, params: types.DidChangeTextDocumentParams) -> None:
        ls.schedule([params.text_document.uri], edited=True)

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE)
    async def did_save(ls: DralintServer, params: types.DidSaveTextDocumentParams) -> None:
        # A saved file may be new to the workspace (clients without file watching tell us no other way).
        await ls.on_project(lambda project: project.files_changed(), edited=False)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    async def did_close(ls: DralintServer, params: types.DidCloseTextDocumentParams) -> None:
        uri = params.text_document.uri
        path = ls.open.pop(uri, None)
        ls.published.pop(uri, None)
        if path is not None:
            ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=uri, diagnostics=[]))
            await ls.on_project(lambda project: project.forget(path))

    @server.feature(types.WORKSPACE_DID_CHANGE_WATCHED_FILES)
    async def files_changed(ls: DralintServer, params: types.DidChangeWatchedFilesParams) -> None:
        kinds = {c.type for c in params.changes}
        if kinds - {types.FileChangeType.Changed}:
            await ls.on_project(lambda project: project.files_changed())
        else:  # edits on disk are seen by their time stamps at the next run
            ls.schedule(list(ls.open), edited=False)

    @server.feature(types.TEXT_DOCUMENT_HOVER)
    def hover(ls: DralintServer, params: types.HoverParams) -> types.Hover | None:
        published = ls.published.get(params.text_document.uri)
        if published is None:
            return None
        codec = ls.workspace.position_codec
        point = translate.from_position(params.position, published.lines, codec)
        formats = ls.client_capabilities.text_document and ls.client_capabilities.text_document.hover
        markdown = not formats or not formats.content_format or types.MarkupKind.Markdown in formats.content_format
        return translate.hover(published.shown, point, published.lines, codec, ls.catalog, markdown=markdown)

    @server.feature(types.TEXT_DOCUMENT_CODE_ACTION, types.CodeActionOptions(
        code_action_kinds=[types.CodeActionKind.QuickFix, translate.FIX_ALL]))
    def code_action(ls: DralintServer, params: types.CodeActionParams) -> list[types.CodeAction] | None:
        uri = params.text_document.uri
        published = ls.published.get(uri)
        version = ls.workspace.get_text_document(uri).version
        if published is None or published.version != version:
            return None  # the fixes' positions are those of an older text; the next run brings new ones
        codec, lines = ls.workspace.position_codec, published.lines
        span = Span(translate.from_position(params.range.start, lines, codec),
                    translate.from_position(params.range.end, lines, codec))
        edits = ls.client_capabilities.workspace and ls.client_capabilities.workspace.workspace_edit
        document = types.OptionalVersionedTextDocumentIdentifier(uri=uri, version=version)
        return translate.code_actions(published.shown, span, lines, codec, document, only=params.context.only,
                                      versioned=bool(edits and edits.document_changes)) or None

    @server.feature(types.SHUTDOWN)
    def shutdown(ls: DralintServer, params: None) -> None:
        ls.shut_down = True
        if ls._loop_task is not None:
            ls._loop_task.cancel()
        ls._executor.shutdown(wait=False, cancel_futures=True)

    return server


def main(argv: Sequence[str]) -> int:
    """``dralint lsp [--stdio]``: serve one editor over stdin and stdout until it exits."""
    parser = argparse.ArgumentParser(prog="dralint lsp", description="Serve dralint's findings to an editor "
                                     "(Language Server Protocol over stdin/stdout); see docs/editors.md.")
    parser.add_argument("--stdio", action="store_true", help="accepted for clients that pass it; stdio is the only "
                                                             "transport")
    parser.add_argument("--log-file", metavar="FILE", help="write the server's own log to FILE")
    args = parser.parse_args(argv)
    if args.log_file:
        logging.basicConfig(filename=args.log_file, level=logging.INFO)
    server = build_server()
    # pygls closes the streams it serves on; it gets its own copies, so that the command's exit
    # path (which flushes stdout) still finds its streams open.
    with os.fdopen(os.dup(0), "rb") as stdin, os.fdopen(os.dup(1), "wb") as stdout:
        server.start_io(stdin, stdout)
    return 0 if server.shut_down else 1
