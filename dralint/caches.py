"""The engine's process-long memos of caller data, listed in one place, and how to empty them.

Every memo the engine keeps for the life of the process is one of two kinds. Either it is keyed by
what dralint ships (a release, a kind, a CEL library: a few entries whatever callers send), or it
holds what callers send (expressions, patterns, quantities, claim shapes, names), and then it is
bounded by an estimate of its bytes (``bounded_cache.py``) and named in :data:`CALLER_CACHES`. A
test finds every memo of the package and checks that it is in one list or the other; the audit,
with each memo's key, bound and budget, is ``docs/memory.md``.

The webhook empties these (:func:`drop_caches`) when a worker's memory passes its ceiling, before
it stops any review. Caches of one object (the feasibility fleet view's) have their own
``drop_caches`` methods: their owner knows when nobody is using them.
"""
from __future__ import annotations

import sys

# (module, attribute): each has ``cache_clear()``. Modules not imported yet hold nothing and are
# not imported to be emptied.
CALLER_CACHES: tuple[tuple[str, str], ...] = (
    ("dralint.cel.selector", "_compile_cached"),        # (expression, env) -> compiled program
    ("dralint.cel.lint", "_analyse"),                    # expression -> parse tree facts
    ("dralint.cel.regex", "_compile"),                   # RE2 pattern of matches()/find() -> program
    ("dralint.kube.quantity", "_parse"),                      # quantity text -> exact value
    ("dralint.feasibility.model", "_parsed_nanos"),      # quantity -> nano-units
    ("dralint.feasibility.model", "_read_alike"),        # a claim's devices part (without config) -> requests
    ("dralint.checks.formats", "_qualified_attribute_errors"),  # attribute name -> its errors
    ("dralint.source.fastpath", "_risky_number"),        # a YAML token -> read as a number?
    # The standard library's own: CEL's url() and isURL() split caller strings with it (128 entries).
    ("urllib.parse", "urlsplit"),
)


def drop_caches() -> int:
    """Empty every memo of :data:`CALLER_CACHES`; the bytes they held, as their weights estimate
    them (0 for the standard library's, which does not weigh its entries)."""
    freed = 0
    for module_name, attribute in CALLER_CACHES:
        module = sys.modules.get(module_name)
        if module is None:
            continue
        dropped = getattr(module, attribute).cache_clear()
        freed += dropped if isinstance(dropped, int) else 0
    return freed

