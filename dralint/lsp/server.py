"""``dralint lsp``: the language server over stdio (pygls).

Every feature is a short handler registered in :func:`build_server`: it fetches the document,
asks :mod:`.lanes` to judge it (the engine, in the context of the whole workspace, on worker
threads: :mod:`.workspace`) or reads the last findings, and sends what :mod:`.translate` makes
of them. Fixes are made when a code action asks for them, for the findings it asks about.
"""
from __future__ import annotations

import argparse
import asyncio
import logging
import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Callable, Sequence

from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.uris import to_fs_path

from .. import __version__
from ..cancel import Token, cancellable
from ..catalog import Catalog, load_catalog
from ..findings import Finding, Location, Position, Severity
from ..source.discover import EXTENSIONS
from . import translate
from .lanes import Lanes, Published
from .spans import Point, Span
from .workspace import MAX_CONTEXT_FILES, Workspace

_LANGUAGES = frozenset({"yaml", "json", "jsonc"})
# Clients send the whole text on each change: pygls counts lines as str.splitlines does (U+2028,
# form feed and others break lines there, not in LSP), so ranged edits would put a document with
# such characters out of step with the editor's; a 500-line file is 20 kB, nothing over a pipe.
_SYNC = types.TextDocumentSyncKind.Full
_WATCHED = ("**/*.{yaml,yml,json}", "**/.dralint.{yaml,yml}", "**/pyproject.toml")


class DralintServer(LanguageServer):
    """The server's state: the project, the open documents, what was sent for them, and the lanes
    that judge them."""

    def __init__(self) -> None:
        super().__init__("dralint", __version__, text_document_sync_kind=_SYNC)
        self.catalog = load_catalog()
        self.project: Workspace | None = None
        self.open: dict[str, str] = {}              # uri → file path, for the documents we judge
        self.published: dict[str, Published] = {}
        self.lanes = Lanes(self)
        # Fixes are made on their own thread: a code action never waits for a run, nor a run for it.
        self._fixing = ThreadPoolExecutor(max_workers=1, thread_name_prefix="dralint-fixes")
        self._settings_seen: object = None
        self.shut_down = False                      # the client asked to shut down before exit
        self._told_truncated = False

    def schedule(self, uris: Sequence[str], *, edited: bool) -> None:
        """Judge ``uris`` again: at once if the user edited them, after a pause otherwise."""
        self.lanes.schedule(uris, edited=edited)

    def publish(self, uri: str, outcome: Published) -> None:
        """Send ``outcome`` as ``uri``'s diagnostics if it is of the document's current text."""
        if uri in self.open and self.workspace.get_text_document(uri).version == outcome.version:
            self.published[uri] = outcome
            self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(
                uri=uri, version=outcome.version, diagnostics=[s.diagnostic for s in outcome.shown]))

    def log(self, kind: types.MessageType, message: str) -> None:
        """A line in the client's log of this server."""
        self.window_log_message(types.LogMessageParams(kind, message))

    def internal_error(self) -> translate.Shown:
        """What the user sees when the server itself failed on a document (details in the log)."""
        return internal_error(self.catalog)

    def report_settings(self) -> None:
        """Tell the user once about each new reading of the configuration that had something to say,
        and once that the workspace is too large to be read whole."""
        assert self.project is not None
        if self.project.truncated and not self._told_truncated:
            self._told_truncated = True
            self.log(types.MessageType.Warning, (f"dralint: the workspace has more than {MAX_CONTEXT_FILES} "
                                                 "YAML/JSON files; only the first are read as context"))
        settings = self.project.settings
        if settings is self._settings_seen:
            return
        self._settings_seen = settings
        if settings.error:
            self.window_show_message(types.ShowMessageParams(types.MessageType.Error, f"dralint: {settings.error}"))
        for note in settings.notes:
            self.log(types.MessageType.Info, f"dralint: {note}")

    def on_project(self, work: Callable[[Workspace], object], *, edited: bool = True) -> None:
        """Apply ``work(project)`` (a change of files), then judge every open document."""
        if self.project is None:
            return
        work(self.project)
        self.schedule(list(self.open), edited=edited)

    async def fixed(self, published: Published, shown: Sequence[translate.Shown]) -> list[translate.Shown]:
        """``shown`` (of ``published``) with their fixes, made on the fixes' thread the first time they
        are asked for; a request the client cancels stops making them."""
        missing = [s for s in shown if id(s) not in published.fixed]
        if missing and published.linted is not None and self.project is not None:
            token = Token()
            try:
                findings = await asyncio.get_running_loop().run_in_executor(
                    self._fixing, self._fixes, published, [s.finding for s in missing], token)
            except asyncio.CancelledError:
                token.cancel()
                raise
            for s, finding in zip(missing, findings, strict=True):
                published.fixed[id(s)] = translate.Shown(s.span, finding, s.diagnostic)
        return [published.fixed.get(id(s), s) for s in shown]

    def _fixes(self, published: Published, findings: list[Finding], token: Token) -> list[Finding]:
        assert self.project is not None and published.linted is not None
        with cancellable(token):
            return self.project.fixes(published.linted, findings)

    def stop(self) -> None:
        """The client asked to shut down: stop every run."""
        self.shut_down = True
        self.lanes.shutdown()
        self._fixing.shutdown(wait=False, cancel_futures=True)


def internal_error(catalog: Catalog) -> translate.Shown:
    """What the user sees when the server itself failed on a document (details in the log)."""
    rule = catalog.get("DRA000")
    finding = Finding(rule.id, rule.name, Severity.ERROR, rule.category,
                      "internal error in the language server; the log has the details, please report it",
                      Location("", Position(1, 1)))
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


def _versioned(ls: DralintServer) -> bool:
    """Whether the client takes edits tied to a document's version (``documentChanges``)."""
    edits = ls.client_capabilities.workspace and ls.client_capabilities.workspace.workspace_edit
    return bool(edits and edits.document_changes)


def _resolves_edits(ls: DralintServer) -> bool:
    """Whether the client asks for a code action's edit when the user picks it (``codeAction/resolve``)."""
    actions = ls.client_capabilities.text_document and ls.client_capabilities.text_document.code_action
    support = actions and actions.resolve_support
    return bool(support and "edit" in support.properties)


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
        ls.report_settings()
        watched = ls.client_capabilities.workspace and ls.client_capabilities.workspace.did_change_watched_files
        if watched and watched.dynamic_registration:
            try:
                await ls.client_register_capability_async(types.RegistrationParams(registrations=[types.Registration(
                    id="dralint-files", method=types.WORKSPACE_DID_CHANGE_WATCHED_FILES,
                    register_options=types.DidChangeWatchedFilesRegistrationOptions(
                        watchers=[types.FileSystemWatcher(glob_pattern=g) for g in _WATCHED]))]))
            except Exception as exc:  # files created later are then found when a document is saved
                ls.log(types.MessageType.Warning, f"dralint: the client refused to watch files: {exc}")

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
    def did_save(ls: DralintServer, params: types.DidSaveTextDocumentParams) -> None:
        # A saved file may be new to the workspace (clients without file watching tell us no other way).
        ls.on_project(lambda project: project.files_changed(), edited=False)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: DralintServer, params: types.DidCloseTextDocumentParams) -> None:
        uri = params.text_document.uri
        path = ls.open.pop(uri, None)
        ls.published.pop(uri, None)
        ls.lanes.closed(uri)
        if path is not None:
            ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=uri, diagnostics=[]))
            ls.on_project(lambda project: project.forget(path))

    @server.feature(types.WORKSPACE_DID_CHANGE_WATCHED_FILES)
    def files_changed(ls: DralintServer, params: types.DidChangeWatchedFilesParams) -> None:
        kinds = {c.type for c in params.changes}
        if kinds - {types.FileChangeType.Changed}:
            ls.on_project(lambda project: project.files_changed())
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
        code_action_kinds=[types.CodeActionKind.QuickFix, translate.FIX_ALL], resolve_provider=True))
    async def code_action(ls: DralintServer, params: types.CodeActionParams) -> list[types.CodeAction] | None:
        uri = params.text_document.uri
        published = ls.published.get(uri)
        version = ls.workspace.get_text_document(uri).version
        if published is None or published.version != version:
            return None  # the fixes' positions are those of an older text; the next run brings new ones
        codec, lines, only = ls.workspace.position_codec, published.lines, params.context.only
        span = Span(translate.from_position(params.range.start, lines, codec),
                    translate.from_position(params.range.end, lines, codec))
        candidates = translate.fixable(published.shown, ls.catalog)
        under = translate.overlapping(candidates, span) if translate.wanted(types.CodeActionKind.QuickFix, only) \
            else []
        whole = bool(candidates) and translate.wanted(translate.FIX_ALL, only)
        document = types.OptionalVersionedTextDocumentIdentifier(uri=uri, version=version)
        versioned = _versioned(ls)
        actions = translate.quick_fixes(await ls.fixed(published, under), lines, codec, document, versioned=versioned)
        if whole and _resolves_edits(ls):  # the whole document's fixes are made when the user picks it
            actions.append(translate.fix_all_to_resolve(document))
        elif whole and (every := translate.fix_all(await ls.fixed(published, candidates), lines, codec, document,
                                                   versioned=versioned)):
            actions.append(every)
        return actions or None

    @server.feature(types.CODE_ACTION_RESOLVE)
    async def resolve_code_action(ls: DralintServer, action: types.CodeAction) -> types.CodeAction:
        data = action.data if isinstance(action.data, dict) else {}
        uri = data.get("uri", "")
        published = ls.published.get(uri)
        if action.kind != translate.FIX_ALL or published is None or published.version != data.get("version") \
                or ls.workspace.get_text_document(uri).version != published.version:
            return action  # for an older text: no edit, rather than a misplaced one
        fixed = await ls.fixed(published, translate.fixable(published.shown, ls.catalog))
        document = types.OptionalVersionedTextDocumentIdentifier(uri=uri, version=published.version)
        return translate.fix_all(fixed, published.lines, ls.workspace.position_codec, document,
                                 versioned=_versioned(ls)) or action

    @server.feature(types.SHUTDOWN)
    def shutdown(ls: DralintServer, params: None) -> None:
        ls.stop()

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
