"""The real ``pre-commit`` runs our hooks from this checkout against a throwaway repository.

``pre-commit try-repo`` installs dralint from the local checkout into its own virtualenv (PyPI is
reached for the build backend and dependencies only), so this exercises ``.pre-commit-hooks.yaml``
exactly as a user's ``.pre-commit-config.yaml`` would. Slow: the install takes a while.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import BAD_CLAIM, REPO


def _pre_commit() -> str | None:
    """The ``pre-commit`` of the environment running the tests (the test extras install it there,
    and CI runs that environment's python without putting its bin on PATH), else one on PATH."""
    beside = Path(sys.executable).parent / "pre-commit"
    return str(beside) if beside.is_file() else shutil.which("pre-commit")


PRE_COMMIT = _pre_commit()
pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(PRE_COMMIT is None or shutil.which("git") is None, reason="needs pre-commit and git")]

GOOD = """\
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata:
  name: gpu.example.com
spec: {}
"""


def git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    repo = tmp_path_factory.mktemp("user-repo")
    git(repo, "init", "-q")
    git(repo, "config", "user.email", "test@example.com")
    git(repo, "config", "user.name", "test")
    (repo / "good.yaml").write_text(GOOD)
    (repo / "bad.yaml").write_text(BAD_CLAIM)
    (repo / "notes.txt").write_text("not a manifest\n")
    git(repo, "add", ".")
    env = dict(os.environ, PRE_COMMIT_HOME=str(tmp_path_factory.mktemp("pre-commit-home")),
               PRE_COMMIT_COLOR="never")
    return repo, env


def try_repo(project: tuple[Path, dict[str, str]], hook: str, *files: str) -> subprocess.CompletedProcess[str]:
    repo, env = project
    args = [str(PRE_COMMIT), "try-repo", str(REPO), hook, "--verbose"]
    args += ["--files", *files] if files else ["--all-files"]
    return subprocess.run(args, cwd=repo, env=env, capture_output=True, text=True, timeout=900)


def test_hook_passes_on_good_manifests(project):
    proc = try_repo(project, "dralint", "good.yaml", "notes.txt")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Passed" in proc.stdout


def test_hook_fails_on_bad_manifests_and_names_the_rule(project):
    proc = try_repo(project, "dralint", "good.yaml", "bad.yaml")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "Failed" in proc.stdout
    assert "bad.yaml:12:9: error:" in proc.stdout and "[DRA201 request-count-positive]" in proc.stdout


def test_whole_repository_hook(project):
    proc = try_repo(project, "dralint-all")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "bad.yaml:12:9" in proc.stdout
