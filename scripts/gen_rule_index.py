#!/usr/bin/env python3
"""Generate rules/index.json from the rule catalog (rules/*.yaml). ``--check`` fails when it is stale.

The index holds each rule file's mapping under the file's length and checksums (``catalog.digest``), so that a run reads JSON
instead of parsing every YAML file (see dralint/catalog.py).
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from dralint.catalog import INDEX, CatalogError, digest, load_catalog, read_rule_file  # noqa: E402
from generated import write_or_check  # noqa: E402  (scripts/ is the script's own folder on sys.path)


def render(folder: Path) -> str:
    """The index of the rule files in ``folder``: one line per file, in file order."""
    load_catalog.__wrapped__(folder)   # every file valid, ids and names unique (uncached: the files may have changed)
    lines = [f"{json.dumps(digest(path.read_bytes()))}: {json.dumps(read_rule_file(path))}"
             for path in sorted(folder.glob("DRA*.yaml"))]
    return "{\n" + ",\n".join(lines) + "\n}\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--check", action="store_true", help="exit 1 when rules/index.json is not up to date")
    args = parser.parse_args()
    folder = REPO / "rules"
    target = folder / INDEX
    try:
        text = render(folder)
    except CatalogError as exc:
        print(f"rules/: {exc}")
        return 1
    return write_or_check(target, text, args.check, "gen_rule_index.py")


if __name__ == "__main__":
    sys.exit(main())
