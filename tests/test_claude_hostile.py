"""Hostile input: truncated, mutated and garbage lines never take a session down."""

from __future__ import annotations

import json
import random

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import SAMPLES
from helpers import claude_huddle

SRC = next((SAMPLES / "claude" / "12-nested-and-custom-agents" / "config" / "projects").glob("*/*.jsonl"))
LINES = SRC.read_bytes().splitlines()

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=10,
)


def mutate(obj, rnd: random.Random, value):
    """Replace one value somewhere inside a record with an arbitrary JSON value."""
    if isinstance(obj, dict) and obj:
        k = rnd.choice(sorted(obj))
        if rnd.random() < 0.5:
            obj[k] = value
        else:
            mutate(obj[k], rnd, value)
    elif isinstance(obj, list) and obj:
        i = rnd.randrange(len(obj))
        if rnd.random() < 0.5:
            obj[i] = value
        else:
            mutate(obj[i], rnd, value)


def write_session(tmp_path, lines: list[bytes]):
    proj = tmp_path / "config" / "projects" / "-p"
    proj.mkdir(parents=True, exist_ok=True)
    (proj / "0b0e8a3c-0000-4000-8000-000000000001.jsonl").write_bytes(b"\n".join(lines) + b"\n")
    return claude_huddle(tmp_path / "config")


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    picks=st.lists(
        st.tuples(st.integers(0, len(LINES) - 1), st.integers(0, 3), st.integers(0, 10**6), json_values), max_size=12
    ),
    garbage=st.lists(st.binary(max_size=64), max_size=5),
)
def test_mutated_records_never_raise(tmp_path_factory, picks, garbage):
    tmp = tmp_path_factory.mktemp("hostile")
    lines = list(LINES)
    for idx, how, seed, value in picks:
        rnd = random.Random(seed)
        line = lines[idx]
        if how == 0:  # truncated
            lines[idx] = line[: rnd.randrange(1, max(2, len(line)))]
        elif how == 1:  # a value replaced with any JSON value
            try:
                rec = json.loads(line)
            except ValueError:
                continue  # already cut by an earlier pick
            mutate(rec, rnd, value)
            lines[idx] = json.dumps(rec).encode()
        elif how == 2:  # reordered
            j = rnd.randrange(len(lines))
            lines[idx], lines[j] = lines[j], lines[idx]
        else:  # duplicated
            lines.insert(idx, line)
    lines += [g.replace(b"\n", b" ") for g in garbage]
    h = write_session(tmp, lines)
    (s,) = h.sessions()
    assert s.error is None
    assert s.skipped_lines <= len(picks) + len(garbage) + 1
    assert s.usage.total >= 0


def test_each_bad_line_is_named_with_file_and_offset(tmp_path):
    lines = list(LINES[:20]) + [
        b"\x00\xff garbage",
        b'{"type":"user","message":{"content":[{"type":"tool_result","is_error":"yes"}]}}',
    ]
    h = write_session(tmp_path, lines)
    (s,) = h.sessions()
    assert s.skipped_lines == 2
    for p in s.problems:
        path, off, what = p.split(":", 2)
        assert path.endswith(".jsonl") and off.isdigit() and what.strip()
