"""Benchmark ``dralint migrate``, and measure how faithful a round-trip YAML library would be instead.

Run: python bench/bench_migrate.py [FOLDER]  (default ../shared/realworld; prints figures, asserts nothing)

1. ``dralint migrate --to v1`` over a copy of FOLDER, as a user runs it (a new process each
   time, files written): median and best of 5 wall-clock runs, and what it changed.
2. If ruamel.yaml is installed (it is not a dependency): the share of files that ruamel's
   round-trip mode gives back byte for byte after only loading and dumping them, trying six
   indentation settings per file and keeping the best. Text edits keep untouched bytes by
   construction; this is what the library alternative would have cost (docs/migrate.md).
"""
from __future__ import annotations

import io
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
_INDENTS = [(2, 2, 0), (2, 4, 2), (4, 4, 0), (4, 6, 4), (2, 3, 1), (4, 4, 2)]


def time_migrate(folder: Path, runs: int = 5) -> None:
    samples, last = [], ""
    for _ in range(runs):
        with tempfile.TemporaryDirectory() as tmp:
            copy = Path(tmp) / "tree"
            shutil.copytree(folder, copy)
            start = time.perf_counter()
            proc = subprocess.run([sys.executable, "-m", "dralint", "migrate", "--to", "v1", str(copy)],
                                  capture_output=True, text=True, cwd=REPO)
            samples.append(time.perf_counter() - start)
            last = proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else ""
    files = len(list(folder.rglob("*.y*ml")))
    print(f"migrate --to v1 over {folder} ({files} files): median {statistics.median(samples):.2f} s, "
          f"best {min(samples):.2f} s of {runs} runs (new process each, files written)")
    print(f"  {last}")


def ruamel_fidelity(folder: Path) -> None:
    try:
        from ruamel.yaml import YAML
    except ImportError:
        print("ruamel.yaml is not installed: `pip install ruamel.yaml` to measure the round-trip alternative")
        return
    files = sorted(folder.rglob("*.y*ml"))
    same = 0
    start = time.perf_counter()
    for path in files:
        text = path.read_text(encoding="utf-8")
        for mapping, sequence, offset in _INDENTS:
            yaml = YAML()
            yaml.preserve_quotes = True
            yaml.width = 10 ** 6
            yaml.indent(mapping=mapping, sequence=sequence, offset=offset)
            yaml.explicit_start = text.lstrip().startswith("---")
            try:
                buffer = io.StringIO()
                yaml.dump_all(list(yaml.load_all(text)), buffer)
            except Exception:  # noqa: BLE001 - any failure of the library counts as "not faithful"
                continue
            if buffer.getvalue() == text:
                same += 1
                break
    elapsed = time.perf_counter() - start
    import ruamel.yaml

    print(f"ruamel.yaml {ruamel.yaml.__version__} round trip (load + dump, best of {len(_INDENTS)} indentation "
          f"settings): {same} of {len(files)} files byte-identical ({100 * same / len(files):.0f}%), {elapsed:.1f} s")


def main() -> None:
    folder = Path(sys.argv[1]) if len(sys.argv) > 1 else REPO.parent / "shared" / "realworld"
    if not folder.is_dir():
        sys.exit(f"{folder}: no such folder")
    time_migrate(folder)
    ruamel_fidelity(folder)


if __name__ == "__main__":
    main()
