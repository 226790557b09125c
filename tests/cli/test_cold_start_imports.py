"""A run on one small file imports only what it needs: no numpy, CEL, fixers' editing, reporters
it does not print with, live-cluster client, webhook or language-server stacks."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from conftest import REPO

# Imported by none of the runs below: feasibility (numpy), the faces, the live cluster's transport.
NEVER = ("numpy", "flask", "gunicorn", "pygls", "kubernetes", "ssl", "dralint.feasibility", "dralint.cluster",
         "dralint.lsp", "dralint_webhook", "dralint.explain", "dralint.report.sarif", "dralint.report.junit",
         "multiprocessing")
CEL = ("dralint.cel", "dralint.cel.compiler")
CLAIM = """\
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata:
  name: one-gpu
spec:
  devices:
    requests:
    - name: gpu
      exactly:
        deviceClassName: gpu.example.com
"""
SELECTOR = CLAIM + """\
        selectors:
        - cel:
            expression: device.driver == "gpu.example.com"
"""


def _imported(tmp_path, text: str, *args: str) -> set[str]:
    """The modules in ``sys.modules`` after ``dralint FILE`` ran in a fresh interpreter."""
    (tmp_path / "claim.yaml").write_text(text, encoding="utf-8")
    script = ("import io, json, sys\nfrom dralint.cli import main\n"
              f"code = main({[*args, '--no-config', str(tmp_path / 'claim.yaml')]!r}, stdout=io.StringIO())\n"
              "print(json.dumps([code, sorted(sys.modules)]))")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=REPO, check=True)
    code, modules = json.loads(done.stdout.splitlines()[-1])
    assert code == 0, done.stderr
    return set(modules)


@pytest.mark.parametrize("fmt", ["text", "json", "github"])
def test_small_run_without_selector_imports_no_cel_numpy_or_faces(tmp_path, fmt):
    modules = _imported(tmp_path, CLAIM, "--format", fmt)
    assert not modules & {*NEVER, *CEL}
    assert f"dralint.report.{'json_report' if fmt == 'json' else fmt}" in modules


def test_small_run_with_a_selector_imports_cel_but_not_numpy_or_faces(tmp_path):
    modules = _imported(tmp_path, SELECTOR)
    assert set(CEL) <= modules
    assert not modules & set(NEVER)
