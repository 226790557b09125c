"""Find the data dralint ships (`schemas/`, `rules/`) in a checkout or in an installed wheel.

The wheel carries them as ``dralint/_data/<name>``; a checkout (or an editable install) has them
at the repository root, next to the package.
"""
from __future__ import annotations

from functools import lru_cache
from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent


@lru_cache(maxsize=8)
def data_path(name: str) -> Path:
    """Directory of the shipped data set ``name`` (``"schemas"`` or ``"rules"``)."""
    for candidate in (_PACKAGE / "_data" / name, _PACKAGE.parent / name):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(f"dralint data folder {name!r} is missing from the installation ({_PACKAGE})")
