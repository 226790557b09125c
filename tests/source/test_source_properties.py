"""Generated input: values round-trip as Kubernetes reads them, the fast reader agrees with the
exact one, and nothing (mutated manifests, random text or bytes) ever raises."""
from __future__ import annotations

import json
import random
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from dralint.source import fastpath, load_text
from dralint.source.composer import DocumentComposer
from dralint.source.loader import first_content_line
from dralint.source.scalars import ScalarError, key_to_string, resolve_plain, to_json_value
from dralint.source.splitter import split_chunks

SHARED = Path(__file__).resolve().parents[3] / "shared"
REPO = Path(__file__).resolve().parents[2]
SEEDS = sorted((SHARED / "realworld").rglob("*.yaml")) if (SHARED / "realworld").is_dir() else []
SEEDS += sorted((REPO / "examples").rglob("*.yaml"))
SEED_TEXTS = [p.read_text(encoding="utf-8") for p in SEEDS[:400]] or [
    "apiVersion: resource.k8s.io/v1\nkind: DeviceClass\nmetadata:\n  name: x\n"
    "spec:\n  selectors:\n  - cel:\n      expression: device.driver == \"x\"\n"]
# libyaml's parser, as goyaml.v2 (a port of it) parses; PyYAML's pure-Python one differs on tabs.
LIBYAML = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
SCALAR_ALPHABET = "0123456789+-._xXoObBeE yYnN~:trueTRUEfalsFALSNullNUL<>!&*'\"#[]{},|\\\t\n"
YAML_ALPHABET = SCALAR_ALPHABET + "abc -:\n  "

json_scalars = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.text(max_size=20), st.sampled_from(["yes", "y", "n", "on", "off", "~", "1e3", "0x1F", "017", "1:20",
                                           "2001-12-14", ".inf", "-", "- x", "a: b", "#c", "'q'", '"d"', ""]),
)
json_values = st.recursive(
    json_scalars,
    lambda children: st.one_of(st.lists(children, max_size=5),
                               st.dictionaries(st.text(max_size=10), children, max_size=5)),
    max_leaves=25,
)
FAST = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
SLOW = settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def kubernetes_oracle(text: str) -> list[Any]:
    """PyYAML's composer (an independent one) with Kubernetes' scalar rules on top."""
    def convert(node: yaml.Node) -> Any:
        if isinstance(node, yaml.ScalarNode):
            return to_json_value(resolve_plain(node.value)) if node.style in (None, "") else node.value
        if isinstance(node, yaml.SequenceNode):
            return [convert(item) for item in node.value]
        return {key_to_string(resolve_plain(k.value) if k.style in (None, "") else k.value): convert(v)
                for k, v in node.value}
    return [value for value in (convert(n) for n in yaml.compose_all(text, Loader=LIBYAML))
            if value is not None]


def check_roundtrip(value: Any, flow: bool) -> None:
    text = yaml.safe_dump(value, default_flow_style=flow, allow_unicode=True)
    try:
        expected = kubernetes_oracle(text)
    except ScalarError:
        assert any(p.kind == "syntax" for p in load_text(text, "gen.yaml").problems)
        return
    loaded = load_text(text, "gen.yaml")
    duplicate = any(p.kind == "duplicate-key" for p in loaded.problems)
    assert [d.value for d in loaded.documents] == expected or duplicate, text
    if not duplicate:
        assert loaded.problems == []


@FAST
@given(json_values, st.booleans())
def test_dumped_values_read_as_kubernetes_reads_them(value: Any, flow: bool) -> None:
    check_roundtrip(value, flow)


@FAST
@given(st.text(alphabet=SCALAR_ALPHABET, max_size=12))
def test_random_plain_scalars(token: str) -> None:
    check_scalar(token)


def check_scalar(token: str) -> None:
    text = f"v: {token}\n"
    loaded = load_text(text, "s.yaml")
    try:
        nodes = list(yaml.compose_all(text, Loader=LIBYAML))
    except yaml.YAMLError:
        assert loaded.documents == [] or loaded.problems, text
        return
    node = nodes[0].value[0][1] if nodes and isinstance(nodes[0], yaml.MappingNode) and nodes[0].value else None
    if not isinstance(node, yaml.ScalarNode) or node.tag not in (None, "") and node.tag.startswith("!") is False:
        return
    if node.style in (None, "") and node.tag.startswith("tag:yaml.org,2002:"):
        try:
            expected = to_json_value(resolve_plain(node.value))
        except ScalarError:
            assert [p.kind for p in loaded.problems] == ["syntax"]
            return
        assert loaded.documents[0].value == {"v": expected}, text
        assert type(loaded.documents[0].value["v"]) is type(expected)


def assert_fast_agrees(text: str) -> None:
    composer = DocumentComposer()
    for chunk in split_chunks(text):
        values = fastpath.fast_values(chunk.body)
        if values is None:
            continue
        documents, error = composer.compose(chunk.body)
        assert error is None, (chunk.body, error)
        assert not any(d.problems for d in documents), chunk.body
        assert [v for v in values if v is not None] == [d.value for d in documents if d.value is not None], chunk.body
        lines = {d.line + chunk.line_offset + 1 for d in documents if d.value is not None}
        assert lines <= {first_content_line(chunk)}, chunk.body


def mutate(text: str, rnd: random.Random) -> str:
    for _ in range(rnd.randint(1, 4)):
        at = rnd.randrange(len(text) + 1)
        choice = rnd.random()
        if choice < 0.3:
            text = text[:at] + "".join(rnd.choice(YAML_ALPHABET) for _ in range(rnd.randint(1, 6))) + text[at:]
        elif choice < 0.55:
            text = text[:at] + text[at + rnd.randint(1, 20):]
        elif choice < 0.75:
            lines = text.split("\n")
            i = rnd.randrange(len(lines))
            lines.insert(rnd.randrange(len(lines) + 1), lines[i])
            text = "\n".join(lines)
        else:
            lines = text.split("\n")
            i = rnd.randrange(len(lines))
            lines[i] = " " * rnd.randint(0, 4) + lines[i].lstrip()
            text = "\n".join(lines)
    return text


def check_never_raises(text: str | bytes) -> None:
    loaded = load_text(text, "fuzz.yaml")
    decoded = text.decode("utf-8", "replace") if isinstance(text, bytes) else text
    # libyaml counts every YAML 1.1 line break, not only "\n".
    lines = len(re.split("\r\n|[\r\n\x85\u2028\u2029]", decoded))
    for problem in loaded.problems:
        assert 0 <= problem.line <= lines + 1 and problem.column >= 0 and problem.message
    for document in loaded.documents:
        json.dumps(document.value)
        assert 1 <= document.line <= lines


@FAST
@given(st.integers(min_value=0, max_value=2**32), st.sampled_from(range(len(SEED_TEXTS))))
def test_mutated_manifests(seed: int, which: int) -> None:
    text = mutate(SEED_TEXTS[which], random.Random(seed))
    check_never_raises(text)
    assert_fast_agrees(text)


@FAST
@given(st.text(alphabet=YAML_ALPHABET, max_size=80))
@example("{}!")  # a tag after a root flow collection: rapidyaml read "", libyaml refuses it
def test_random_yaml_like_text(text: str) -> None:
    check_never_raises(text)
    assert_fast_agrees(text)


@FAST
@given(st.lists(st.one_of(st.characters(), st.sampled_from(list(YAML_ALPHABET)),
                          st.sampled_from(["\ud800", "\udfff", "\x85", "\u2028", "\ufeff", "\x00", "\r"])),
                max_size=40).map("".join))
def test_random_unicode_text(text: str) -> None:
    check_never_raises(text)


@FAST
@given(st.binary(max_size=200))
def test_random_bytes(data: bytes) -> None:
    check_never_raises(data)


@pytest.mark.slow
@SLOW
@given(json_values, st.booleans())
def test_slow_dumped_values(value: Any, flow: bool) -> None:
    check_roundtrip(value, flow)


@pytest.mark.slow
@SLOW
@given(st.integers(min_value=0, max_value=2**32), st.sampled_from(range(len(SEED_TEXTS))))
def test_slow_mutated_manifests(seed: int, which: int) -> None:
    text = mutate(SEED_TEXTS[which], random.Random(seed))
    check_never_raises(text)
    assert_fast_agrees(text)


@pytest.mark.slow
@SLOW
@given(st.text(alphabet=SCALAR_ALPHABET, max_size=12))
def test_slow_random_plain_scalars(token: str) -> None:
    check_scalar(token)


@pytest.mark.slow
@SLOW
@given(st.one_of(st.text(alphabet=YAML_ALPHABET, max_size=200), st.binary(max_size=300)))
def test_slow_random_text_and_bytes(text: str | bytes) -> None:
    check_never_raises(text)
    if isinstance(text, str):
        assert_fast_agrees(text)


def _node_start_indicators(body: str, pattern: re.Pattern[str]) -> list[int]:
    """The indicators ``_plain_enough`` looks at closely: not mid-word, not after a word."""
    found = []
    for match in pattern.finditer(body):
        at = match.start()
        if at and body[at - 1] not in fastpath._NODE_START_BEFORE:
            continue
        before = at - 1
        while before >= body.rfind("\n", 0, at) + 1 and body[before] in " \t":
            before -= 1
        if before >= body.rfind("\n", 0, at) + 1 and body[before] not in "-?:,[{":
            continue
        found.append(at)
    return found


@settings(max_examples=3000, deadline=None)
@given(st.text(alphabet=" \t\n-?:,[{}]&*!@`%|>ab#'\"", max_size=40))
def test_indicator_prefilter_drops_only_what_the_close_look_would(body: str) -> None:
    every_indicator = re.compile(r"[&*!@`%\]},|>]")
    assert (_node_start_indicators(body, fastpath._INDICATOR_CANDIDATE)
            == _node_start_indicators(body, every_indicator))


@pytest.mark.parametrize("text", [">\n 0", "|\n a", "a: |\n  x\nb: >\n  y"])
def test_block_scalar_at_the_end_without_a_line_break(text: str) -> None:
    # rapidyaml ends such a scalar with a line break that libyaml's clipping leaves out.
    assert_fast_agrees(text)


@pytest.mark.parametrize("text", [
    "m:\n  f:\n  f: [x]\n  g: ':h'\n",
    "- f:\n  f: [x]\n- :h: 2\n",
])
def test_a_duplicate_key_beside_a_string_starting_with_a_colon_goes_to_the_exact_reader(text: str) -> None:
    # Found by test_block_positions' mutations: such a string read as one more key to the key count,
    # which then missed the key the duplicate collapsed.
    assert fastpath.fast_values(text) is None


@pytest.mark.parametrize("text", [
    "# a GPU on the same root\nkind: ResourceClaim\nspec:\n  count: 2\n",
    "kind: X  # yes, no, on, off\nreplicas: 3\nport: 8080\n",
    "# y\nitems: [1, 2, -3]\n",
])
def test_plain_integers_beside_a_yaml11_word_in_a_comment_keep_the_fast_reader(text: str) -> None:
    """A word like "on" in a comment sends the text to the precise look, which must not refuse
    the integers its quick look accepted (every commented example fell to the exact reader)."""
    assert fastpath.fast_values(text) is not None
    assert_fast_agrees(text)


@pytest.mark.parametrize("text", ["# on\ncount: 0x10\n", "# no\nv: 1e3\n", "# on\nv: 012\n", "# y\nv: 1_000\n"])
def test_numbers_kubernetes_reads_otherwise_still_go_to_the_exact_reader(text: str) -> None:
    assert fastpath.fast_values(text) is None
