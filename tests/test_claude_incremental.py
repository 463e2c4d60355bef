"""A live Claude session costs reads of its appended bytes: appending in any pieces
gives the same events as reading the whole file, sub-agent files included."""

from __future__ import annotations

import shutil

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import SAMPLES
from helpers import claude_huddle, grow_in_pieces

SCENARIO = SAMPLES / "claude" / "12-nested-and-custom-agents" / "config"


def digest(s):
    return [(e.kind, e.agent, e.id, e.text, e.target, e.ok, e.usage) for e in s.events]


WHOLE = claude_huddle(SCENARIO).sessions()[0]


N_FILES = len(list(SCENARIO.glob("projects/**/*.jsonl")))
STEPS = st.lists(
    st.tuples(st.integers(0, N_FILES - 1), st.floats(0, 1), st.booleans()),
    max_size=40,
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=STEPS)
def test_appending_in_random_pieces_gives_the_same_session(tmp_path_factory, steps):
    dst = tmp_path_factory.mktemp("live") / "config"
    shutil.copytree(SCENARIO, dst)
    h = grow_in_pieces(dst, steps)
    (s,) = h.sessions()
    assert s.usage.to_dict() == WHOLE.usage.to_dict()
    assert sorted(digest(s), key=repr) == sorted(digest(WHOLE), key=repr)
    assert {a.id: (a.parent, a.report) for a in s.agents.values()} == {
        a.id: (a.parent, a.report) for a in WHOLE.agents.values()
    }


def test_an_unchanged_session_reads_nothing(tmp_path):
    dst = tmp_path / "config"
    shutil.copytree(SCENARIO, dst)
    h = claude_huddle(dst)
    assert h.refresh() == set()
    (f,) = dst.glob("projects/*/*.jsonl")
    with open(f, "ab") as out:
        out.write(b'{"type":"custom-title","customTitle":"Renamed","sessionId":"x"}\n')
    assert h.refresh() == {h.sessions()[0].key}
    assert h.sessions()[0].title == "Renamed"


def test_a_rewritten_file_rebuilds_the_session(tmp_path):
    dst = tmp_path / "config"
    shutil.copytree(SCENARIO, dst)
    h = claude_huddle(dst)
    before = h.sessions()[0]
    n = len(before.events)
    (f,) = dst.glob("projects/*/*.jsonl")
    data = f.read_bytes()
    f.write_bytes(data[: len(data) // 2].rsplit(b"\n", 1)[0] + b"\n")  # truncated
    h.refresh()
    s = h.sessions()[0]
    assert s.epoch == 1 and 0 < len(s.events) < n
    f.write_bytes(data)
    h.refresh()
    assert sorted(digest(h.sessions()[0]), key=repr) == sorted(digest(WHOLE), key=repr)
