"""The Codex text readers' shortcuts say what the long way says: a call's arguments
that hold no object, a patch's file lines found unanchored, an output with no exit code."""

from __future__ import annotations

import random
import re

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from huddle.model.doing import input_summary
from huddle.sources.codex import records as rec
from huddle.sources.codex import results, text

_ANCHORED = re.compile(r"^\*\*\* (Add|Update|Delete) File: (.+)$", re.M)


def _patch_files_anchored(patch: str) -> list[str]:
    return [f"{text._LETTER[m.group(1)]} {m.group(2).strip()}" for m in _ANCHORED.finditer(patch)]


def test_patch_files_finds_what_an_anchored_search_finds():
    atoms = ["*** Add File: a.py", "*** Update File: b", "*** Delete File: ", "\n", "\r\n", " ", "x", "*** ", " File: "]
    rnd = random.Random(7)
    for _ in range(20000):
        patch = "".join(rnd.choice(atoms) for _ in range(rnd.randint(0, 10)))
        assert text.patch_files(patch) == _patch_files_anchored(patch), repr(patch)
    assert text.patch_files("x *** Add File: no\n*** Add File: yes") == ["A yes"]


@pytest.mark.parametrize(
    "value",
    [
        '"[REDACTED_ARGUMENTS len=83 sha=b4e1e5f7]"',
        '"  {\\"cmd\\": \\"ls\\"}"',
        '"\\n{}"',
        '"[1]"',
        '"{bad"',
        '""',
        "{}",
    ],
)
def test_arguments_without_an_object_are_none(value):
    raw = msgspec.Raw(value.encode())
    val = msgspec.json.decode(value)
    if isinstance(val, str):
        try:
            val = msgspec.json.decode(val)
        except msgspec.DecodeError:
            val = {}
    assert rec.arguments(raw) == (val if isinstance(val, dict) else {})


def test_arguments_of_any_string_are_what_decoding_it_says():
    """The first-byte shortcut against the long way, over strings that start with every
    kind of character a JSON string can open with (escapes, spaces, braces, non-ASCII)."""
    starts = ["{", " {", "\t{", "\n {", "[", "x", "é{", "\u00a0{", "", '"', "\\{", "\r\n{", "\x00{"]
    bodies = ['"a": 1}', "}", '"cmd": "ls"}', "", "1"]
    for start in starts:
        for body in bodies:
            text = start + body
            raw = msgspec.Raw(msgspec.json.encode(text))
            try:
                val = msgspec.json.decode(text)
            except msgspec.DecodeError:
                val = {}
            assert rec.arguments(raw) == (val if isinstance(val, dict) else {}), repr(text)


def test_a_call_without_arguments_is_summed_up_as_before():
    assert text.call_summary("write_stdin", {}) == "poll session None"
    assert text.call_summary("exec_command", {}) == input_summary({}) == ""
    assert text.call_summary("wait", {}) == ""


@pytest.mark.parametrize(
    "out", ["Process exited with code 3", "Exit code: 0\nok", '{"exit_code": 2}', "done", "exit", "EXIT code: 1"]
)
def test_exit_codes_and_failures_read_as_before(out):
    m = text._EXITED.search(out) or text._EXIT_CODE.search(out) or text._JSON_EXIT.search(out)
    assert text.exit_code_of(out) == (int(m.group(1)) if m else None)
    first = out.lstrip()[:200].split("\n", 1)[0].lower()
    assert results.looks_failed(out) == any(w in first for w in results._FAILED)


_PIECES = st.sampled_from([*results._FAILED, "FAILED", "Error", "TIMED OUT", "\n", " ", "\t", "exit", "ok", "é"])


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(_PIECES, st.text(max_size=40)), max_size=12))
def test_looks_failed_says_what_a_search_of_the_first_line_says(pieces):
    out = "".join(pieces)
    first = out.lstrip()[:200].split("\n", 1)[0].lower()
    assert results.looks_failed(out) == any(w in first for w in results._FAILED)
