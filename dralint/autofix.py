"""``dralint --fix``: apply the fixes findings carry to the files they were found in.

Each pass lints the run with fixes attached, applies the chosen fixes of each file that do not
overlap (a later pass takes the others, and fixes a first one made possible), and keeps a file's
new text only when the run has no error the old text did not have (a fix that would make
things worse is dropped, its file left as it was). Files are written whole, by temporary file
and rename; ``--diff`` prints what would change instead.
"""
from __future__ import annotations

import dataclasses
from collections import Counter
from dataclasses import dataclass, field
from typing import Callable, Sequence, TextIO

from . import engine, source
from .engine import RunResult
from .options import Options
from .findings import Category, Finding, Severity
from .fixes import Fix, Safety, apply_fixes
from .textfiles import Editable, read_editable, read_stdin, unified_diff, write_atomic

MAX_PASSES = 10  # a fix may make another possible; files retried one fix at a time take more


@dataclass
class FixRun:
    """What ``--fix`` did: the new text of each changed file and the fixes applied to it."""

    originals: dict[str, Editable] = field(default_factory=dict)
    texts: dict[str, str] = field(default_factory=dict)
    applied: Counter = field(default_factory=Counter)
    dropped: Counter = field(default_factory=Counter)   # fixes whose file would have got a new error
    rejected: set[Fix] = field(default_factory=set)
    single: set[str] = field(default_factory=set)       # files whose fixes go one per pass
    result: RunResult | None = None                     # the last lint, of the fixed texts

    def changed(self) -> list[str]:
        return [name for name, text in self.texts.items() if text != self.originals[name].text]


def fix_paths(paths: Sequence[str], options: Options, *, unsafe: bool = False) -> FixRun:
    """Lint ``paths`` and apply their fixes in memory (safe ones; unsafe too when asked)."""
    options = dataclasses.replace(options, fixes=True)
    found, problems = source.discover(list(paths) or ["."])
    run = FixRun()
    for path in found:
        editable = read_stdin() if path == "-" else read_editable(path)
        name = source.reader.STDIN_NAME if path == "-" else path
        run.originals[name] = editable
        if editable.text is not None:
            run.texts[name] = editable.text
    cluster_files, old_files, context_problems = engine.read_context(options)

    def lint() -> RunResult:
        files = [source.load_text(run.texts[name], name) if name in run.texts else source.SourceFile(
                 name, [], [source.SourceProblem("unreadable", run.originals[name].problem, name, 0, 0)])
                 for name in run.originals]
        return engine.lint_files(files, options, cluster_files=cluster_files, old_files=old_files,
                                 discovery_problems=list(problems) + context_problems)

    result = lint()
    for _ in range(MAX_PASSES):
        proposed = _propose(run, result.findings, unsafe)
        if not proposed:
            break
        previous = dict(run.texts)
        run.texts.update({name: text for name, (text, _) in proposed.items()})
        after = lint()
        worse = _worse_files(result.findings, after.findings, proposed)
        for name in worse:  # undo; retry the file's fixes one at a time, and never the one that hurt
            run.texts[name] = previous[name]
            fixes = proposed[name][1]
            if len(fixes) == 1:
                run.rejected.add(fixes[0])
                run.dropped[name] += 1
            run.single.add(name)
        if worse:
            after = lint()
        for name in proposed.keys() - worse:
            run.applied[name] += len(proposed[name][1])
        result = after
    run.result = result
    return run


def _propose(run: FixRun, findings: list[Finding], unsafe: bool) -> dict[str, tuple[str, list[Fix]]]:
    """Per file, the new text with the chosen fixes that fit together, and those fixes."""
    by_file: dict[str, dict[Fix, None]] = {}  # in order, each fix once: one fix may resolve several findings
    for finding in findings:
        fix = finding.fix
        if fix is not None and (unsafe or fix.safety is Safety.SAFE) and finding.file in run.texts \
                and fix not in run.rejected:
            by_file.setdefault(finding.file, {})[fix] = None
    out = {}
    for name, unique in by_file.items():
        fixes = list(unique)
        new, taken, _ = apply_fixes(run.texts[name], name, fixes[:1] if name in run.single else fixes)
        if taken and new != run.texts[name]:
            out[name] = (new, taken)
    return out


def _worse_files(before: list[Finding], after: list[Finding], proposed: dict[str, tuple[str, list[Fix]]]) -> set[str]:
    """The files of ``proposed`` that got worse: a new error (by rule and object) where only safe
    fixes were applied; more errors where an unsafe one was (it may change one error for another:
    ``selector`` renamed ``selectors`` whose value is of the wrong type).

    Feasibility is left out: a fixed field may well show that a claim cannot be allocated
    (``cout: 4`` → ``count: 4``, and no node has four GPUs), which is news, not damage.
    """
    def errors(findings: list[Finding]) -> Counter:
        return Counter((f.file, f.rule, f.object) for f in findings
                       if f.severity is Severity.ERROR and f.category is not Category.FEASIBILITY)

    old, new = _by_file(errors(before)), _by_file(errors(after))
    worse = set()
    for name, (_, fixes) in proposed.items():
        mine_old, mine_new = old.get(name, Counter()), new.get(name, Counter())
        if all(f.safety is Safety.SAFE for f in fixes):
            if mine_new - mine_old:
                worse.add(name)
        elif sum(mine_new.values()) > sum(mine_old.values()):
            worse.add(name)
    return worse


def _by_file(counts: Counter) -> dict[str, Counter]:
    out: dict[str, Counter] = {}
    for key, n in counts.items():
        out.setdefault(key[0], Counter())[key] = n
    return out


def summary(run: FixRun, *, diff: bool) -> str:
    """One line for stderr: how many fixes were applied (or are available), and in how many files."""
    applied = sum(run.applied.values())
    files = len(run.changed())
    verb = "would apply" if diff else "applied"
    line = f"dralint: {verb} {applied} fix(es) in {files} file(s)"
    if run.dropped:
        line += (f"; {sum(run.dropped.values())} fix(es) not applied because they would add an error "
                 f"({', '.join(sorted(run.dropped))})")
    remaining = [f for f in (run.result.findings if run.result else []) if f.fix is not None]
    unsafe = sum(1 for f in remaining if f.fix is not None and f.fix.safety is Safety.UNSAFE)
    if unsafe:
        line += f"; {unsafe} more with --unsafe-fixes"
    return line



def apply_and_write(paths: Sequence[str], options: Options, *, unsafe: bool, diff: bool, out: TextIO,
                    err: TextIO, remaining: Callable[[RunResult], None] = lambda _: None) -> int | None:
    """The face of ``--fix``: write the fixed files (None: go on and report what remains), or print
    the diff (exit 1 when there is one), or, for stdin, the fixed text (exit 1 when errors remain)
    and hand what remains to ``remaining``, since stdout carries the text."""
    run = fix_paths(paths, options, unsafe=unsafe)
    code: int | None = None
    if diff:
        for name in run.changed():
            original = run.originals[name]
            out.write(unified_diff(name, original.with_bom(original.text or ""), original.with_bom(run.texts[name])))
        code = 1 if run.changed() else 0
    elif source.reader.STDIN_NAME in run.texts:
        out.write(run.originals[source.reader.STDIN_NAME].with_bom(run.texts[source.reader.STDIN_NAME]))
        code = 1 if run.result is not None and run.result.errors else 0
        if run.result is not None:
            remaining(run.result)
    for name in run.changed():
        if code is None and name != source.reader.STDIN_NAME:
            try:
                write_atomic(run.originals[name], run.texts[name])
            except OSError as error:
                err.write(f"{name}: cannot write: {error.strerror or error}; left untouched\n")
                code = 2
    err.write(summary(run, diff=diff) + "\n")
    return code
