"""The diff of ``migrate --diff`` and ``--fix --diff``: correct on any lines, linear on large files."""
from __future__ import annotations

import difflib

from hypothesis import given, settings
from hypothesis import strategies as st

from dralint.linediff import matching_blocks, unified_lines

_LINES = st.lists(st.sampled_from(["a\n", "b\n", "c\n", "key: 1\n", "\n", "x"]), max_size=40)


def _replayed(a: list[str], diff: list[str]) -> list[str]:
    """``a`` with the hunks of ``diff`` applied, checking every context and removed line."""
    out: list[str] = []
    done = 0
    for line in diff[2:]:
        if line.startswith("@@"):
            old = line.split()[1][1:].split(",")
            start = int(old[0]) - (0 if len(old) == 1 or old[1] != "0" else -1) - 1
            out += a[done:start]
            done = start
        elif line[0] in " -":
            assert a[done] == line[1:]
            done += 1
            if line[0] == " ":
                out.append(line[1:])
        else:
            out.append(line[1:])
    return out + a[done:]


@settings(max_examples=300, deadline=None)
@given(_LINES, _LINES)
def test_the_blocks_are_equal_runs_in_order(a, b):
    blocks = matching_blocks(a, b)
    assert blocks[-1] == (len(a), len(b), 0)
    previous = (0, 0)
    for i, j, n in blocks[:-1]:
        assert n > 0 and i >= previous[0] and j >= previous[1] and a[i:i + n] == b[j:j + n]
        previous = (i + n, j + n)


@settings(max_examples=300, deadline=None)
@given(_LINES, _LINES)
def test_the_diff_turns_one_text_into_the_other(a, b):
    diff = list(unified_lines(a, b, "f"))
    if a == b:
        assert diff == []
    else:
        assert diff[:2] == ["--- f\n", "+++ f\n"] and _replayed(a, diff) == b


def test_on_lines_that_occur_once_it_is_difflibs_diff():
    a = [f"line {n}\n" for n in range(200)]
    b = a[:50] + ["new\n"] + a[52:120] + a[121:] + ["end\n"]
    assert list(unified_lines(a, b, "f")) == list(difflib.unified_diff(a, b, "f", "f"))


def test_thousands_of_similar_objects_leave_only_small_gaps_to_compare(monkeypatch):
    # 20,000 lines, most repeated 2,000 times, where SequenceMatcher alone takes minutes: the
    # names anchor the diff, and what is compared pair by pair is the few lines between two names.
    a, b = [], []
    for n in range(2000):
        claim = [f"  name: claim-{n}\n", "spec:\n", "  devices:\n", "    requests:\n", "    - name: gpu\n"]
        a += claim + ["      count: 1\n"] + ["---\n"] * 4
        b += claim + ["      exactly:\n", "        count: 1\n"] + ["---\n"] * 4
    compared: list[tuple[int, int]] = []
    matcher = difflib.SequenceMatcher

    def recording(junk, x, y, autojunk):
        compared.append((len(x), len(y)))
        return matcher(junk, x, y, autojunk=autojunk)

    monkeypatch.setattr(difflib, "SequenceMatcher", recording)
    blocks = matching_blocks(a, b)
    assert len(blocks) == 2002 and max(x * y for x, y in compared) <= 2
    monkeypatch.undo()
    assert _replayed(a, list(unified_lines(a, b, "f"))) == b
