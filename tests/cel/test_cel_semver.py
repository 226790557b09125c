"""Versions exactly as the Kubernetes semver CEL library reads them: dralint's Semver.parse and
parse_normalized against a reference written from blang/semver v4's ``Parse`` / ``NewPRVersion``
(``semver.go``) and apiserver's ``normalizeAndParse`` (``pkg/cel/library/semverlib.go``), on generated
text; error texts as those functions word them (``%q`` is Go's strconv.Quote).
"""
from __future__ import annotations

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from dralint.cel.strconv import quote
from dralint.cel.values import Semver, SemverError

NUMBERS = "0123456789"
ALPHANUM = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ-" + NUMBERS


class Refused(Exception):
    pass


def contains_only(s: str, allowed: str) -> bool:
    return all(c in allowed for c in s)


def has_leading_zeroes(s: str) -> bool:
    return len(s) > 1 and s[0] == "0"


def parse_uint(s: str) -> int:
    if not s or not s.isascii() or not s.isdigit() or int(s) > 2**64 - 1:
        raise Refused("strconv")
    return int(s)


def blang_parse(s: str) -> tuple:
    """``semver.Parse``: (major, minor, patch, prerelease, build)."""
    if not s:
        raise Refused("empty")
    parts = s.split(".", 2)
    if len(parts) != 3:
        raise Refused("no M.m.p")
    nums = []
    for part in parts[:2]:
        if not contains_only(part, NUMBERS) or has_leading_zeroes(part):
            raise Refused("number")
        nums.append(parse_uint(part))
    patch_str, build, pre = parts[2], [], []
    build_index = patch_str.find("+")
    if build_index != -1:
        build = patch_str[build_index + 1:].split(".")
        patch_str = patch_str[:build_index]
    pre_index = patch_str.find("-")
    if pre_index != -1:
        pre = patch_str[pre_index + 1:].split(".")
        patch_str = patch_str[:pre_index]
    if not contains_only(patch_str, NUMBERS) or has_leading_zeroes(patch_str):
        raise Refused("patch")
    patch = parse_uint(patch_str)
    pre_out: list = []
    for p in pre:
        if not p:
            raise Refused("empty prerelease")
        if contains_only(p, NUMBERS):
            if has_leading_zeroes(p):
                raise Refused("prerelease zeroes")
            pre_out.append(parse_uint(p))
        elif contains_only(p, ALPHANUM):
            pre_out.append(p)
        else:
            raise Refused("prerelease characters")
    for b in build:
        if not b or not contains_only(b, ALPHANUM):
            raise Refused("build")
    return nums[0], nums[1], patch, tuple(pre_out), tuple(build)


def k8s_normalize_and_parse(s: str) -> tuple:
    """apiserver's ``normalizeAndParse``: TrimPrefix "v", TrimLeft zeros per part, pad short forms."""
    if s.startswith("v"):
        s = s[1:]
    parts = s.split(".", 2)
    for i, p in enumerate(parts):
        if len(p) > 1:
            p = p.lstrip("0")
            if len(p) == 0 or p.encode()[0:1] not in [d.encode() for d in NUMBERS]:
                p = "0" + p
            parts[i] = p
    if len(parts) < 3:
        if any(c in parts[-1] for c in "+-"):
            raise Refused("short with pre/build")
        parts += ["0"] * (3 - len(parts))
    return blang_parse(".".join(parts))


def ours(parse):
    def run(text: str) -> tuple:
        try:
            v = parse(text)
        except SemverError:
            raise Refused("dralint") from None
        return v.major, v.minor, v.patch, v.pre, v.build
    return run


def outcome(parse, text: str):
    try:
        return parse(text)
    except Refused:
        return "refused"


component = st.one_of(st.sampled_from(["0", "00", "01", "1", "10", "18446744073709551615", "18446744073709551616",
                                       "", "x", "1a", "-", "٣", " 1"]),
                      st.integers(0, 999).map(str))
label = st.text(ALPHANUM + ".+_ é", max_size=6)
version_text = st.one_of(
    st.builds(lambda v, parts, pre, build: v + ".".join(parts) + pre + build,
              st.sampled_from(["", "", "v", "vv", "V"]), st.lists(component, min_size=1, max_size=4),
              st.one_of(st.just(""), label.map(lambda x: "-" + x)),
              st.one_of(st.just(""), label.map(lambda x: "+" + x))),
    st.text("0123456789.-+vabx", max_size=14),
)


@settings(max_examples=500, deadline=None)
@given(version_text)
@example("1.2.3")
@example("1.2.3-0.a.01")
@example("1.2.3+")
@example("1.2.3-")
@example("01.2.3")
@example("v1.2")
@example("v1.2-rc1")
@example("1.2.3-rc.1+build.5")
@example("18446744073709551616.0.0")
@example("0.0.0-00")
@example("v0001.002")
def test_every_version_parses_as_blang_and_apiserver_parse_it(text):
    assert outcome(ours(Semver.parse), text) == outcome(blang_parse, text)
    assert outcome(ours(Semver.parse_normalized), text) == outcome(k8s_normalize_and_parse, text)


@pytest.mark.slow
@settings(max_examples=20000, deadline=None)
@given(version_text)
def test_many_versions_parse_as_blang_parses_them(text):
    assert outcome(ours(Semver.parse), text) == outcome(blang_parse, text)
    assert outcome(ours(Semver.parse_normalized), text) == outcome(k8s_normalize_and_parse, text)


@pytest.mark.parametrize("text, message", [
    ("", "Version string empty"),
    ("1.2", "No Major.Minor.Patch elements found"),
    ('1"a.2.3', 'Invalid character(s) found in major number "1\\"a"'),
    ("1\t.2.3", 'Invalid character(s) found in major number "1\\t"'),
    ("01.2.3", 'Major number must not contain leading zeroes "01"'),
    ("1.02.3", 'Minor number must not contain leading zeroes "02"'),
    ("1.2.3x", 'Invalid character(s) found in patch number "3x"'),
    ("1.2.03", 'Patch number must not contain leading zeroes "03"'),
    ("1.2.3-01", 'Numeric PreRelease version must not contain leading zeroes "01"'),
    ("1.2.3-a_b", 'Invalid character(s) found in prerelease "a_b"'),
    ("1.2.3-", "Prerelease is empty"),
    ("1.2.3+", "Build meta data is empty"),
    ("1.2.3+é", 'Invalid character(s) found in build meta data "é"'),
    ("1..3", 'strconv.ParseUint: parsing "": invalid syntax'),
    ("18446744073709551616.0.0", 'strconv.ParseUint: parsing "18446744073709551616": value out of range'),
    ("1" * 5000 + ".0.0", 'strconv.ParseUint: parsing "' + "1" * 5000 + '": value out of range'),
])
def test_what_blang_refuses_in_its_words(text, message):
    with pytest.raises(SemverError) as info:
        Semver.parse(text)
    assert str(info.value) == message


def test_a_short_normalized_version_with_a_prerelease_is_refused_in_apiserver_words():
    with pytest.raises(SemverError, match="^short version cannot contain PreRelease/Build meta data$"):
        Semver.parse_normalized("v1.2-rc1")


@pytest.mark.parametrize("text, quoted", [
    ("a", '"a"'), ('"', '"\\""'), ("\\", '"\\\\"'), ("\x01", '"\\x01"'), ("\x7f", '"\\x7f"'), ("é", '"é"'),
    ("\u00a0", '"\\u00a0"'), ("\U0001f600", '"\U0001f600"'), ("\U000e0001", '"\\U000e0001"'), ("\n", '"\\n"'),
])
def test_quote_is_go_strconv_quote(text, quoted):
    assert quote(text) == quoted
