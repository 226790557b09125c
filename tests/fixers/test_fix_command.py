"""``dralint --fix``: the fixes written to the files, shown as a diff, or refused when they hurt."""
from __future__ import annotations

import io
import os
import subprocess
import sys

import pytest

from dralint import fixers
from dralint.cli import main
from dralint.fixes import Fix, Safety, TextEdit

TYPO = """\
# four GPUs
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata:
  name: four-gpus
  namespace: ml
spec:
  devices:
    requests:
    - name: gpus
      exactly:
        deviceClassName: gpu.example.com
        cout: 4     # four
        selector: {cel: {expression: "true"}}
    constraints:
    - requests: [GPUS]
      matchAttribute: gpu.example.com/model
"""
FIXED = TYPO.replace("cout:", "count:").replace("[GPUS]", "[gpus]")


def _run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(["--no-config", *argv], out, err)
    return code, out.getvalue(), err.getvalue()


def test_fix_writes_the_safe_fixes_and_reports_what_remains(tmp_path):
    path = tmp_path / "claim.yaml"
    path.write_text(TYPO)
    code, out, err = _run("--fix", str(path))
    assert path.read_text() == FIXED
    assert code == 1 and "unknown field `selector`" in out and "cout" not in out
    assert "applied 2 fix(es) in 1 file(s); 1 more with --unsafe-fixes" in err
    assert os.listdir(tmp_path) == ["claim.yaml"]


def test_unsafe_fixes_are_applied_when_asked(tmp_path):
    path = tmp_path / "claim.yaml"
    path.write_text(TYPO)
    _run("--fix", "--unsafe-fixes", str(path))
    assert "selectors: {cel:" in path.read_text()


def test_diff_shows_the_fixes_and_writes_nothing(tmp_path):
    path = tmp_path / "claim.yaml"
    path.write_text(TYPO)
    code, out, err = _run("--fix", "--diff", str(path))
    assert code == 1 and path.read_text() == TYPO
    assert f"--- {path}\n+++ {path}\n" in out and "-        cout: 4     # four\n+        count: 4     # four\n" in out
    assert "would apply 2 fix(es)" in err
    clean = tmp_path / "clean.yaml"
    clean.write_text(FIXED)
    assert _run("--fix", "--diff", str(clean))[:2] == (0, "")


def test_the_diff_of_many_alike_objects_turns_the_file_into_what_fix_writes(tmp_path):
    # Hundreds of identical lines (the case the patience diff is for): the diff, replayed as patch
    # replays it, must give exactly the text --fix writes.
    from test_linediff import _replayed

    text = "---\n".join(TYPO.replace("four-gpus", f"claim-{n}") for n in range(60))
    path = tmp_path / "claims.yaml"
    path.write_text(text)
    diff = _run("--fix", "--diff", str(path))[1]
    _run("--fix", str(path))
    fixed = path.read_text()
    assert fixed != text and fixed.count("count: 4") == 60
    assert "".join(_replayed(text.splitlines(keepends=True), diff.splitlines(keepends=True))) == fixed


def test_stdin_gets_the_fixed_text_on_stdout():
    proc = subprocess.run([sys.executable, "-m", "dralint", "--no-config", "--fix", "-"], input=TYPO, text=True,
                          capture_output=True)
    assert proc.stdout == FIXED
    assert proc.returncode == 1  # `selector` remains
    assert "unknown field `selector`" in proc.stderr and "[DRA101 unknown-field]" in proc.stderr


def test_diff_and_unsafe_fixes_need_fix(tmp_path):
    assert _run("--diff", str(tmp_path))[0] == 2
    assert _run("--unsafe-fixes", str(tmp_path))[0] == 2


def test_a_fix_that_would_add_an_error_is_not_applied(tmp_path, monkeypatch):
    def harmful(target):  # renames the field to one whose value is then of the wrong type
        node = target.node()
        return Fix("break it", Safety.SAFE, (TextEdit(target.finding.file, node.line + 1, node.column + 1,
                                                       node.line + 1, node.column + 5, "count: [1]"),))

    monkeypatch.setitem(fixers.FIXERS, "DRA101", harmful)
    path = tmp_path / "claim.yaml"
    path.write_text(TYPO.replace("        selector: {cel: {expression: \"true\"}}\n", ""))
    code, _, err = _run("--fix", str(path))
    assert "1 fix(es) not applied because they would add an error" in err
    assert "cout: 4" in path.read_text() and "[gpus]" in path.read_text()


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_fixes_do_not_depend_on_the_number_of_processes(tmp_path, jobs):
    for i in range(3):
        (tmp_path / f"c{i}.yaml").write_text(TYPO)
    _run("--fix", "-j", jobs, str(tmp_path))
    assert all((tmp_path / f"c{i}.yaml").read_text() == FIXED for i in range(3))
