"""Path globs as in ``.gitignore``: per-path ignores of the configuration and ``--exclude``."""
from __future__ import annotations

import functools
import re


@functools.lru_cache(maxsize=256)  # every path of a walk is matched against the same few patterns
def glob_regex(pattern: str) -> re.Pattern[str]:
    """Compile a path glob: ``*`` and ``?`` stay inside one folder, ``**`` crosses folders.

    A pattern naming a folder (``vendor/`` or ``vendor``) also matches everything below it; a
    pattern without ``/`` matches at any depth (``*.generated.yaml``) and a leading ``/`` anchors
    one to the config's folder, as in ``.gitignore``.
    """
    pattern = pattern.strip().removeprefix("./")
    anchored = "/" in pattern.rstrip("/")
    pattern = pattern.removeprefix("/")  # a leading / anchors to the config's folder, as in .gitignore
    out = [] if anchored else ["(?:.*/)?"]
    i = 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        elif pattern[i] == "[" and "]" in pattern[i + 2:]:
            end = pattern.index("]", i + 2)
            body = pattern[i + 1:end].replace("\\", "\\\\")
            out.append("[" + ("^" + body[1:] if body.startswith("!") else body) + "]")
            i = end + 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    body = "".join(out).rstrip("/")
    return re.compile(body + "(?:/.*)?")
