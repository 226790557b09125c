"""What a generator script does with its output: write it, or with ``--check`` say whether the
file it would write is up to date."""
from __future__ import annotations

from pathlib import Path


def write_or_check(target: Path, text: str, check: bool, script: str) -> int:
    """Write ``text`` to ``target``; with ``check``, only compare (exit status 1 and a line naming
    ``script`` to run when the file is missing or differs)."""
    if check:
        if not target.exists() or target.read_text(encoding="utf-8") != text:
            print(f"{target} is stale: run python scripts/{script}")
            return 1
        return 0
    target.write_text(text, encoding="utf-8")
    return 0
