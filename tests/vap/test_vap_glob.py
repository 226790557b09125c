"""DeviceClass glob patterns as RE2 for CEL's ``matches``: the same verdict as the webhook's
``fnmatch.fnmatchcase``, checked through dralint's own CEL runtime."""
from __future__ import annotations

import fnmatch

from hypothesis import given, settings, strategies as st

from dralint.cel.declared import Declarations, compile_declared
from dralint.cel.env import CelEnv
from dralint.cel import types as T
from dralint_webhook.vap.expressions import literal
from dralint_webhook.vap.glob import regex_of

_DECLS = Declarations((("name", T.STRING), ("regex", T.STRING)))
_MATCHES = compile_declared("name.matches(regex)", CelEnv(kube_minor=30), _DECLS)
# The characters that mean something to fnmatch or RE2, and a few that do not.
ALPHABET = "ab-.*?[]!^\\$(){}|+ z"


def cel_matches(name: str, patterns: list[str]) -> bool:
    value, _ = _MATCHES.evaluate({"name": name, "regex": regex_of(patterns)}, 10**6)
    return value


@settings(max_examples=400, deadline=None)
@given(st.lists(st.text(ALPHABET, max_size=8), min_size=1, max_size=3), st.text(ALPHABET, max_size=8))
def test_a_pattern_list_matches_what_fnmatchcase_matches(patterns, name):
    assert cel_matches(name, patterns) == any(fnmatch.fnmatchcase(name, p) for p in patterns)


def test_the_usual_patterns_match_as_the_webhook_does():
    assert cel_matches("a100.gpu.example.com", ["*.gpu.example.com"])
    assert not cel_matches("gpu.example.com", ["*.gpu.example.com"])
    assert not cel_matches("gpuXexample.com", ["gpu.example.com"])   # '.' is a dot, not any character
    assert cel_matches("cpu-1.example.com", ["cpu-?.example.com"]) and not cel_matches("cpu-12.example.com",
                                                                                       ["cpu-?.example.com"])
    assert cel_matches("b.x", ["[a-c]*"]) and not cel_matches("b.x", ["[!a-c]*"])
    assert not cel_matches("z", ["[z-a]"])                            # a backwards range matches nothing
    assert cel_matches("[x", ["[x"])                                   # an unclosed '[' is itself


def test_a_cel_literal_reads_back_as_the_text():
    text = "it's a \\ back\nslash \u2603"
    program = compile_declared(literal(text), CelEnv(kube_minor=30), _DECLS)
    assert program.evaluate({}, 100)[0] == text
