"""``-o FILE``: a report that cannot be written is exit 2 with a message, never a traceback (exit 1)."""
from __future__ import annotations

import io
import os
from pathlib import Path

import pytest

from dralint.cli import main

from conftest import BAD_CLAIM


def run(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(args), stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


@pytest.fixture
def claim(tmp_path: Path) -> Path:
    path = tmp_path / "claim.yaml"
    path.write_text(BAD_CLAIM)
    return path


@pytest.mark.parametrize("target", ["missing-folder/report.json", "."], ids=["no-folder", "a-folder"])
def test_unwritable_output_is_a_usage_error(tmp_path: Path, claim: Path, target: str) -> None:
    path = tmp_path / target
    code, out, err = run("--format", "json", "-o", str(path), str(claim))
    assert code == 2 and out == ""
    assert err.startswith(f"dralint: error: --output: cannot write {path}: ") and "Traceback" not in err


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_a_full_disk_is_a_usage_error(claim: Path) -> None:
    code, _, err = run("-o", "/dev/full", str(claim))
    assert code == 2 and "cannot write /dev/full: No space left on device" in err


def test_a_writable_output_keeps_the_findings_exit_code(tmp_path: Path, claim: Path) -> None:
    report = tmp_path / "report.txt"
    code, out, _ = run("-o", str(report), str(claim))
    assert code == 1 and out == "" and "DRA201" in report.read_text()


@pytest.mark.parametrize("option", ["--max-steps=0", "--max-steps=-5", "--max-seconds=0", "--max-seconds=-1",
                                    "--max-seconds=nan"])
def test_a_feasibility_budget_of_nothing_is_refused(tmp_path, option):
    code, _, err = run("--no-config", option, str(tmp_path))
    assert code == 2 and f"{option.split('=')[0][2:]}: " in err and "must be" in err


def test_a_reader_that_leaves_early_is_no_internal_error(tmp_path):
    # `dralint ... | head -1`: the pipe closes while findings are still being written.
    import subprocess
    import sys

    claim = ("apiVersion: resource.k8s.io/v1\nkind: ResourceClaim\nmetadata: {{name: c{i}, namespace: d}}\n"
             "spec: {{devices: {{requests: [{{name: gpu, exactly: {{deviceClassName: gpu, cout: 1}}}}]}}}}\n")
    path = tmp_path / "many.yaml"
    path.write_text("---\n".join(claim.format(i=i) for i in range(3000)))
    proc = subprocess.Popen([sys.executable, "-m", "dralint", "--no-config", str(path)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.readline()
    proc.stdout.close()
    err = proc.stderr.read().decode()
    assert proc.wait() == 1 and "internal error" not in err and "Traceback" not in err
