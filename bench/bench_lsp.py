#!/usr/bin/env python3
"""How fast ``dralint lsp`` answers an edit: a real client drives the server process over stdio.

The workspace is a corpus of realistic manifests (``../shared/bench/gen_corpus.py``: claims,
templates, classes and slices with CEL selectors) as context, plus one 500-line file that the
client opens and edits: first a mix of claims, templates and slices, then claims, templates and
classes only (15 claims whose feasibility is judged against the workspace's 100 slices: the
allocator's search is most of a whole run there).

The server answers each edit twice: at once without the feasibility stage, then whole once
typing pauses (0.3 s). Printed per file, median / p90 / max in milliseconds:

- ``typing: at once``: from a keystroke's ``didChange`` to its diagnostics (debounce included),
  keystrokes ~0.1 s after the previous answer, ``--edits`` of them;
- ``typing: server CPU per keystroke``: the server process's CPU time (from /proc) over those
  keystrokes, divided by their number: their cost whatever else the machine runs;
- ``burst of 8``: 8 keystrokes 40 ms apart, timed from the last one (the debounce and "newest
  text wins" at work), and ``pause: whole run`` from the same keystroke to the whole run's answer;
- ``in-process CPU``: the same runs in this process, without protocol or debounce;

and the machine's load average (other processes share these cores)::

    python3 bench/bench_lsp.py                     # 40 context files (400 documents), 40 edits
    python3 bench/bench_lsp.py --context-docs 4000 --edits 100
    python3 bench/bench_lsp.py --context-docs 0    # the file alone
    python3 bench/bench_lsp.py --large 10000       # a 5 MB file open beside the edited one

With ``--large``, a file of that many claims (each with a misspelt field: a finding and a fix
apiece) is opened with the edited file, and the figures are: the other document's answers while
the large one is judged (its open and each keystroke), the large one's own diagnostics, and,
for two edits of the large file 2 s apart, how soon the first's run stops (its ``$/progress``
ends) and the second's diagnostics arrive; ``--budget`` bounds every wait.

Needs the ``lsp`` extra; stdio only, bounded in edits and time.
"""
from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from lsprotocol import types
from pygls.lsp.client import LanguageClient

REPO = Path(__file__).resolve().parents[1]
GENERATOR = REPO.parent / "shared" / "bench" / "gen_corpus.py"
EDITED_SEED = 3  # gen_corpus --docs 8 --seed 3 is 509 lines: claims, templates and slices with CEL
CLAIMS_SEED = 5


def corpus(out: Path, docs: int, files: int, seed: int) -> list[Path]:
    if not GENERATOR.is_file():
        sys.exit(f"bench_lsp: needs {GENERATOR} (the shared reference folder beside the checkout)")
    subprocess.run([sys.executable, str(GENERATOR), "--docs", str(docs), "--files", str(files), "--out", str(out),
                    "--seed", str(seed)], check=True, stdout=subprocess.DEVNULL)
    return sorted(out.glob("*.yaml"))


class Client(LanguageClient):
    """Records when each version's diagnostics arrive (at once, then whole after the pause), and the
    server's progress reports."""

    def __init__(self) -> None:
        super().__init__("bench-lsp", "1")
        self.arrived: dict[tuple[str, int | None], list[float]] = {}
        self.progress: list[tuple[float, str, str]] = []   # (when, kind: begin/report/end, message)
        self.event = asyncio.Event()

        @self.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        def diagnostics(params: types.PublishDiagnosticsParams) -> None:
            self.arrived.setdefault((params.uri, params.version), []).append(time.perf_counter())
            self.event.set()

        @self.feature(types.WINDOW_WORK_DONE_PROGRESS_CREATE)
        def create(params: types.WorkDoneProgressCreateParams) -> None:
            return None

        @self.feature(types.PROGRESS)
        def progress(params: types.ProgressParams) -> None:
            value = params.value
            kind = value.get("kind", "") if isinstance(value, dict) else getattr(value, "kind", "")
            message = value.get("message", "") if isinstance(value, dict) else getattr(value, "message", "")
            self.progress.append((time.perf_counter(), str(kind), str(message or "")))
            self.event.set()

    async def until(self, uri: str, version: int, nth: int = 1, timeout: float = 60.0) -> float:
        """When the ``nth`` publication of ``version`` arrived (1: the run made at once, 2: the whole run)."""
        deadline = time.perf_counter() + timeout
        while len(self.arrived.get((uri, version), ())) < nth:
            self.event.clear()
            await asyncio.wait_for(self.event.wait(), max(0.01, deadline - time.perf_counter()))
        return self.arrived[(uri, version)][nth - 1]

    async def progress_end(self, after: float, timeout: float) -> tuple[float, str]:
        """The first end of a progress report after ``after``: when, and its message."""
        deadline = time.perf_counter() + timeout
        while not (ends := [(t, m) for t, k, m in self.progress if k == "end" and t > after]):
            self.event.clear()
            await asyncio.wait_for(self.event.wait(), max(0.01, deadline - time.perf_counter()))
        return ends[0]


def cpu_seconds(pid: int) -> float:
    """User and system CPU time of process ``pid`` so far (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def edit_at(text: str) -> tuple[int, int]:
    """Where the edits type: just after the first ``count: `` (the value stays a valid number)."""
    lines = text.splitlines()
    line = next(i for i, x in enumerate(lines) if "count: " in x)
    return line, lines[line].index("count: ") + len("count: ")


async def run(root: Path, edited: Path, edits: int) -> dict[str, list[float]]:
    client = Client()
    await client.start_io(sys.executable, "-m", "dralint", "lsp")
    await client.initialize_async(types.InitializeParams(
        capabilities=types.ClientCapabilities(),
        workspace_folders=[types.WorkspaceFolder(uri=root.as_uri(), name="bench")]))
    client.initialized(types.InitializedParams())
    uri, text = edited.as_uri(), edited.read_text()
    start = time.perf_counter()
    client.text_document_did_open(types.DidOpenTextDocumentParams(
        types.TextDocumentItem(uri=uri, language_id="yaml", version=0, text=text)))
    figures: dict[str, list[float]] = {"open: at once (reads the workspace)": [await client.until(uri, 0) - start],
                                       "typing: at once": [], "burst of 8: at once after the last": [],
                                       "pause: whole run after the edit": []}
    figures["open: whole"] = [await client.until(uri, 0, 2) - start]
    line, column = edit_at(text)
    version = 0

    def change(digit: str) -> float:
        """Type ``digit`` over the count's first digit; the whole text is sent, as the server asks."""
        nonlocal version, text
        version += 1
        lines = text.split("\n")
        lines[line] = lines[line][:column] + digit + lines[line][column + 1:]
        text = "\n".join(lines)
        client.text_document_did_change(types.DidChangeTextDocumentParams(
            types.VersionedTextDocumentIdentifier(uri=uri, version=version),
            [types.TextDocumentContentChangeWholeDocument(text=text)]))
        return time.perf_counter()

    pid = client._server.pid  # type: ignore[union-attr]
    cpu = cpu_seconds(pid)
    for i in range(edits):  # a keystroke every ~0.1 s after the last answer: 1 → 2 → 1 ... over the count
        sent = change("2" if i % 2 == 0 else "1")
        figures["typing: at once"].append(await client.until(uri, version) - sent)
        await asyncio.sleep(0.1)
    # The server's own CPU time per keystroke: what it costs, whatever else the machine runs.
    figures["typing: server CPU per keystroke"] = [(cpu_seconds(pid) - cpu) / edits]
    for _ in range(max(1, edits // 8)):
        for k in range(8):
            sent = change(str(k + 1))
            await asyncio.sleep(0.04)
        figures["burst of 8: at once after the last"].append(await client.until(uri, version) - sent)
        figures["pause: whole run after the edit"].append(await client.until(uri, version, 2) - sent)
    await client.shutdown_async(None)
    client.exit(None)
    await client.stop()
    return figures


def in_process(root: Path, edited: Path, runs: int) -> dict[str, list[float]]:
    """The same runs without the protocol: Workspace.lint of the edited text, CPU time."""
    from pygls.workspace.position_codec import PositionCodec

    from dralint.catalog import load_catalog
    from dralint.lsp.spans import Lines
    from dralint.lsp.translate import diagnostics
    from dralint.lsp.workspace import Workspace

    workspace = Workspace([root], load_catalog())
    text = edited.read_text()
    path = os.path.normpath(str(edited))
    workspace.lint([path], {path: text})  # reads the workspace
    out: dict[str, list[float]] = {"in-process CPU: at once": [], "in-process CPU: whole": []}
    for i in range(runs):
        changed = text.replace("count: 1", f"count: {1 + i % 2}", 1)
        for label, whole in (("in-process CPU: at once", False), ("in-process CPU: whole", True)):
            start = time.process_time()
            linted = workspace.lint([path], {path: changed}, feasibility=whole)
            diagnostics(linted[path], Lines(changed), PositionCodec(), workspace.catalog)
            out[label].append(time.process_time() - start)
    return out


LARGE_CLAIM = """\
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata:
  name: claim-{i}
  namespace: default
  labels:
    app: demo-{app}
spec:
  devices:
    requests:
    - name: gpu
      exactly:
        deviceClassName: gpu.example.com
        cout: {count}
        selectors:
        - cel:
            expression: device.attributes["gpu.example.com"].model == "a100" && device.capacity["gpu.example.com"].memory.compareTo(quantity("40Gi")) >= 0
    constraints:
    - matchAttribute: gpu.example.com/numa
      requests: [gpu]
"""


def large_file(path: Path, claims: int) -> Path:
    """``claims`` claims (10,000: 5 MB), each with a misspelt field: a finding with a fix apiece."""
    path.write_text("---\n".join(LARGE_CLAIM.format(i=i, app=i % 50, count=1 + i % 2) for i in range(claims)))
    return path


async def run_large(root: Path, large: Path, edited: Path, edits: int, budget: float) -> dict[str, list[float]]:
    """Open the large file, then type in another document while the large one is judged."""
    client = Client()
    await client.start_io(sys.executable, "-m", "dralint", "lsp")
    await client.initialize_async(types.InitializeParams(
        capabilities=types.ClientCapabilities(window=types.WindowClientCapabilities(work_done_progress=True)),
        workspace_folders=[types.WorkspaceFolder(uri=root.as_uri(), name="bench")]))
    client.initialized(types.InitializedParams())
    big, uri, text = large.as_uri(), edited.as_uri(), edited.read_text()
    opened = time.perf_counter()
    client.text_document_did_open(types.DidOpenTextDocumentParams(
        types.TextDocumentItem(uri=big, language_id="yaml", version=0, text=large.read_text())))
    client.text_document_did_open(types.DidOpenTextDocumentParams(
        types.TextDocumentItem(uri=uri, language_id="yaml", version=0, text=text)))
    figures: dict[str, list[float]] = {"other document: open → diagnostics": [],
                                       "other document: keystroke → diagnostics": [],
                                       "large: open → its diagnostics": []}
    try:
        figures["other document: open → diagnostics"].append(await client.until(uri, 0, timeout=budget) - opened)
    except asyncio.TimeoutError:
        print(f"other document: no diagnostics within {budget:.0f} s of opening")
    line, column = edit_at(text)
    version = during = 0
    for i in range(edits):
        if (big, 0) in client.arrived:
            break  # the large one is judged: what follows is no longer "while"
        version += 1
        lines = text.split("\n")
        lines[line] = lines[line][:column] + ("2" if i % 2 == 0 else "1") + lines[line][column + 1:]
        text = "\n".join(lines)
        sent = time.perf_counter()
        client.text_document_did_change(types.DidChangeTextDocumentParams(
            types.VersionedTextDocumentIdentifier(uri=uri, version=version),
            [types.TextDocumentContentChangeWholeDocument(text=text)]))
        try:
            figures["other document: keystroke → diagnostics"].append(
                await client.until(uri, version, timeout=budget) - sent)
            during += 1
        except asyncio.TimeoutError:
            print(f"other document: keystroke {version} unanswered after {budget:.0f} s")
            break
        await asyncio.sleep(0.1)
    print(f"keystrokes answered while the large file was judged: {during}")
    try:
        figures["large: open → its diagnostics"].append(await client.until(big, 0, timeout=budget) - opened)
        # Two edits of the large file, the second once the first's run is under way: the older run stops.
        large_text = large.read_text()
        for number in (1, 2):
            client.text_document_did_change(types.DidChangeTextDocumentParams(
                types.VersionedTextDocumentIdentifier(uri=big, version=number),
                [types.TextDocumentContentChangeWholeDocument(text=large_text.replace("cout: 1", "count: 1", number))]))
            sent = time.perf_counter()
            if number == 1:
                await asyncio.sleep(2.0)
        when, message = await client.progress_end(sent, budget)
        figures["large: newer text → older run stopped"] = [when - sent]
        print(f"large: the older run's progress ended: {message!r}")
        figures["large: edit → its diagnostics"] = [await client.until(big, 2, timeout=budget) - sent]
    except asyncio.TimeoutError:
        print(f"large: no answer within {budget:.0f} s")
    await client.shutdown_async(None)
    client.exit(None)
    await client.stop()
    return figures


def row(name: str, values: list[float]) -> str:
    ms = sorted(v * 1000 for v in values)
    p90 = ms[min(len(ms) - 1, int(round(0.9 * (len(ms) - 1))))]
    return f"{name:38} n={len(ms):3}  median {statistics.median(ms):7.1f} ms  p90 {p90:7.1f} ms  max {ms[-1]:7.1f} ms"


def claims_only(out: Path) -> Path:
    """A file of about 500 lines of claims, templates and classes only (no slices): every edit is
    judged for feasibility against the workspace's slices, which an edit then leaves as they are."""
    [source] = corpus(out / "claims-source", 24, 1, seed=CLAIMS_SEED)
    kept, lines = [], 0
    for doc in source.read_text().split("\n---\n"):
        if "kind: ResourceSlice" not in doc and lines < 500:
            kept.append(doc)
            lines += doc.count("\n") + 1
    path = out / "claims.yaml"
    path.write_text("\n---\n".join(kept) + "\n")
    source.unlink()
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--context-docs", type=int, default=400,
                        help="documents of the workspace besides the edited file")
    parser.add_argument("--context-files", type=int, default=40)
    parser.add_argument("--edits", type=int, default=40)
    parser.add_argument("--large", type=int, default=0, metavar="CLAIMS",
                        help="instead: open a file of CLAIMS claims (10000: 5 MB) and type in another document "
                             "while it is judged")
    parser.add_argument("--budget", type=float, default=120.0, help="seconds to wait for any one answer (--large)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        if args.large:
            (root / "class.yaml").write_text((REPO / "examples" / "driver" / "deviceclass.yaml").read_text())
            large = large_file(root / "large.yaml", args.large)
            [edited] = corpus(root / "edited", 8, 1, seed=EDITED_SEED)
            print(f"large: {large.name}, {large.stat().st_size / 1e6:.1f} MB, {args.large} claims; "
                  f"other document: {edited.name}, {len(edited.read_text().splitlines())} lines")
            for label, values in asyncio.run(run_large(root, large, edited, args.edits, args.budget)).items():
                print(row(label, values) if values else f"{label:38} no answer")
            print("load average: " + " ".join(f"{x:.2f}" for x in os.getloadavg()) + f" on {os.cpu_count()} CPUs")
            return
        context = corpus(root / "context", args.context_docs, args.context_files, seed=1) if args.context_docs else []
        print(f"workspace: {len(context)} files, {args.context_docs} documents besides the edited file")
        [mixed] = corpus(root / "edited", 8, 1, seed=EDITED_SEED)
        for name, edited in (("mixed", mixed), ("claims only", claims_only(root / "edited"))):
            other = mixed if edited is not mixed else None
            if other is not None:  # one edited file at a time in the workspace
                other.rename(other.with_suffix(".off"))
            kinds = edited.read_text().count("\nkind: ") + edited.read_text().startswith("kind: ")
            print(f"\n{name}: {edited.name}, {len(edited.read_text().splitlines())} lines, {kinds} objects")
            figures = asyncio.run(run(root, edited, args.edits))
            figures.update(in_process(root, edited, args.edits))
            for label, values in figures.items():
                print(row(label, values))
    print("load average: " + " ".join(f"{x:.2f}" for x in os.getloadavg()) + f" on {os.cpu_count()} CPUs")


if __name__ == "__main__":
    main()
