"""When, and on which thread, each open document is judged.

Documents share one lane, a worker thread: an edited document is judged at once without the
feasibility stage (the allocator's search can take longer than typing allows; its previous
DRA7xx and DRA910 findings stay shown meanwhile), and once typing pauses for ``SETTLE`` seconds
every open document is judged whole: the edited ones for feasibility, the others because an
edit may change their verdict. Changes within ``DEBOUNCE`` seconds, or while a run is busy, are
judged together by the next run, and a run whose documents changed meanwhile is stopped at its
next object or claim (:mod:`dralint.cancel`): the editor gets the findings of its newest text first.

A large document (``LARGE`` characters and more: 5 MB of claims takes the engine tens of
seconds) has a lane of its own. Its thread judges it whole once its typing pauses, is stopped
by each newer text of it, reports how far it got to clients that show progress (``$/progress``),
and gives the interpreter away at each object, so the shared lane's runs never wait for it. The
other documents see its objects through a layer (:class:`~.workspace.Layer`) from its last run;
until its first, they see it as they saw it before it was opened (its file on disk).
"""
from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import traceback
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, AsyncIterator, Callable, Protocol, Sequence, TypeVar

from lsprotocol import types
from pygls.progress import Progress
from pygls.workspace import Workspace as Documents

from ..catalog import Catalog
from ..cancel import Cancelled, Token, cancellable
from ..source.records import SourceFile
from . import translate
from .spans import Lines
from .workspace import Layer, Linted, Workspace

# Changes closer together than this are judged by one run (a burst of keystrokes, a paste, an
# undo of several edits). Short, so that findings follow typing: see bench/bench_lsp.py.
DEBOUNCE = 0.02
# The pause in typing after which open documents are judged whole (with feasibility).
SETTLE = 0.3
# A document this long (in characters) is judged on a lane of its own: about 2,000 lines of
# manifests, which the engine judges in a fifth of a second; a longer run would hold up the
# answer to a keystroke in another document.
LARGE = 100_000
# Large documents judged at the same time; more wait for a thread (the interpreter runs one at
# a time anyway: more threads would only share it more thinly).
LARGE_THREADS = 2
# How often a long run's progress is reported, and what its end says when a newer text stopped it.
PROGRESS_EVERY = 0.5
STOPPED = "stopped: the document changed"
T = TypeVar("T")


@dataclass(frozen=True)
class Published:
    """The findings last sent for one document, with the text they point into and, for the
    findings of that text, the judgement their fixes are made from (on request)."""

    version: int | None
    lines: Lines
    shown: list[translate.Shown]
    linted: Linted | None = None
    fixed: dict[int, translate.Shown] = field(default_factory=dict, compare=False)
    """Shown findings with their fixes, by ``id`` of the shown finding without: made once, on request."""


class LaneHost(Protocol):
    """What the lanes need of the language server (server.DralintServer): its open documents, the
    project they are judged in, and where results and errors go. The server owns its lanes; they
    know it only by this."""

    catalog: Catalog
    project: Workspace | None
    open: dict[str, str]
    published: dict[str, Published]

    @property
    def workspace(self) -> Documents: ...

    @property
    def client_capabilities(self) -> types.ClientCapabilities: ...

    @property
    def work_done_progress(self) -> Progress: ...

    def publish(self, uri: str, outcome: Published) -> None: ...

    def log(self, kind: types.MessageType, message: str) -> None: ...

    def internal_error(self) -> translate.Shown: ...

    def report_settings(self) -> None: ...


class Work(Token):
    """A run's token with what its progress report says: the stage, and the steps expected."""

    def __init__(self, *, yielding: bool = False) -> None:
        super().__init__(yielding=yielding)
        self.stage = "reading"
        self.expected = 0

    def percentage(self) -> int:
        """How far the run got, as far as its expected steps tell (never 100 before it ends)."""
        return min(99, 100 * self.steps // self.expected) if self.expected else 0


@dataclass
class _Lane:
    """A large document's lane: its loop, the run in progress, and its layer for the others."""

    uri: str
    wake: asyncio.Event = field(default_factory=asyncio.Event)
    task: asyncio.Task | None = None
    work: Work | None = None
    version: int | None = None
    layer: Layer | None = None


class Lanes:
    """The shared lane, the large documents' lanes, and the threads they run on."""

    def __init__(self, server: "LaneHost") -> None:
        self.server = server
        self._dirty: set[str] = set()               # edited: judge at once, without feasibility
        self._stale: set[str] = set()               # judge whole when typing pauses
        self._wake = asyncio.Event()
        self._task: asyncio.Task | None = None
        self._running: tuple[frozenset[str], Token] | None = None
        self._large: dict[str, _Lane] = {}
        self._shared = ThreadPoolExecutor(max_workers=1, thread_name_prefix="dralint-lint")
        self._threads = ThreadPoolExecutor(max_workers=LARGE_THREADS, thread_name_prefix="dralint-large")
        self._progress_ids = itertools.count(1)

    # -- what to judge -------------------------------------------------------------------------

    def is_large(self, uri: str) -> bool:
        """Whether ``uri``'s text is long enough for a lane of its own."""
        return len(self.server.workspace.get_text_document(uri).source) >= LARGE

    def schedule(self, uris: Sequence[str], *, edited: bool) -> None:
        """Judge ``uris`` again: at once if the user edited them, after a pause otherwise; a run of
        an edited document's older text is stopped."""
        for uri in uris:
            if uri not in self.server.open:
                continue
            if self.is_large(uri):
                self._dirty.discard(uri)
                self._stale.discard(uri)
                self._lane(uri).wake.set()
                lane = self._large[uri]
                if edited and lane.work is not None and lane.version != self._version(uri):
                    lane.work.cancel()
                continue
            self._close_lane(uri)  # a large document cut short is an ordinary one again
            (self._dirty if edited else self._stale).add(uri)
            if edited and self._running is not None and uri in self._running[0]:
                self._running[1].cancel()
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._loop())
        self._wake.set()

    def closed(self, uri: str) -> None:
        """``uri`` was closed: its lane and runs stop."""
        self._dirty.discard(uri)
        self._stale.discard(uri)
        self._close_lane(uri)

    def layers(self, *, but: str | None = None) -> list[Layer]:
        """The layers of the large documents (but the one of uri ``but``), in a stable order."""
        return [lane.layer for uri, lane in sorted(self._large.items()) if lane.layer is not None and uri != but]

    def shutdown(self) -> None:
        """Stop every run and loop; the threads end with their current object."""
        if self._task is not None:
            self._task.cancel()
        if self._running is not None:
            self._running[1].cancel()
        for uri in list(self._large):
            self._close_lane(uri)
        self._shared.shutdown(wait=False, cancel_futures=True)
        self._threads.shutdown(wait=False, cancel_futures=True)

    def _version(self, uri: str) -> int | None:
        return self.server.workspace.get_text_document(uri).version

    def _lane(self, uri: str) -> _Lane:
        lane = self._large.get(uri)
        if lane is None:
            lane = self._large[uri] = _Lane(uri)
            lane.task = asyncio.get_running_loop().create_task(self._large_loop(lane))
        return lane

    def _close_lane(self, uri: str) -> None:
        lane = self._large.pop(uri, None)
        if lane is None:
            return
        if lane.task is not None:
            lane.task.cancel()
        if lane.work is not None:
            lane.work.cancel()
        if lane.layer is not None:  # the others see the file as it is on disk again
            self.schedule([u for u in self.server.open if u != uri], edited=False)

    # -- the shared lane -----------------------------------------------------------------------

    async def _loop(self) -> None:
        while True:
            try:
                await self._round()
            except Exception:  # our bug; the loop must outlive it, or the editor hears nothing more
                self.server.log(types.MessageType.Error, traceback.format_exc())

    async def _round(self) -> None:
        """Wait for work, then judge the edited documents quickly, or all whole once typing paused."""
        await self._wake.wait()
        self._wake.clear()
        await asyncio.sleep(DEBOUNCE)
        if self._dirty:
            judged, self._dirty = self._dirty, set()
            await self._run_shared(judged, feasibility=False)
            # Every document may have a new verdict: the edited one's feasibility, the others'
            # references to it (the large documents' lanes judge them again once it settles).
            self.schedule(list(self.server.open), edited=False)
        elif self._stale:
            try:  # the pause: anything new (an edit above all) is served first
                await asyncio.wait_for(self._wake.wait(), SETTLE)
                return
            except asyncio.TimeoutError:
                pass
            judged, self._stale = self._stale, set()
            if not await self._run_shared(judged, feasibility=True):
                self._stale |= judged  # stopped by an edit: judged whole at the next pause

    async def _run_shared(self, uris: set[str], *, feasibility: bool) -> bool:
        """Judge ``uris`` on the shared lane and send their findings; False if an edit stopped it."""
        server = self.server
        uris = {u for u in uris if u in server.open and not self.is_large(u)}
        if not uris or server.project is None:
            return True
        snapshot = self._texts()
        # Findings a quick run does not make stay shown from the last whole run until the next.
        kept = {} if feasibility else {uri: translate.whole_run_only(p.shown) for uri, p in server.published.items()}
        token = Token()
        self._running = frozenset(uris), token
        try:
            results = await self._on(self._shared, self._judge_each, uris, snapshot, feasibility, kept,
                                     self.layers(), token)
        except Cancelled:
            return False
        finally:
            self._running = None
        server.report_settings()
        for uri, outcome in results.items():
            if isinstance(outcome, str):  # our bug: say so in the log and in the document, keep serving
                server.log(types.MessageType.Error, outcome)
                outcome = Published(snapshot[uri][0], Lines(snapshot[uri][1]), [server.internal_error()])
            server.publish(uri, outcome)
        return True

    def _texts(self) -> dict[str, tuple[int | None, str]]:
        """The version and text of every open document but the large ones (which are layers)."""
        out = {}
        for uri in self.server.open:
            document = self.server.workspace.get_text_document(uri)
            if len(document.source) < LARGE:
                out[uri] = (document.version, document.source)
        return out

    def _judge_each(self, uris: set[str], snapshot: dict[str, tuple[int | None, str]], feasibility: bool,
                    kept: dict[str, list[translate.Shown]], layers: list[Layer],
                    token: Token) -> dict[str, Published | str]:
        """On the shared lane's thread: the documents judged together, or, when that fails, each
        alone, so that one document the server fails on costs the others nothing (a traceback for
        that one)."""
        try:
            with cancellable(token):
                return dict(self._judge(uris, snapshot, feasibility, kept, layers))
        except Exception:
            if len(uris) == 1:
                return {uri: traceback.format_exc() for uri in uris}
        out: dict[str, Published | str] = {}
        for uri in uris:
            out.update(self._judge_each({uri}, snapshot, feasibility, kept, layers, token))
        return out

    def _judge(self, uris: set[str], snapshot: dict[str, tuple[int | None, str]], feasibility: bool,
               kept: dict[str, list[translate.Shown]], layers: list[Layer]) -> dict[str, Published]:
        """Lint ``uris`` with the editor's texts of every open document."""
        server = self.server
        assert server.project is not None
        texts = {server.open[uri]: text for uri, (_, text) in snapshot.items()}
        linted = server.project.lint([server.open[u] for u in uris], texts, feasibility=feasibility, layers=layers)
        codec = server.workspace.position_codec
        out = {}
        for uri in uris:
            version, text = snapshot[uri]
            lines = Lines(text)
            judged = linted[os.path.normpath(server.open[uri])]
            shown = translate.diagnostics(judged, lines, codec, server.catalog)
            out[uri] = Published(version, lines, shown + translate.moved(kept.get(uri, []), lines, codec), judged)
        return out

    # -- the large documents' lanes ------------------------------------------------------------

    async def _large_loop(self, lane: _Lane) -> None:
        while True:
            try:
                await self._large_round(lane)
            except asyncio.CancelledError:
                raise
            except Exception:
                self.server.log(types.MessageType.Error, traceback.format_exc())

    async def _large_round(self, lane: _Lane) -> None:
        """Wait for a pause in the document's typing, judge it whole, send its findings, and lay its
        objects under the others' runs; a newer text stops the run where it is."""
        await lane.wake.wait()
        while True:
            lane.wake.clear()
            try:
                await asyncio.wait_for(lane.wake.wait(), SETTLE)
            except asyncio.TimeoutError:
                break
        server = self.server
        if lane.uri not in server.open or server.project is None:
            return
        document = server.workspace.get_text_document(lane.uri)
        version, text = document.version, document.source
        path = server.open[lane.uri]
        snapshot = {server.open[u]: t for u, (_, t) in self._texts().items()}
        others = self.layers(but=lane.uri)
        work = lane.work = Work(yielding=True)
        lane.version = version
        title = f"dralint: {os.path.basename(path)}"
        try:
            async with self._reported(title, work):
                outcome, layer = await self._on(self._threads, self._judge_large, path, version, text, snapshot,
                                                others, work)
        except Cancelled:
            return  # a newer text: the loop judges it after its own pause
        except Exception:
            server.log(types.MessageType.Error, traceback.format_exc())
            server.publish(lane.uri, Published(version, Lines(text), [server.internal_error()]))
            return
        finally:
            if lane.work is work:
                lane.work = None
        server.report_settings()
        server.publish(lane.uri, outcome)
        if lane.layer is None or lane.layer.text != text:
            lane.layer = layer  # the others' context changed: their next whole run sees this text
            self.schedule([u for u in server.open if u != lane.uri], edited=False)

    def _judge_large(self, path: str, version: int | None, text: str, texts: dict[str, str], layers: list[Layer],
                     work: Work) -> tuple[Published, Layer]:
        """On a large document's thread: the document judged whole, its findings placed, and its
        objects as the others' context."""
        server = self.server
        assert server.project is not None
        with cancellable(work):
            work.expected = 2 * _objects(server.project.read_text(path, text))  # alone, then its references
            work.stage = "judging"
            linted, layer = server.project.lint_large(path, text, texts, layers)
            work.stage = "placing findings"
            lines = Lines(text)
            shown = translate.diagnostics(linted, lines, server.workspace.position_codec, server.catalog)
        return Published(version, lines, shown, linted), layer

    # -- threads and progress ------------------------------------------------------------------

    async def _on(self, executor: ThreadPoolExecutor, function: Callable[..., T], *args: Any) -> T:
        return await asyncio.get_running_loop().run_in_executor(executor, function, *args)

    @contextlib.asynccontextmanager
    async def _reported(self, title: str, work: Work) -> AsyncIterator[None]:
        """Report ``work``'s progress while the body runs, to a client that shows progress."""
        window = self.server.client_capabilities.window
        if not (window and window.work_done_progress):
            yield
            return
        token = f"dralint-{next(self._progress_ids)}"
        progress = self.server.work_done_progress
        begun = False

        async def report() -> None:
            nonlocal begun
            # A busy client (decoding thousands of diagnostics) may answer late: the progress begins
            # then, if the run still goes on. The request outlives the run's end (shielded): pygls
            # fails on the answer to a request it has given up.
            created = asyncio.ensure_future(progress.create_async(token))
            # Its failure is read even after the run's end: asyncio warns of a failure nobody read.
            created.add_done_callback(lambda done: done.cancelled() or done.exception())
            try:
                await asyncio.shield(created)
            except asyncio.CancelledError:
                raise
            except Exception:  # the client refused: no progress, the run goes on
                return
            progress.begin(token, types.WorkDoneProgressBegin(title=title, message=work.stage, percentage=0))
            begun = True
            while True:
                await asyncio.sleep(PROGRESS_EVERY)
                progress.report(token, types.WorkDoneProgressReport(message=work.stage, percentage=work.percentage()))

        reporter = asyncio.get_running_loop().create_task(report())
        outcome = "done"
        try:
            yield
        except Cancelled:
            outcome = STOPPED
            raise
        finally:
            reporter.cancel()
            if begun:
                progress.end(token, types.WorkDoneProgressEnd(message=outcome))


def _objects(parsed: SourceFile) -> int:
    """How many objects a parsed file holds (the items of a ``kind: List`` each count)."""
    count = 0
    for document in parsed.documents:
        items = document.value.get("items") if isinstance(document.value, dict) else None
        count += len(items) if isinstance(items, list) else 1
    return max(count, 1)
