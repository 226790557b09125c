"""apimachinery's name and value validation (``k8s.io/apimachinery/pkg/util/validation`` and the name
functions of ``pkg/api/validation``), once, for the checks and for CEL's ``format`` library.

Each ``is_*`` function returns the messages apimachinery would give, word for word (empty = valid),
as Go's functions do; names are Go's in snake case. Only what the DRA kinds and the CEL library use
is here.
"""
from __future__ import annotations

import re

DNS1123_LABEL_MAX_LENGTH = 63
DNS1123_SUBDOMAIN_MAX_LENGTH = 253
DNS1035_LABEL_MAX_LENGTH = 63
QUALIFIED_NAME_MAX_LENGTH = 63
LABEL_VALUE_MAX_LENGTH = 63

_DNS1123_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_SUBDOMAIN_FMT = _DNS1123_LABEL_FMT + "(\\." + _DNS1123_LABEL_FMT + ")*"
_DNS1035_LABEL_FMT = "[a-z]([-a-z0-9]*[a-z0-9])?"
_QUALIFIED_NAME_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_LABEL_VALUE_FMT = "(" + _QUALIFIED_NAME_FMT + ")?"
_C_IDENTIFIER_FMT = "[A-Za-z_][A-Za-z0-9_]*"

DNS1123_LABEL_REGEXP = re.compile(f"^{_DNS1123_LABEL_FMT}$")
DNS1123_SUBDOMAIN_REGEXP = re.compile(f"^{_DNS1123_SUBDOMAIN_FMT}$")
_DNS1035_LABEL_REGEXP = re.compile(f"^{_DNS1035_LABEL_FMT}$")
_QUALIFIED_NAME_REGEXP = re.compile(f"^{_QUALIFIED_NAME_FMT}$")
_LABEL_VALUE_REGEXP = re.compile(f"^{_LABEL_VALUE_FMT}$")
_C_IDENTIFIER_REGEXP = re.compile(f"^{_C_IDENTIFIER_FMT}$")

_QUALIFIED_NAME_ERR_MSG = ("must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
                           "alphanumeric character")


def regex_error(msg: str, fmt: str, *examples: str) -> str:
    """apimachinery ``RegexError``: the message, its examples and the pattern (the examples' odd
    ``',  or '`` spacing is Go's)."""
    if not examples:
        return f"{msg} (regex used for validation is '{fmt}')"
    return msg + " (e.g. " + " or ".join(f"'{e}', " for e in examples) + f"regex used for validation is '{fmt}')"


def max_len_error(length: int) -> str:
    """apimachinery ``MaxLenError``."""
    return f"must be no more than {length} characters"


def empty_error() -> str:
    """apimachinery ``EmptyError``."""
    return "must be non-empty"


DNS1123_SUBDOMAIN_INVALID = regex_error(
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start "
    "and end with an alphanumeric character", _DNS1123_SUBDOMAIN_FMT, "example.com")
_DNS1123_LABEL_INVALID = regex_error(
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end "
    "with an alphanumeric character", _DNS1123_LABEL_FMT, "my-name", "123-abc")
_DNS1035_LABEL_INVALID = regex_error(
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic "
    "character, and end with an alphanumeric character", _DNS1035_LABEL_FMT, "my-name", "abc-123")
_LABEL_VALUE_INVALID = regex_error(
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start "
    "and end with an alphanumeric character", _LABEL_VALUE_FMT, "MyValue", "my_value", "12345")
_QUALIFIED_NAME_INVALID = regex_error(_QUALIFIED_NAME_ERR_MSG, _QUALIFIED_NAME_FMT, "MyName", "my.name", "123-abc")
_C_IDENTIFIER_INVALID = regex_error(
    "a valid C identifier must start with alphabetic character or '_', followed by a string of alphanumeric "
    "characters or '_'", _C_IDENTIFIER_FMT, "my_name", "MY_NAME", "MyName")


def is_dns1123_label(value: str) -> list[str]:
    """``IsDNS1123Label``: at most 63 characters of ``[a-z0-9-]``, alphanumeric at both ends."""
    errs = []
    if len(value) > DNS1123_LABEL_MAX_LENGTH:
        errs.append(max_len_error(DNS1123_LABEL_MAX_LENGTH))
    if not DNS1123_LABEL_REGEXP.match(value):
        errs.append(_DNS1123_LABEL_INVALID)
    return errs


def is_dns1123_subdomain(value: str) -> list[str]:
    """``IsDNS1123Subdomain``: at most 253 characters of dot-separated DNS-1123 labels."""
    errs = []
    if len(value) > DNS1123_SUBDOMAIN_MAX_LENGTH:
        errs.append(max_len_error(DNS1123_SUBDOMAIN_MAX_LENGTH))
    if not DNS1123_SUBDOMAIN_REGEXP.match(value):
        errs.append(DNS1123_SUBDOMAIN_INVALID)
    return errs


def is_dns1035_label(value: str) -> list[str]:
    """``IsDNS1035Label``: a DNS-1123 label that starts with a letter."""
    errs = []
    if len(value) > DNS1035_LABEL_MAX_LENGTH:
        errs.append(max_len_error(DNS1035_LABEL_MAX_LENGTH))
    if not _DNS1035_LABEL_REGEXP.match(value):
        errs.append(_DNS1035_LABEL_INVALID)
    return errs


def is_valid_label_value(value: str) -> list[str]:
    """``IsValidLabelValue``: empty, or at most 63 characters of ``[A-Za-z0-9-_.]``, alphanumeric at both ends."""
    errs = []
    if len(value) > LABEL_VALUE_MAX_LENGTH:
        errs.append(max_len_error(LABEL_VALUE_MAX_LENGTH))
    if not _LABEL_VALUE_REGEXP.match(value):
        errs.append(_LABEL_VALUE_INVALID)
    return errs


def is_qualified_name(value: str) -> list[str]:
    """``IsQualifiedName`` (a label or annotation key): ``[prefix/]name``, the prefix a DNS subdomain.

    As in Go, an empty prefix does not stop the name part's checks, and the name part's pattern is
    checked whatever its length (so an empty or over-long bad name gets two messages).
    """
    parts = value.split("/")
    errs: list[str] = []
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            errs.append("prefix part " + empty_error())
        else:
            errs += ["prefix part " + msg for msg in is_dns1123_subdomain(prefix)]
    else:
        return ["a qualified name " + _QUALIFIED_NAME_INVALID
                + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"]
    if not name:
        errs.append("name part " + empty_error())
    elif len(name) > QUALIFIED_NAME_MAX_LENGTH:
        errs.append("name part " + max_len_error(QUALIFIED_NAME_MAX_LENGTH))
    if not _QUALIFIED_NAME_REGEXP.match(name):
        errs.append("name part " + _QUALIFIED_NAME_INVALID)
    return errs


def is_c_identifier(value: str) -> list[str]:
    """``IsCIdentifier``: the format of a C identifier; the length is the caller's."""
    return [] if _C_IDENTIFIER_REGEXP.match(value) else [_C_IDENTIFIER_INVALID]


def mask_trailing_dash(name: str) -> str:
    """``maskTrailingDash``: a generated name continues after a prefix's final '-'. Go replaces the last
    two characters by one 'a' (not just the dash), which changes what the length check sees."""
    return name[:-2] + "a" if len(name) > 1 and name.endswith("-") else name


def name_is_dns_label(name: str, prefix: bool) -> list[str]:
    """``NameIsDNSLabel``: a DNS-1123 label, or a ``generateName`` prefix of one."""
    return is_dns1123_label(mask_trailing_dash(name) if prefix else name)


def name_is_dns_subdomain(name: str, prefix: bool) -> list[str]:
    """``NameIsDNSSubdomain``: a DNS-1123 subdomain, or a ``generateName`` prefix of one."""
    return is_dns1123_subdomain(mask_trailing_dash(name) if prefix else name)


def name_is_dns1035_label(name: str, prefix: bool) -> list[str]:
    """``NameIsDNS1035Label``: a DNS-1035 label, or a ``generateName`` prefix of one."""
    return is_dns1035_label(mask_trailing_dash(name) if prefix else name)
