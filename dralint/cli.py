"""The ``dralint`` command: parse options, read the configuration, call the engine, report, exit 0/1/2."""
from __future__ import annotations

import argparse
import dataclasses
import gc
import os
import sys
import traceback
from pathlib import Path
from typing import TYPE_CHECKING, Sequence, TextIO

from . import __version__

if TYPE_CHECKING:  # the heavy modules are imported when a run needs them
    from .catalog import Catalog
    from .cluster.command import LiveCluster
    from .config import Config
    from .engine import RunResult
    from .options import Options
    from .findings import Severity
    from .source import SourceFile

EXIT_USAGE = 2
# A bug of dralint's that got past the engine's boundaries (every object is judged on its own).
EXIT_INTERNAL = 3
FORMAT_NAMES = ("text", "json", "sarif", "github", "junit")
LEVELS = ("error", "warning", "info")


def _csv(values: Sequence[str] | None) -> tuple[str, ...]:
    return tuple(t.strip() for v in values or () for t in v.split(",") if t.strip())


def build_parser() -> argparse.ArgumentParser:
    """The command line; every option is documented in docs/usage.md."""
    parser = argparse.ArgumentParser(
        prog="dralint",
        description="Lint Kubernetes Dynamic Resource Allocation (DRA) manifests as the API server and scheduler "
                    "of the target release would judge them.",
        epilog="Exit codes: 0 clean (warnings allowed), 1 errors found, 2 usage or unreadable input. "
               "Settings may also come from .dralint.yaml or [tool.dralint] in pyproject.toml (see docs/usage.md).")
    parser.add_argument("paths", nargs="*", metavar="PATH", help="files or folders to lint (default: .); - reads stdin")
    parser.add_argument("--format", "-f", default="text", choices=FORMAT_NAMES, help="output format (default: text)")
    parser.add_argument("--output", "-o", metavar="FILE", help="write the report to FILE instead of stdout")
    parser.add_argument("--kube-version", help="target Kubernetes release, e.g. 1.35 (default: the newest released; the release "
                             "under way can be chosen too)")
    parser.add_argument("--feature-gates", default="", metavar="NAME=BOOL,...",
                        help="feature gates of the target cluster, Kubernetes spelling")
    parser.add_argument("--select", action="append", metavar="RULES", help="only these rules (ids, names or id prefixes)")
    parser.add_argument("--ignore", action="append", metavar="RULES", help="skip these rules (ids, names or id prefixes)")
    parser.add_argument("--severity", action="append", default=[], metavar="RULE=LEVEL",
                        help="report RULE at LEVEL (error, warning or info); repeatable")
    parser.add_argument("--strict", action=argparse.BooleanOptionalAction, default=None,
                        help="unknown fields are errors, as with kubectl's default fieldValidation=Strict "
                             "(default); --no-strict ignores them")
    parser.add_argument("--fail-on", choices=LEVELS, help="the least severity that fails the run (default: error)")
    parser.add_argument("--old", metavar="FILE", help="judge PATH as an update of the matching objects in FILE")
    parser.add_argument("--cluster", action="append", default=[], metavar="PATH",
                        help="cluster state: slices, classes, nodes, allocated claims (repeatable; files, folders or -)")
    parser.add_argument("--kubeconfig", metavar="FILE",
                        help="list the cluster state from the API server of this kubeconfig instead of --cluster "
                             "files (needs pip install 'dralint[cluster]'; docs/live-cluster.md)")
    parser.add_argument("--context", metavar="NAME",
                        help="the kubeconfig context to use (with KUBECONFIG or ~/.kube/config when --kubeconfig "
                             "is not given)")
    parser.add_argument("--node", help="judge feasibility on this node only")
    parser.add_argument("--trace", action="append", default=[], metavar="CLAIM", help="print the allocator's search for CLAIM")
    parser.add_argument("--show-allocation", action="store_true", help="show the devices the scheduler would pick")
    parser.add_argument("--together", action="store_true",
                        help="judge all claims and pods of the run at once, one beside the other in file order")
    parser.add_argument("--as-stored", action="store_true",
                        help="feasibility: the claims and templates linted are ones the cluster already stores: fields "
                             "whose feature gate is off are kept and make allocation fail (DRA704), instead of being "
                             "dropped as the API server drops them on create (DRA802)")
    parser.add_argument("--max-steps", type=int, default=1_000_000,
                        help="search steps per claim or pod before feasibility says 'undecided' (default 1,000,000)")
    parser.add_argument("--max-seconds", type=float, default=None,
                        help="also bound the whole feasibility stage by wall time, in seconds (default: no time "
                             "limit; --max-steps alone bounds the search, so verdicts never depend on the machine's "
                             "load)")
    parser.add_argument("--exclude", action="append", default=[], metavar="GLOB",
                        help="do not read paths matching GLOB (.gitignore style, relative to the current folder); "
                             "repeatable. node_modules, vendor, third_party and hidden folders are never walked into")
    parser.add_argument("--max-file-size", metavar="SIZE",
                        help="the largest file read, in bytes or as 64MiB, 1GiB... (default 16MiB)")
    parser.add_argument("--config", metavar="FILE", help="read settings from FILE instead of the nearest .dralint.yaml")
    parser.add_argument("--no-config", action="store_true", help="read no configuration file")
    parser.add_argument("--report-unused-ignores", action="store_true",
                        help="report suppressions that hide nothing (rule DRA910)")
    parser.add_argument("--jobs", "-j", type=int, default=0, metavar="N",
                        help="judge in up to N processes (default 0: one per CPU, at most 4; small inputs always "
                             "use one); the output does not change")
    parser.add_argument("--fix", action="store_true",
                        help="apply the safe fixes of the findings to the files, then report what remains "
                             "(docs/migrate.md); with - the fixed text goes to stdout and what remains to stderr")
    parser.add_argument("--unsafe-fixes", action="store_true", help="with --fix: apply the unsafe fixes too")
    parser.add_argument("--diff", action="store_true", help="with --fix: print the fixes as a unified diff, write nothing")
    parser.add_argument("--color", choices=["auto", "always", "never"], default="auto", help="colour text output")
    parser.add_argument("--list-rules", action="store_true", help="list the rules and exit")
    parser.add_argument("--explain", metavar="RULE", help="print a rule's rationale, fix and examples, and exit")
    parser.add_argument("--version", action="version", version=f"dralint {__version__}")
    return parser


def main(argv: Sequence[str] | None = None, stdout: TextIO | None = None, stderr: TextIO | None = None) -> int:
    """Run the command; returns the exit code."""
    out, err = stdout or sys.stdout, stderr or sys.stderr
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["migrate"]:  # a subcommand with its own options (docs/migrate.md)
        from .migrate.cli import main as migrate

        return migrate(argv[1:], out, err)
    if argv[:1] == ["lsp"]:  # the editor face (docs/editors.md); a folder named lsp is ./lsp
        from .lsp import main as lsp_main

        return lsp_main(argv[1:], err)
    if argv[:1] == ["audit"]:  # the live cluster's stored objects judged (docs/audit.md)
        from .audit import main as audit_main

        return audit_main(argv[1:], out, err)
    if argv[:1] == ["why-pending"]:  # a Pod waiting for its claims, from the live cluster (docs/why-pending.md)
        from .pending import main as why_pending

        return why_pending(argv[1:], out, err)
    args = build_parser().parse_args(argv)

    # Imported here so that --version and --help stay instant.
    from .catalog import load_catalog
    from .config import ConfigError
    from .rule_filter import UsageError

    catalog = load_catalog()
    if args.list_rules:
        from .explain import rule_table

        out.write(rule_table(catalog))
        return 0
    if args.explain:
        from .explain import UnknownRule, explain, find_rule

        try:
            out.write(explain(find_rule(catalog, args.explain)))
        except UnknownRule as exc:
            err.write(f"dralint: error: {exc}\n")
            return EXIT_USAGE
        return 0
    try:
        return _lint(args, catalog, out, err)
    except (UsageError, ConfigError) as exc:
        err.write(f"dralint: error: {exc}\n")
        return EXIT_USAGE
    except BrokenPipeError:  # `dralint ... | head`: the reader left, which is no bug (run() ends quietly)
        raise
    except Exception:  # past every boundary of the engine: a bug of dralint's, never called the user's error
        err.write("dralint: internal error: please report it with the input that caused it (the other objects' "
                  "findings could not be printed)\n" + traceback.format_exc())
        return EXIT_INTERNAL


def _lint(args: argparse.Namespace, catalog: Catalog, out: TextIO, err: TextIO) -> int:
    from .config import ConfigError
    from .rule_filter import UsageError

    if "-" in args.paths and "-" in args.cluster:
        raise UsageError("stdin (-) can be read once: give it to PATH or to --cluster, not both")
    if args.jobs < 0:
        raise UsageError("--jobs: N must be 0 (one per CPU) or more")
    if args.max_steps <= 0:  # a budget of nothing would make every claim "undecided"
        raise UsageError("--max-steps: N must be 1 or more")
    if args.max_seconds is not None and not args.max_seconds > 0:  # also refuses nan
        raise UsageError("--max-seconds: SECONDS must be more than 0")
    try:
        config = _config(args, catalog)
        live: LiveCluster | None = None
        if args.kubeconfig is not None or args.context is not None:
            from .cluster.command import live_cluster   # the cluster state listed live (ssl, http: never else)

            live = live_cluster(args, config, err)
        options, fail_on = _options(args, config, err)
    except (UsageError, ConfigError):
        raise
    except ValueError as exc:  # the value of an option: a --config that is not there
        raise UsageError(str(exc)) from None
    if (args.diff or args.unsafe_fixes) and not args.fix:
        raise UsageError("--diff and --unsafe-fixes go with --fix (dralint migrate has its own --diff)")
    if args.fix:
        from .autofix import apply_and_write

        fixed = apply_and_write(args.paths, options, unsafe=args.unsafe_fixes, diff=args.diff, out=out, err=err,
                                remaining=lambda result: _report_remaining(result, catalog, config, fail_on, err))
        if fixed is not None:
            return fixed
    # Opened before the run: a report that cannot be written is a usage error (exit 2), found before
    # the work, never a traceback that CI reads as "findings" (exit 1).
    if live is not None:   # the live cluster replaces the configuration's cluster files
        options = dataclasses.replace(options, cluster=())
    stream = _open_output(args.output) if args.output else out
    try:
        code = _lint_to(args, catalog, config, options, fail_on, stream, err, live.files if live else [])
    finally:
        if args.output:
            _close_output(stream, args.output)
    return code


def _report_remaining(result: RunResult, catalog: Catalog, config: Config, fail_on: Severity, err: TextIO) -> None:
    """The findings left after ``--fix -``, as text on stderr: stdout carries the fixed text."""
    from .report import ReportContext, reporter

    kept = [f for f in result.findings if not config.ignored(f.file, f.rule)]
    code = 1 if any(f.severity.rank >= fail_on.rank for f in kept) else 0
    context = ReportContext(catalog=catalog, exit_code=code, fail_on=fail_on,
                            suppressed=result.suppressed + len(result.findings) - len(kept))
    reporter("text").render(dataclasses.replace(result, findings=kept), err, context)


def _open_output(path: str) -> TextIO:
    from .rule_filter import UsageError

    try:
        return open(path, "w", encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"--output: cannot write {path}: {exc.strerror or exc}") from None


def _close_output(stream: TextIO, path: str) -> None:
    """Close the report file; a full disk shows here, when the buffer is written."""
    from .rule_filter import UsageError

    try:
        stream.close()
    except OSError as exc:
        raise UsageError(f"--output: cannot write {path}: {exc.strerror or exc}") from None


def _lint_to(args: argparse.Namespace, catalog: Catalog, config: Config, options: Options, fail_on: Severity,
             stream: TextIO, err: TextIO, cluster_files: Sequence[SourceFile]) -> int:
    from . import parallel
    from .report import ReportContext, reporter
    from .rule_filter import UsageError

    result, files = parallel.lint_paths(args.paths, options, jobs=args.jobs, progress=err, cluster_files=cluster_files)
    for note in skip_notes(result.skipped) + unread_notes(result.unread) + not_judged_notes(result.not_judged):
        err.write(f"dralint: note: {note}\n")
    kept = [f for f in result.findings if not config.ignored(f.file, f.rule)]
    suppressed = result.suppressed + len(result.findings) - len(kept)
    result = dataclasses.replace(result, findings=kept)
    if result.input_error:
        code = EXIT_USAGE
    else:
        code = 1 if any(f.severity.rank >= fail_on.rank for f in kept) else 0
    colour = args.color == "always" or (args.color == "auto" and not args.output and stream.isatty()
                                        and not os.environ.get("NO_COLOR"))
    context = ReportContext(catalog=catalog, exit_code=code, files=tuple(f.name for f in files), colour=colour,
                            fail_on=fail_on, suppressed=suppressed)
    try:
        reporter(args.format).render(result, stream, context)
    except OSError as exc:
        if not args.output:
            raise  # stdout: a closed pipe is the console script's to handle
        raise UsageError(f"--output: cannot write {args.output}: {exc.strerror or exc}") from None
    return code


# What to lint instead of the files that are no manifests: one note per run for each.
_HELM = "lint what the chart renders: helm template RELEASE CHART | dralint -"
_KUSTOMIZE = "lint what kustomize builds: kustomize build DIR | dralint -"
_INSTEAD = {"helm-template": ("Go templates (Helm), not YAML until rendered", _HELM),
            "kustomize-patch": ("kustomize patches or kustomization files, not whole objects", _KUSTOMIZE),
            "kustomization": ("kustomize patches or kustomization files, not whole objects", _KUSTOMIZE)}


def skip_notes(skipped: dict[str, list[str]]) -> list[str]:
    """One line for each kind of file read but not judged: how many, the first, what to lint instead."""
    grouped: dict[tuple[str, str], list[str]] = {}
    for why, files in skipped.items():
        grouped.setdefault(_INSTEAD.get(why, (why, "")), []).extend(files)
    notes = []
    for (what, instead), files in grouped.items():
        first = files[0] + (f" and {len(files) - 1} more" if len(files) > 1 else "")
        notes.append(f"skipped {len(files)} file(s) that are {what} ({first})" + (f"; {instead}" if instead else ""))
    return notes


def unread_notes(unread: dict[str, int]) -> list[str]:
    """One line for the objects whose pods ask for devices but whose kind dralint does not read."""
    if not unread:
        return []
    kinds = _counted(sorted(unread.items()))
    return [f"did not read {sum(unread.values())} object(s) whose pod templates carry resourceClaims, of kinds "
            f"dralint does not know: {kinds}; their claims are not checked (docs/usage.md lists the workload "
            "kinds read)"]


def _counted(labels: list[tuple[str, int]]) -> str:
    """``Kind (v1) ×3, Other (v1)``: each label, with its count where there are several."""
    return ", ".join(f"{label} ×{count}" if count > 1 else label for label, count in labels)


# Kinds named in the note before "and N more": a rendered chart holds a dozen or more.
NOT_JUDGED_SHOWN = 8


def not_judged_notes(not_judged: dict[str, int]) -> list[str]:
    """One line naming the kinds of the objects dralint read but does not judge (a Service, a
    ConfigMap, a custom resource without pod templates), most frequent first."""
    if not not_judged:
        return []
    ranked = sorted(not_judged.items(), key=lambda item: (-item[1], item[0]))
    kinds = _counted(ranked[:NOT_JUDGED_SHOWN])
    more = f" and {len(ranked) - NOT_JUDGED_SHOWN} more kind(s)" if len(ranked) > NOT_JUDGED_SHOWN else ""
    return [f"did not judge {sum(not_judged.values())} object(s) of kinds dralint does not read: {kinds}{more} "
            "(docs/usage.md lists what is read)"]


def _config(args: argparse.Namespace, catalog: Catalog) -> Config:
    """The configuration named by --config, else the nearest one, else an empty one."""
    from .config import Config, find_config, load_config

    if args.no_config:
        return Config()
    if args.config:
        path = Path(args.config)
        if not path.is_file():
            raise ValueError(f"--config: {args.config}: no such file")
        return load_config(path, catalog)
    found = find_config(Path.cwd())
    return load_config(found, catalog) if found else Config()


def _options(args: argparse.Namespace, config: Config, err: TextIO) -> tuple[Options, Severity]:
    """Engine options and failing severity: the command line over the file."""
    from .config import Overrides, options, parse_size
    from .findings import Severity
    from .kube.releases import ReleaseError
    from .rule_filter import UsageError
    from .source import Exclude

    severities: dict[str, str] = {}
    for item in args.severity:
        rule, sep, level = item.partition("=")
        if not sep or level.strip() not in LEVELS:
            raise UsageError(f"--severity: {item!r} is not RULE=error, RULE=warning or RULE=info")
        severities[rule.strip()] = level.strip()
    limit = None
    if args.max_file_size is not None:
        try:
            limit = parse_size(args.max_file_size)
        except ValueError as exc:
            raise UsageError(f"--max-file-size: {exc}") from None
    overrides = Overrides(kube_version=args.kube_version, feature_gates=args.feature_gates, strict=args.strict,
                          select=_csv(args.select) if args.select else None,
                          ignore=_csv(args.ignore) if args.ignore else None, severities=severities,
                          cluster=tuple(args.cluster), report_unused_ignores=args.report_unused_ignores,
                          excludes=tuple(Exclude(g, os.getcwd()) for g in _csv(args.exclude)), max_file_size=limit)
    try:
        built, notes = options(config, overrides)
    except ReleaseError as exc:  # the settings are the command line's flags here (a file's is a ConfigError)
        raise UsageError(exc.named(f"--{exc.setting}")) from None
    for note in notes:
        err.write(f"dralint: note: {note}\n")
    built = dataclasses.replace(built, old=args.old, node=args.node, trace=tuple(args.trace),
                                show_allocation=args.show_allocation, together=args.together,
                                as_stored=args.as_stored, max_steps=args.max_steps, max_seconds=args.max_seconds)
    fail_on = Severity(args.fail_on) if args.fail_on else (config.fail_on or Severity.ERROR)
    return built, fail_on


# A run builds millions of small containers that live until it ends (the parsed documents), so
# the collector's default of a young-generation pass every 700 allocations costs a fifth of the
# reading time and finds nothing. Measured on the benchmark corpus: 1.11 s of reading at the
# default, 0.86-0.94 s from 20,000 on; collection still runs, so memory stays bounded.
_GC_THRESHOLDS = (100_000, 20, 20)


def run() -> None:
    """Console-script entry point.

    Ends the process without the interpreter's teardown, as mypy does (``hard_exit``): once the
    output is written and flushed, freeing the run's objects one by one is pure cost, and its
    final full collection alone took 0.9 s after a feasibility run on the benchmark corpus.
    Nothing is left to do at exit: files are closed, worker processes joined.
    """
    gc.set_threshold(*_GC_THRESHOLDS)
    try:
        code = main()
        sys.stdout.flush()
    except BrokenPipeError:  # `dralint ... | head`: the reader left; say nothing more
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        code = 1
    sys.stderr.flush()
    os._exit(code)
