"""Bad input: each kind of problem, with its line, and the other files and documents still load."""
from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from dralint.source import discover, load_file, load_text
from dralint.source.limits import MAX_DEPTH, MAX_FILE_BYTES

GOOD = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ok\n"


def kinds(loaded) -> list[tuple[str, int]]:
    return [(p.kind, p.line) for p in loaded.problems]


def test_missing_file_and_directory_are_unreadable(tmp_path: Path) -> None:
    missing = load_file(str(tmp_path / "nope.yaml"))
    assert kinds(missing) == [("unreadable", 1)]
    assert "no such file" in missing.problems[0].message
    assert load_file("bad\x00name.yaml").problems[0].kind == "unreadable"
    assert discover(["bad\x00name.yaml", ""])[1][0].kind == "unreadable"
    folder = load_file(str(tmp_path))
    assert folder.problems[0].kind == "unreadable" and "directory" in folder.problems[0].message


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads any file")
def test_permission_denied(tmp_path: Path) -> None:
    path = tmp_path / "secret.yaml"
    path.write_text(GOOD)
    path.chmod(0)
    assert load_file(str(path)).problems[0].kind == "unreadable"


def test_discover_reports_missing_paths_and_walks_folders(tmp_path: Path) -> None:
    (tmp_path / "b").mkdir()
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "x.yaml").write_text(GOOD)
    for name in ("b/z.yml", "a.yaml", "c.json", "notes.txt", ".hidden.yaml"):
        (tmp_path / name).write_text(GOOD)
    files, problems = discover([str(tmp_path), "-", str(tmp_path / "gone.yaml"), str(tmp_path / "notes.txt")])
    assert files == [str(tmp_path / "a.yaml"), str(tmp_path / "b" / "z.yml"), str(tmp_path / "c.json"), "-",
                     str(tmp_path / "notes.txt")]
    assert [(p.kind, p.file) for p in problems] == [("unreadable", str(tmp_path / "gone.yaml"))]


def test_binary_files(tmp_path: Path) -> None:
    nul = load_text(b"a: 1\nb: \x00\x01\n", "nul.yaml")
    assert kinds(nul) == [("binary", 2)]
    latin = load_text("a: 1\nb: caf\xe9\n".encode("latin-1"), "latin.yaml")
    assert kinds(latin) == [("binary", 2)] and latin.problems[0].column == 7
    png = tmp_path / "image.yaml"
    png.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    assert load_file(str(png)).problems[0].kind == "binary"


def test_text_with_lone_surrogates_is_binary() -> None:
    loaded = load_text("a: 1\nb: \ud800\n", "surrogate.yaml")
    assert kinds(loaded) == [("binary", 2)]


def test_utf16_and_bom_are_text() -> None:
    assert load_text(("\ufeff" + GOOD).encode("utf-16"), "u16.yaml").documents[0].value["kind"] == "ConfigMap"
    assert load_text(b"\xef\xbb\xbf" + GOOD.encode(), "bom.yaml").documents[0].value["kind"] == "ConfigMap"


def test_syntax_error_keeps_the_other_documents() -> None:
    text = GOOD + "---\nkind: Broken\nmetadata: {name: [unclosed\n---\n" + GOOD + "---\nkey: value: other\n"
    loaded = load_text(text, "multi.yaml")
    assert [d.index for d in loaded.documents] == [0, 2]
    assert [(p.kind, p.line, p.column, p.document) for p in loaded.problems] == [
        ("syntax", 8, 1, 1), ("syntax", 14, 11, 3)]
    assert loaded.problems[1].message == "invalid YAML: mapping values are not allowed in this context"


def test_duplicate_key_reports_the_repeated_key_and_keeps_the_last_value() -> None:
    loaded = load_text("metadata:\n  name: a\n  labels: {x: 1}\n  name: b\n", "dup.yaml")
    assert loaded.documents[0].value["metadata"]["name"] == "b"
    (problem,) = loaded.problems
    assert (problem.kind, problem.line, problem.column, str(problem.path)) == ("duplicate-key", 4, 3, "metadata.name")
    assert "line 2" in problem.message


def test_too_large_is_refused_without_reading_it_all(tmp_path: Path) -> None:
    path = tmp_path / "huge.yaml"
    with path.open("wb") as handle:
        handle.truncate(50 * 1024 * 1024)  # sparse: 50 MB of NULs without writing them
    loaded = load_file(str(path))
    assert kinds(loaded) == [("too-large", 1)]
    assert load_text("a: 1\n" * (MAX_FILE_BYTES // 5 + 1), "big.yaml").problems[0].kind == "too-large"


def test_ten_thousand_documents() -> None:
    text = "".join(f"---\nkind: ConfigMap\nmetadata: {{name: n{i}}}\n" for i in range(10_000))
    loaded = load_text(text, "many.yaml")
    assert len(loaded.documents) == 10_000 and loaded.problems == []
    assert loaded.documents[-1].line == 29_999 and loaded.documents[-1].index == 9_999


@pytest.mark.parametrize("text", [
    "[" * 10_000 + "]" * 10_000 + "\n",
    "{a: " * 10_000 + "}" * 10_000 + "\n",
    "- " * 10_000 + "x\n",
    # Block nesting costs its indentation in bytes: 1,000 levels is already 0.5 MB.
    "".join(" " * i + "a:\n" for i in range(1_000)) + " " * 1_000 + "x\n",
], ids=["flow-sequences", "flow-mappings", "compact-sequences", "block-mappings"])
def test_deep_nesting_is_too_deep_not_a_crash(text: str) -> None:
    loaded = load_text(GOOD + "---\n" + text + "---\n" + GOOD, "deep.yaml")
    assert [d.index for d in loaded.documents] == [0, 2]
    (problem,) = loaded.problems
    assert (problem.kind, problem.document) == ("too-deep", 1)
    assert problem.line == (6 + MAX_DEPTH if text.startswith("a:") else 6)


def test_depth_limit_is_exact() -> None:
    ok = load_text("[" * MAX_DEPTH + "]" * MAX_DEPTH, "ok.yaml")
    assert ok.problems == [] and len(ok.documents) == 1
    deep = load_text("[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1), "deep.yaml")
    assert kinds(deep) == [("too-deep", 1)] and deep.problems[0].column == MAX_DEPTH + 1


def test_depth_through_aliases() -> None:
    nested = "[" * 60 + "]" * 60
    text = f"a: &a {nested}\nb: " + "[" * 50 + "*a" + "]" * 50 + "\n"
    assert load_text(text, "alias-deep.yaml").problems[0].kind == "too-deep"


def test_billion_laughs_is_an_alias_limit() -> None:
    lines = ['a0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for i in range(1, 10):
        lines.append(f"a{i}: &a{i} [" + ",".join([f"*a{i - 1}"] * 9) + "]")
    loaded = load_text("\n".join(lines) + "\n---\n" + GOOD, "lol.yaml")
    (problem,) = loaded.problems
    # goyaml.v2's ratio rule stops it early, at the fourth level (a3).
    assert (problem.kind, problem.document, problem.line) == ("alias-limit", 0, 4)
    assert [d.index for d in loaded.documents] == [1]


def test_moderate_alias_use_is_fine() -> None:
    text = "base: &b {x: 1}\n" + "".join(f"k{i}: *b\n" for i in range(500))
    loaded = load_text(text, "ok.yaml")
    assert loaded.problems == [] and len(loaded.documents[0].value) == 501


def test_stdin(monkeypatch: pytest.MonkeyPatch) -> None:
    import io

    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(GOOD.encode())))
    loaded = load_file("-")
    assert loaded.name == "<stdin>" and loaded.documents[0].file == "<stdin>"


def test_empty_documents_are_skipped() -> None:
    loaded = load_text("# only a comment\n---\n---\n# more\n---\n" + GOOD + "---\n", "e.yaml")
    assert [(d.index, d.line) for d in loaded.documents] == [(0, 6)] and loaded.problems == []
    assert load_text("", "empty.yaml").documents == []


def test_one_bad_file_does_not_stop_the_others(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text("a: [\n")
    (tmp_path / "b.yaml").write_text(GOOD)
    files, _ = discover([str(tmp_path)])
    loaded = [load_file(f) for f in files]
    assert [len(f.documents) for f in loaded] == [0, 1] and loaded[0].problems[0].kind == "syntax"


def test_parse_errors_print_nothing(capfd: pytest.CaptureFixture[str]) -> None:
    # rapidyaml writes its own errors to the C stderr; the reader must keep them out.
    loaded = load_text("a: [1,\nb: c\n---\n- x\n y: 1\n", "noisy.yaml")
    assert [(p.kind, p.document) for p in loaded.problems] == [("syntax", 0), ("syntax", 1)]
    captured = capfd.readouterr()
    assert captured.out == "" and captured.err == ""
