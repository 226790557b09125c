"""``dralint migrate --to v1 PATH...``: rewrite DRA manifests to another resource.k8s.io version, in place.

Exit codes: 0 every DRA object is in the target version now (or, with ``--diff``, would be);
1 some object was refused or some file could not be rewritten (each said on stderr, the file
left as it was); 2 usage or unreadable input.
"""
from __future__ import annotations

import argparse
from pathlib import Path
from typing import Sequence, TextIO

from ..source import discover
from ..textfiles import read_editable, read_stdin, unified_diff, write_atomic
from .plan import TARGETS
from .rewrite import MIGRATED, REFUSED, TextOutcome, migrate_text

EXIT_USAGE = 2


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="dralint migrate",
        description="Rewrite the DRA objects of manifests (ResourceClaim, ResourceClaimTemplate, DeviceClass, "
                    "ResourceSlice, DeviceTaintRule) to another resource.k8s.io version, and the claim fields of "
                    "Pods and workloads to their 1.31 names, keeping comments, order, quoting and layout.",
        epilog="Each migrated object is proven to mean what the original meant before the file is written "
               "(temporary file, then rename). Exit codes: 0 done, 1 some object refused or file not "
               "rewritten (said on stderr), 2 usage or unreadable input. See docs/migrate.md.")
    parser.add_argument("paths", nargs="+", metavar="PATH", help="files or folders; - reads stdin and writes stdout")
    parser.add_argument("--to", required=True, choices=TARGETS, help="the resource.k8s.io version to write")
    parser.add_argument("--diff", action="store_true", help="print a unified diff instead of writing")
    parser.add_argument("--kube-version", metavar="VERSION",
                        help="the cluster's Kubernetes release, e.g. 1.36: an object is refused when that release does "
                             "not serve its kind in the target version (default: the configuration's kube-version, "
                             "else the linter's default, the newest released)")
    parser.add_argument("--config", metavar="FILE", help="configuration file (default: the nearest .dralint.yaml or "
                                                          "pyproject.toml); only its kube-version is used")
    parser.add_argument("--no-config", action="store_true", help="ignore configuration files")
    parser.add_argument("--force", action="store_true",
                        help="migrate objects that hold fields the target version lacks, dropping those fields "
                             "(each one reported)")
    return parser


def main(argv: Sequence[str], out: TextIO, err: TextIO) -> int:
    """Run ``dralint migrate``; returns the exit code."""
    args = build_parser().parse_args(argv)
    if args.paths.count("-") > 1:
        err.write("dralint migrate: error: stdin (-) can be read once\n")
        return EXIT_USAGE
    try:
        args.release = _release(args)
    except ValueError as error:  # ConfigError is one
        err.write(f"dralint migrate: error: {error}\n")
        return EXIT_USAGE
    files, problems = discover(args.paths)
    code = 0
    for problem in problems:
        err.write(f"{problem.file}: {problem.message}\n")
        code = EXIT_USAGE
    totals = _Totals()
    for path in files:
        result = _one(path, args, out, err, totals)
        code = max(code, result)
    err.write(totals.summary(args.to, args.release, args.diff) + "\n")
    return code


def _release(args: argparse.Namespace) -> str:
    """The release the output must be served by: --kube-version, else the configuration's, else the
    linter's default (the same choice ``dralint`` makes)."""
    from ..catalog import load_catalog
    from ..config import find_config, load_config
    from ..kube.releases import Release, ReleaseError

    version = args.kube_version
    if version is None and not args.no_config:
        found: Path | None
        if args.config:
            found = Path(args.config)
            if not found.is_file():
                raise ValueError(f"--config: {args.config}: no such file")
        else:
            found = find_config(Path.cwd())
        version = load_config(found, load_catalog()).kube_version if found else None
    try:
        return Release.parse(version or None)[0].version
    except ReleaseError as exc:
        if args.kube_version:
            raise ValueError(exc.named("--kube-version")) from None
        raise  # the configuration's kube-version, named as the file spells it


class _Totals:
    def __init__(self) -> None:
        self.files = self.changed = self.objects = self.refused = self.untouched = 0

    def summary(self, target: str, release: str, diff: bool) -> str:
        verb = "would change" if diff else "migrated"
        parts = [f"{self.files} file(s) read, {self.changed} {verb} ({self.objects} object(s) to {target}, "
                 f"as Kubernetes {release} serves it)"]
        if self.refused:
            parts.append(f"{self.refused} object(s) refused")
        if self.untouched:
            parts.append(f"{self.untouched} file(s) not rewritten")
        return "dralint migrate: " + "; ".join(parts)


def _one(path: str, args: argparse.Namespace, out: TextIO, err: TextIO, totals: _Totals) -> int:
    totals.files += 1
    stdin = path == "-"
    name = "<stdin>" if stdin else path
    file = read_stdin() if stdin else read_editable(path)
    if file.text is None:
        err.write(f"{name}: {file.problem}; left untouched\n")
        totals.untouched += 1
        return EXIT_USAGE if file.unreadable else 1
    outcome = migrate_text(file.text, name, args.to, force=args.force, release=args.release)
    code = _report(name, file.text, outcome, err, totals)
    totals.changed += outcome.changed
    if stdin and not args.diff:
        out.write(file.with_bom(outcome.new_text))
        return code
    if not outcome.changed:
        return code
    if args.diff:
        out.write(unified_diff(name, file.with_bom(file.text), file.with_bom(outcome.new_text)))
        return code
    try:
        write_atomic(file, outcome.new_text)
    except OSError as error:
        err.write(f"{name}: cannot write: {error.strerror or error}; left untouched\n")
        totals.untouched += 1
        return 1
    return code


def _report(name: str, text: str, outcome: TextOutcome, err: TextIO, totals: _Totals) -> int:
    if outcome.error:
        hint = (" (it looks like a Helm or Go template: render it first, e.g. `helm template … | dralint migrate "
                "--to v1 -`)") if "{{" in text else ""
        where = f"{name}:{outcome.error_line}" if outcome.error_line else name
        err.write(f"{where}: {outcome.error}{hint}\n")
        totals.untouched += 1
        return 1
    code = 0
    for obj in outcome.objects:
        where = f"{name}:{obj.line}"
        if obj.status == REFUSED:
            err.write(f"{where}: {obj.ref.display} ({obj.ref.api_version}) not migrated: {obj.reason}\n")
            totals.refused += 1
            code = 1
        elif obj.status == MIGRATED:
            totals.objects += 1
            if obj.lost:
                err.write(f"{where}: {obj.ref.display} migrated without {', '.join(f'`{p}`' for p in obj.lost)} "
                          "(--force: no equivalent in the target version)\n")
    return code
