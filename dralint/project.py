"""Where the project lives and which release this is: links are made here, from one setting.

The setting is ``Repository`` under ``[project.urls]`` in pyproject.toml (installed, it is the
package's ``Project-URL`` metadata). Rule links (SARIF ``helpUri``, ``--explain``'s "More:")
point at ``docs/rules.md#draNNN`` of the release tag ``v<version>`` in that repository, so they
show the rules of the installed release. Releases are tagged by ``scripts/tag_release.py``.
"""
from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from . import __version__

DISTRIBUTION = "dralint"
URL_LABEL = "Repository"
_PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"


@lru_cache(maxsize=1)
def repository() -> str:
    """The repository URL from the package metadata, or from pyproject.toml in a checkout that
    is not installed; "" when neither says."""
    import importlib.metadata   # 25 ms of imports, paid by the runs that make a link
    import tomllib

    try:
        entries = importlib.metadata.metadata(DISTRIBUTION).get_all("Project-URL") or []
    except importlib.metadata.PackageNotFoundError:
        entries = []
    for entry in entries:
        label, _, url = entry.partition(",")
        if label.strip() == URL_LABEL and url.strip():
            return url.strip().rstrip("/")
    try:
        urls = tomllib.loads(_PYPROJECT.read_text(encoding="utf-8"))["project"]["urls"]
        return str(urls[URL_LABEL]).rstrip("/")
    except (OSError, KeyError, TypeError, tomllib.TOMLDecodeError):
        return ""


def release_tag(version: str = __version__) -> str:
    """The git tag of a release: ``v`` and the version of pyproject.toml (``v0.5.0``)."""
    return f"v{version}"


def rules_doc_url() -> str:
    """docs/rules.md of this release in the repository (a relative path when no repository is set)."""
    home = repository()
    return f"{home}/blob/{release_tag()}/docs/rules.md" if home else "docs/rules.md"


def rule_doc_url(rule_id: str) -> str:
    """The rule's section of docs/rules.md: its heading ``### DRA201`` has the anchor ``#dra201``."""
    return f"{rules_doc_url()}#{rule_id.lower()}"
