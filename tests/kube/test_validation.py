"""apimachinery's name validation as the API server words it: the checks and CEL's ``format`` library
read the same functions, so a qualified name gets the same messages from both."""
from __future__ import annotations

import pytest

from dralint.cel.lib_k8s import _validate
from dralint.kube.validation import (is_c_identifier, is_dns1123_label, is_dns1123_subdomain, is_qualified_name,
                                     is_valid_label_value, mask_trailing_dash, name_is_dns_label, regex_error)

NAME_PATTERN = ("name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
                "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
                "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')")


def test_regex_error_spaces_examples_as_go_does() -> None:
    assert regex_error("m", "x") == "m (regex used for validation is 'x')"
    assert regex_error("m", "x", "a", "b") == "m (e.g. 'a',  or 'b', regex used for validation is 'x')"


@pytest.mark.parametrize("value, expected", [
    ("example.com/my-key", []),
    ("my.key_1", []),
    # The server (1.36, oracle-api) reports an empty name part twice: empty, and not the pattern.
    ("example.com/", ["name part must be non-empty", NAME_PATTERN]),
    # An over-long name part that also breaks the pattern gets both messages, not just the length.
    ("a" * 63 + "-", ["name part must be no more than 63 characters", NAME_PATTERN]),
    ("bad key", [NAME_PATTERN]),
    # An empty prefix does not stop the name part's checks.
    ("/", ["prefix part must be non-empty", "name part must be non-empty", NAME_PATTERN]),
    ("/-x", ["prefix part must be non-empty", NAME_PATTERN]),
    ("Example.com/x", ["prefix part a lowercase RFC 1123 subdomain must consist of lower case alphanumeric "
                       "characters, '-' or '.', and must start and end with an alphanumeric character (e.g. "
                       "'example.com', regex used for validation is "
                       "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"]),
])
def test_qualified_name_as_apimachinery(value: str, expected: list[str]) -> None:
    assert is_qualified_name(value) == expected
    assert _validate("qualifiedName", value) == expected  # CEL's format.qualifiedName() says the same


def test_qualified_name_with_two_slashes() -> None:
    (msg,) = is_qualified_name("a/b/c")
    assert msg.startswith("a qualified name must consist of alphanumeric characters")
    assert msg.endswith("with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')")


def test_label_and_subdomain_messages_carry_examples_and_pattern() -> None:
    assert is_dns1123_label("my-name") == []
    assert is_dns1123_label("My_Name") == [
        "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and "
        "end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is "
        "'[a-z0-9]([-a-z0-9]*[a-z0-9])?')"]
    assert is_dns1123_subdomain("x" * 254)[0] == "must be no more than 253 characters"
    assert is_valid_label_value("") == []
    assert is_valid_label_value("-x") == [
        "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must "
        "start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used "
        "for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"]
    assert is_c_identifier("_ok1") == [] and len(is_c_identifier("1bad")) == 1
    assert _validate("dns1123Label", "My_Name") == is_dns1123_label("My_Name")
    assert _validate("labelValue", "-x") == is_valid_label_value("-x")


def test_generate_name_prefix_masks_as_go_does() -> None:
    # Go replaces the last two characters by one 'a', so a 64-character prefix ending in '-' passes
    # the 63-character limit, and the character before the dash is not judged.
    assert mask_trailing_dash("abc-") == "aba"
    assert mask_trailing_dash("-") == "-"
    assert name_is_dns_label("a" * 63 + "-", True) == []
    assert name_is_dns_label("x.-", True) == []
    assert _validate("dns1123LabelPrefix", "x.-") == []
    assert _validate("dns1123LabelPrefix", "a" * 64 + "-") == ["must be no more than 63 characters"]
