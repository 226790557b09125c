"""The ``dralint`` command: parse options, call the engine, print a report, exit 0/1/2."""
from __future__ import annotations

import argparse
import os
import sys
from typing import Sequence, TextIO

from . import __version__

EXIT_USAGE = 2


def _csv(values: Sequence[str] | None) -> tuple[str, ...]:
    return tuple(t.strip() for v in values or () for t in v.split(",") if t.strip())


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="dralint",
        description="Lint Kubernetes Dynamic Resource Allocation (DRA) manifests as the API server and scheduler "
                    "of the target release would judge them.",
        epilog="Exit codes: 0 clean (warnings allowed), 1 errors found, 2 usage or unreadable input.")
    parser.add_argument("paths", nargs="*", metavar="PATH", help="files or folders to lint (default: .); - reads stdin")
    parser.add_argument("--format", "-f", default="text", choices=["text", "json"], help="output format (default: text)")
    parser.add_argument("--kube-version", help="target Kubernetes release, e.g. 1.35 (default: the newest known)")
    parser.add_argument("--feature-gates", default="", metavar="NAME=BOOL,...",
                        help="feature gates of the target cluster, Kubernetes spelling")
    parser.add_argument("--select", action="append", metavar="RULES", help="only these rules (ids, names or id prefixes)")
    parser.add_argument("--ignore", action="append", metavar="RULES", help="skip these rules (ids, names or id prefixes)")
    parser.add_argument("--no-strict", action="store_true", help="unknown fields are not errors (fieldValidation=Ignore)")
    parser.add_argument("--old", metavar="FILE", help="judge PATH as an update of the matching objects in FILE")
    parser.add_argument("--cluster", action="append", default=[], metavar="PATH",
                        help="cluster state: slices, classes, nodes, allocated claims (repeatable; files, folders or -)")
    parser.add_argument("--node", help="judge feasibility on this node only")
    parser.add_argument("--trace", action="append", default=[], metavar="CLAIM", help="print the allocator's search for CLAIM")
    parser.add_argument("--show-allocation", action="store_true", help="show the devices the scheduler would pick")
    parser.add_argument("--max-steps", type=int, default=1_000_000, help="search budget of the feasibility check")
    parser.add_argument("--color", choices=["auto", "always", "never"], default="auto", help="colour text output")
    parser.add_argument("--list-rules", action="store_true", help="list the rules and exit")
    parser.add_argument("--version", action="version", version=f"dralint {__version__}")
    return parser


def main(argv: Sequence[str] | None = None, stdout: TextIO | None = None, stderr: TextIO | None = None) -> int:
    out, err = stdout or sys.stdout, stderr or sys.stderr
    args = build_parser().parse_args(argv)

    # Imported here so that --version and --help stay instant.
    from .catalog import load_catalog
    from .engine import Options, lint_paths
    from .releases import NEWEST_MINOR, GateError, parse_gates, parse_version
    from .report import FORMATS
    from .rule_filter import UsageError

    if args.list_rules:
        for rule in load_catalog():
            out.write(f"{rule.id}  {rule.name:<40} {rule.category.value:<13} {rule.severity.value:<8} {rule.summary}\n")
        return 0
    try:
        minor = parse_version(args.kube_version) if args.kube_version else NEWEST_MINOR
        gates, notes = parse_gates(args.feature_gates, minor)
        for note in notes:
            err.write(f"dralint: note: {note}\n")
        if "-" in args.paths and "-" in args.cluster:
            raise UsageError("stdin (-) can be read once: give it to PATH or to --cluster, not both")
        options = Options(kube_version=f"1.{minor}", feature_gates=gates, strict=not args.no_strict,
                          select=_csv(args.select), ignore=_csv(args.ignore), cluster=tuple(args.cluster),
                          old=args.old, node=args.node, trace=tuple(args.trace),
                          show_allocation=args.show_allocation, max_steps=args.max_steps)
        result = lint_paths(args.paths, options)
    except (ValueError, GateError, UsageError) as exc:
        err.write(f"dralint: error: {exc}\n")
        return EXIT_USAGE
    colour = args.color == "always" or (args.color == "auto" and out.isatty() and not os.environ.get("NO_COLOR"))
    FORMATS[args.format].render(result, out, colour=colour)
    return result.exit_code


def run() -> None:
    """Console-script entry point."""
    sys.exit(main())
