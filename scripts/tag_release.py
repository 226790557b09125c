#!/usr/bin/env python3
"""Tag a release: the annotated git tag ``v<version>``, from the version in pyproject.toml.

The tag scheme is what pre-commit users write as ``rev:`` and what the rule links of dralint
point at (dralint/project.py). Refuses (exit 1) when ``dralint/__init__.py`` says another
version, when the working tree has uncommitted changes, or when the tag already exists.
"""
from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def versions(repo: Path) -> tuple[str, str]:
    """The version of pyproject.toml and the ``__version__`` of the package."""
    project = tomllib.loads((repo / "pyproject.toml").read_text(encoding="utf-8"))["project"]["version"]
    match = re.search(r'^__version__ = "([^"]+)"', (repo / "dralint" / "__init__.py").read_text(encoding="utf-8"),
                      re.MULTILINE)
    return project, match.group(1) if match else ""


def git(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=False)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repo", type=Path, default=REPO, help="the checkout to tag (default: this one)")
    parser.add_argument("--dry-run", action="store_true", help="say what would be tagged, tag nothing")
    args = parser.parse_args(argv)
    version, package = versions(args.repo)
    tag = f"v{version}"
    if package != version:
        print(f"pyproject.toml says {version} but dralint/__init__.py says {package}: make them agree first")
        return 1
    if git(args.repo, "status", "--porcelain").stdout.strip():
        print("the working tree has uncommitted changes: commit them first")
        return 1
    if git(args.repo, "rev-parse", "-q", "--verify", f"refs/tags/{tag}").returncode == 0:
        print(f"{tag} exists already: raise the version in pyproject.toml and dralint/__init__.py first")
        return 1
    commit = git(args.repo, "rev-parse", "--short", "HEAD").stdout.strip()
    if args.dry_run:
        print(f"would tag {commit} as {tag}")
        return 0
    made = git(args.repo, "tag", "-a", tag, "-m", f"dralint {version}")
    if made.returncode != 0:
        print(made.stderr.strip())
        return 1
    print(f"tagged {commit} as {tag}; publish it with: git push origin {tag}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
