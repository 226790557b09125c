#!/usr/bin/env python3
"""How fast ``dralint lsp`` answers an edit: a real client drives the server process over stdio.

The workspace is a corpus of realistic manifests (``../shared/bench/gen_corpus.py``: claims,
templates, classes and slices with CEL selectors) as context, plus one 500-line file that the
client opens and edits. Printed, for each scenario, over ``--edits`` edits: median, p90 and max
of the time from sending ``didChange`` to receiving the diagnostics of that version (debounce
included), then the same lint measured in-process (no protocol, no debounce) to show where the
time goes, and the machine's load average (other processes share these cores)::

    python3 bench/bench_lsp.py                     # 40 context files (400 documents), 40 edits
    python3 bench/bench_lsp.py --context-docs 4000 --edits 100
    python3 bench/bench_lsp.py --context-docs 0    # the file alone

Scenarios: ``single`` waits for each edit's diagnostics before the next (a pause in typing);
``burst`` types 8 characters 40 ms apart, then measures from the last one (the debounce and the
"newest text wins" rule at work). Needs the ``lsp`` extra; loopback only (stdio), bounded.
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


def corpus(out: Path, docs: int, files: int, seed: int) -> list[Path]:
    if not GENERATOR.is_file():
        sys.exit(f"bench_lsp: needs {GENERATOR} (the shared reference folder beside the checkout)")
    subprocess.run([sys.executable, str(GENERATOR), "--docs", str(docs), "--files", str(files), "--out", str(out),
                    "--seed", str(seed)], check=True, stdout=subprocess.DEVNULL)
    return sorted(out.glob("*.yaml"))


class Client(LanguageClient):
    """Records when each version's diagnostics arrive."""

    def __init__(self) -> None:
        super().__init__("bench-lsp", "1")
        self.arrived: dict[int | None, float] = {}
        self.counts: dict[int | None, int] = {}
        self.event = asyncio.Event()

        @self.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        def diagnostics(params: types.PublishDiagnosticsParams) -> None:
            self.arrived[params.version] = time.perf_counter()
            self.counts[params.version] = len(params.diagnostics)
            self.event.set()

    async def until(self, version: int, timeout: float = 30.0) -> float:
        deadline = time.perf_counter() + timeout
        while version not in self.arrived:
            self.event.clear()
            await asyncio.wait_for(self.event.wait(), max(0.01, deadline - time.perf_counter()))
        return self.arrived[version]


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
    client.text_document_did_open(types.DidOpenTextDocumentParams(types.TextDocumentItem(uri=uri, language_id="yaml", version=0, text=text)))
    first = await client.until(0) - start
    line, column = edit_at(text)
    figures: dict[str, list[float]] = {"open (reads the workspace)": [first], "single": [], "burst": []}
    version = 0

    def change(digit: str) -> None:
        """Type ``digit`` over the count's first digit; the whole text is sent, as the server asks."""
        nonlocal version, text
        version += 1
        lines = text.split("\n")
        lines[line] = lines[line][:column] + digit + lines[line][column + 1:]
        text = "\n".join(lines)
        client.text_document_did_change(types.DidChangeTextDocumentParams(
            types.VersionedTextDocumentIdentifier(uri=uri, version=version),
            [types.TextDocumentContentChangeWholeDocument(text=text)]))

    for i in range(edits):  # each edit types over the count's first digit: 1 → 2 → 1 ...
        sent = time.perf_counter()
        change("2" if i % 2 == 0 else "1")
        figures["single"].append(await client.until(version) - sent)
        await asyncio.sleep(0.1)
    for _ in range(max(1, edits // 8)):
        for k in range(8):
            change(str(k + 1))
            sent = time.perf_counter()
            await asyncio.sleep(0.04)
        figures["burst"].append(await client.until(version) - sent)
        await asyncio.sleep(0.3)
    await client.shutdown_async(None)
    client.exit(None)
    await client.stop()
    return figures


def in_process(root: Path, edited: Path, runs: int) -> list[float]:
    """The same lint without the protocol: Workspace.lint on the edited text."""
    from dralint.catalog import load_catalog
    from dralint.lsp.spans import Lines
    from dralint.lsp.translate import diagnostics
    from pygls.workspace.position_codec import PositionCodec

    from dralint.lsp.workspace import Workspace

    workspace = Workspace([root], load_catalog())
    text = edited.read_text()
    path = os.path.normpath(str(edited))
    workspace.lint([path], {path: text})  # reads the workspace
    times = []
    for i in range(runs):
        changed = text.replace("count: 1", f"count: {1 + i % 2}", 1)
        start = time.perf_counter()
        linted = workspace.lint([path], {path: changed})
        diagnostics(linted[path], Lines(changed), PositionCodec(), workspace.catalog)
        times.append(time.perf_counter() - start)
    return times


def row(name: str, values: list[float]) -> str:
    ms = sorted(v * 1000 for v in values)
    p90 = ms[min(len(ms) - 1, int(round(0.9 * (len(ms) - 1))))]
    return f"{name:32} n={len(ms):3}  median {statistics.median(ms):7.1f} ms  p90 {p90:7.1f} ms  max {ms[-1]:7.1f} ms"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--context-docs", type=int, default=400, help="documents of the workspace besides the edited file")
    parser.add_argument("--context-files", type=int, default=40)
    parser.add_argument("--edits", type=int, default=40)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        context = corpus(root / "context", args.context_docs, args.context_files, seed=1) if args.context_docs else []
        edited_dir = root / "edited"
        [edited] = corpus(edited_dir, 8, 1, seed=EDITED_SEED)
        lines = len(edited.read_text().splitlines())
        print(f"workspace: {len(context)} files, {args.context_docs} documents; edited file {lines} lines")
        figures = asyncio.run(run(root, edited, args.edits))
        for name, values in figures.items():
            print(row(name, values))
        print(row("in-process Workspace.lint", in_process(root, edited, args.edits)))
    print("load average: " + " ".join(f"{x:.2f}" for x in os.getloadavg()) + f" on {os.cpu_count()} CPUs")


if __name__ == "__main__":
    main()
