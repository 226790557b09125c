"""The documented ways to install dralint work: docs/install.md's commands run as written.

The fast tests check that the docs agree with each other and with pyproject.toml; the slow one
runs every block of docs/install.md and the README's first Quick start command in fresh virtual
environments, with the repository URL pointing at a local clone of this checkout's HEAD (tagged
with the release tag, as a release is).
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import venv
from pathlib import Path

import pytest

from dralint import __version__, project

from conftest import REPO

INSTALL = (REPO / "docs" / "install.md").read_text(encoding="utf-8")
README = (REPO / "README.md").read_text(encoding="utf-8")
FROM_REPOSITORY = f'pip install "dralint @ git+{project.repository()}@{project.release_tag()}"'


def blocks(markdown: str) -> list[str]:
    return re.findall(r"```sh\n(.*?)```", markdown, flags=re.DOTALL)


def test_every_install_instruction_names_the_repository_the_release_and_its_wheel():
    assert FROM_REPOSITORY in blocks(INSTALL)[0]
    assert f"dralint-{__version__}-py3-none-any.whl" in INSTALL
    ci = [(REPO / "docs" / "ci.md").read_text(), (REPO / "docs" / "examples" / "dralint.yml").read_text()]
    for text in ci:
        installs = [line.strip() for line in text.splitlines() if "pip install" in line]
        assert installs and all(line.endswith(FROM_REPOSITORY) for line in installs), installs
    # The bare name installs nothing of ours: no document may tell anyone to run it.
    for path in [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md")), REPO / "webhook" / "README.md"]:
        for line in path.read_text(encoding="utf-8").splitlines():
            assert not re.search(r"pip install dralint(\s|$)", line) or "finds nothing" in line, (path, line)


def _clone(tmp_path: Path) -> Path:
    origin = tmp_path / "remote" / "dralint"  # named as the repository: `git clone URL` makes ./dralint
    subprocess.run(["git", "clone", "-q", str(REPO), str(origin)], check=True)
    if subprocess.run(["git", "-C", str(origin), "rev-parse", "-q", "--verify", f"refs/tags/{project.release_tag()}"],
                      capture_output=True).returncode != 0:
        subprocess.run(["git", "-C", str(origin), "-c", "user.name=t", "-c", "user.email=t@example.com", "tag",
                        project.release_tag()], check=True)
    return origin


def _run_block(block: str, origin: Path, tmp_path: Path, name: str) -> subprocess.CompletedProcess[str]:
    """One block in a fresh virtual environment, its commands first on PATH."""
    env_dir = tmp_path / f"venv-{name}"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    work = tmp_path / f"work-{name}"
    if block.startswith("# in a checkout"):
        subprocess.run(["git", "clone", "-q", str(origin), str(work)], check=True)
    else:
        work.mkdir()
    # pip wants a host in a file URL (before pip 24, "file:///…@tag" was refused); git takes the path.
    script = block.replace(f"git+{project.repository()}", f"git+file://localhost{origin}")
    script = script.replace(project.repository(), str(origin))
    env = {**os.environ, "PATH": f"{env_dir / 'bin'}{os.pathsep}{os.environ['PATH']}", "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    env.pop("PYTHONPATH", None)
    env.pop("VIRTUAL_ENV", None)
    return subprocess.run(["bash", "-euo", "pipefail", "-c", script], cwd=work, env=env, capture_output=True,
                          text=True, timeout=900)


def _docker_runs() -> bool:
    if shutil.which("docker") is None:
        return False
    return subprocess.run(["docker", "info"], capture_output=True, timeout=60).returncode == 0


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_the_documented_install_commands_run(tmp_path: Path):
    origin = _clone(tmp_path)
    ran = 0
    for number, block in enumerate(blocks(INSTALL)):
        if "docker " in block and not _docker_runs():
            continue  # the container block needs a Docker daemon; machines without one skip just this block
        done = _run_block(block, origin, tmp_path, str(number))
        assert done.returncode == 0, f"{block}\n{done.stdout}\n{done.stderr}"
        assert f"dralint {__version__}" in done.stdout or "no problems found" in done.stdout, done.stdout
        ran += 1
    assert ran >= 3


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_the_readme_quick_start_lints_the_examples(tmp_path: Path):
    (first, _tests) = blocks(README)[0].strip().splitlines()
    assert first == "pip install . && dralint examples/"
    origin = _clone(tmp_path)
    done = _run_block(f"# in a checkout\n{first} --format json > report.json || echo \"exit $?\"", origin, tmp_path,
                      "quick-start")
    assert done.returncode == 0 and done.stdout.strip().endswith("exit 1"), done.stdout + done.stderr
    import json

    report = json.loads((tmp_path / "work-quick-start" / "report.json").read_text())
    files = {Path(f["file"]).parent.as_posix() for f in report["findings"]}
    assert files == {"examples/mistakes"}

