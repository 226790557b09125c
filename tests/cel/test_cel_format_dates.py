"""format.date() and format.datetime() as Kubernetes' format library validates: kube-openapi's strfmt
IsDate (Go's time.Parse of "2006-01-02") and IsDateTime (lower-cased, cut at "t", a pattern)."""
import pytest

from dralint.cel.lib_k8s import _validate


@pytest.mark.parametrize("text", [
    "2021-01-01T00:00:00Z", "2021-01-01t00:00:00z", "2020-02-29T23:59:59.5+01:00", "0000-01-01T00:00:00Z",
    "2021-01-01T00:00:00,5Z",      # the fraction's separator is any character
    "2021-01-01T00:00:00Zt9",      # only the text before the second "t" is looked at
])
def test_datetimes_strfmt_takes(text: str) -> None:
    assert _validate("datetime", text) == []


@pytest.mark.parametrize("text", [
    "2021-02-29T00:00:00Z", "2021-01-01T24:00:00Z", "2021-01-01T00:60:00Z", "2021-01-01T00:00:00Z\n",
    "2021-01-01", "2021-01-01T00:00:00", "2021-01-01T00:00:00+1:00", "21-01-01T00:00:00Z",
])
def test_datetimes_strfmt_refuses(text: str) -> None:
    assert _validate("datetime", text) == ["invalid datetime"]


@pytest.mark.parametrize(("text", "valid"), [
    ("2021-01-01", True), ("2020-02-29", True), ("0000-02-29", True), ("2021-02-29", False),
    ("2021-13-01", False), ("2021-00-10", False), ("2021-1-01", False), ("2021-01-01\n", False),
    ("2021-01-01T00:00:00Z", False),
])
def test_dates_as_go_time_parse_reads_them(text: str, valid: bool) -> None:
    assert (_validate("date", text) == []) is valid
