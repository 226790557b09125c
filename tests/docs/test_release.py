"""Releases and links: one version, one repository setting, tags ``v<version>``, rule anchors that exist."""
from __future__ import annotations

import io
import json
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import yaml

from dralint import __version__, project
from dralint.catalog import load_catalog
from dralint.cli import main

from conftest import REPO

PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
RULES_MD = (REPO / "docs" / "rules.md").read_text(encoding="utf-8")


def test_one_version_and_one_repository_setting():
    assert __version__ == PYPROJECT["version"]
    assert project.repository() == PYPROJECT["urls"]["Repository"]
    assert project.release_tag() == f"v{PYPROJECT['version']}"


def test_pre_commit_snippet_names_the_repository_and_the_release_tag():
    usage = (REPO / "docs" / "usage.md").read_text(encoding="utf-8")
    (snippet,) = [b for b in re.findall(r"```yaml\n(.*?)```", usage, flags=re.DOTALL) if "pre-commit-config" in b]
    (repo,) = yaml.safe_load(snippet)["repos"]
    assert repo["repo"] == project.repository() and repo["rev"] == project.release_tag()


def _github_anchor(heading: str) -> str:
    return re.sub(r"[^a-z0-9 _-]", "", heading.strip().lower()).replace(" ", "-")


def test_rule_links_point_at_anchors_that_exist_in_rules_md():
    anchors = {_github_anchor(h) for h in re.findall(r"^#+ (.*)$", RULES_MD, flags=re.MULTILINE)}
    out = io.StringIO()
    main(["--format", "sarif", "--no-config", str(REPO / "examples" / "driver")], stdout=out, stderr=io.StringIO())
    driver = json.loads(out.getvalue())["runs"][0]["tool"]["driver"]
    assert driver["informationUri"] == project.repository()
    base = f"{project.repository()}/blob/{project.release_tag()}/docs/rules.md#"
    for rule, descriptor in zip(load_catalog(), driver["rules"], strict=True):
        assert descriptor["helpUri"] == base + rule.id.lower()
        assert rule.id.lower() in anchors
    explained = io.StringIO()
    main(["--explain", "DRA201"], stdout=explained)
    assert explained.getvalue().rstrip().endswith(f"More: {base}dra201")


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True).stdout


@pytest.fixture
def release_repo(tmp_path: Path) -> Path:
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    repo = tmp_path / "repo"
    (repo / "dralint").mkdir(parents=True)
    shutil.copy(REPO / "pyproject.toml", repo / "pyproject.toml")
    shutil.copy(REPO / "dralint" / "__init__.py", repo / "dralint" / "__init__.py")
    _git(repo, "init", "-q")
    _git(repo, "add", ".")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-qm", "release")
    return repo


def _tag(repo: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(REPO / "scripts" / "tag_release.py"), "--repo", str(repo)],
                          capture_output=True, text=True, check=False,
                          env={"GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com", "PATH": "/usr/bin:/bin"})


def test_tag_release_tags_the_pyproject_version_once(release_repo: Path):
    made = _tag(release_repo)
    assert made.returncode == 0, made.stdout + made.stderr
    assert _git(release_repo, "tag", "-l").split() == [project.release_tag()]
    again = _tag(release_repo)
    assert again.returncode == 1 and "exists already" in again.stdout


def test_tag_release_refuses_versions_that_disagree(release_repo: Path):
    init = release_repo / "dralint" / "__init__.py"
    init.write_text(init.read_text().replace(__version__, "9.9.9"))
    _git(release_repo, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-qam", "drift")
    refused = _tag(release_repo)
    assert refused.returncode == 1 and "9.9.9" in refused.stdout
    assert _git(release_repo, "tag", "-l") == ""


def test_the_image_tag_is_the_version_everywhere_it_is_named():
    named = [REPO / "webhook" / "deploy" / "base" / "deployment.yaml", REPO / "webhook" / "README.md",
             REPO / "webhook" / "Dockerfile", REPO / "docs" / "install.md"]
    tags = {(p.name, t) for p in named for t in re.findall(r"dralint-webhook:([\w.\-]+)", p.read_text(encoding="utf-8"))}
    assert tags and {t for _, t in tags} == {PYPROJECT["version"]}, sorted(tags)
