"""A last line without its newline: read once when nobody writes the file (quiet for
the settle time, no live writer said), never while it may still be written.

Entire's copies of Claude Code transcripts end that way (shared/external/SOURCES.md:
"Entire writes the last line without a newline"), and so does a file whose writer was
killed mid-line."""

from __future__ import annotations

import contextlib
import os
import pickle
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from huddle.io import reader
from huddle.io.reader import GROWN, RESET, SAME, LineReader
from huddle.io.stamps import SETTLE_NS


@contextlib.contextmanager
def later():
    """The clock moved past the settle time, the file untouched (what a reader that
    already read the file sees when its writer goes quiet)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(reader, "now_ns", lambda: time.time_ns() + 3 * SETTLE_NS)
        yield


def quiet(p) -> None:
    """The file as one nobody has written for longer than the settle time."""
    then = (time.time_ns() - 3 * SETTLE_NS) / 1e9
    os.utime(p, (then, then))


def poll(r: LineReader) -> tuple[str, list]:
    status = r.check()
    return status, list(r.lines()) if status != SAME else []


def test_a_quiet_files_last_line_without_newline_is_read_once(tmp_path):
    p = tmp_path / "s.jsonl"
    p.write_bytes(b'{"a":1}\n{"b":2}')
    quiet(p)
    r = LineReader(str(p))
    assert poll(r) == (GROWN, [(0, b'{"a":1}'), (8, b'{"b":2}')])
    assert poll(r) == (SAME, [])
    assert poll(r) == (SAME, [])


def test_a_file_being_written_keeps_its_last_line_waiting_until_it_is_quiet(tmp_path):
    p = tmp_path / "s.jsonl"
    p.write_bytes(b'{"a":1}\n{"b":2}')
    r = LineReader(str(p))
    assert poll(r)[1] == [(0, b'{"a":1}')]  # written just now: its writer may not be done
    assert poll(r) == (SAME, [])
    with later():
        assert poll(r) == (GROWN, [(8, b'{"b":2}')])  # the same bytes, quiet now: read, once
    assert poll(r) == (SAME, [])


def test_a_live_writer_keeps_the_last_line_waiting_however_quiet(tmp_path):
    p = tmp_path / "s.jsonl"
    p.write_bytes(b'{"a":1}\n{"b":2}')
    quiet(p)
    r = LineReader(str(p))
    r.writing = True  # its source knows a process holds it (Claude's registry, Codex's lock)
    assert poll(r)[1] == [(0, b'{"a":1}')]
    assert poll(r) == (SAME, [])
    r.writing = False  # the process is gone
    assert poll(r) == (GROWN, [(8, b'{"b":2}')])


def test_a_record_read_without_its_newline_is_not_read_again_when_it_gets_one(tmp_path):
    p = tmp_path / "s.jsonl"
    p.write_bytes(b'{"a":1}\n{"b":2}')
    quiet(p)
    r = LineReader(str(p))
    assert poll(r)[1] == [(0, b'{"a":1}'), (8, b'{"b":2}')]
    with open(p, "ab") as f:  # the writer was not done after all: its newline, then more
        f.write(b'\n{"c":3}\n')
    assert poll(r)[1] == [(16, b'{"c":3}')]


def test_a_piece_read_as_a_last_line_has_the_file_read_again_when_it_grows(tmp_path):
    # A writer stalled mid-line for longer than the settle time: the piece was handed out
    # (a bad line to its consumer); when the line goes on, the file is read again from its
    # start, so nothing made of the piece stays (a RESET, as for a rewrite).
    p = tmp_path / "s.jsonl"
    p.write_bytes(b'{"a":1}\n{"b":')
    quiet(p)
    r = LineReader(str(p))
    assert poll(r)[1] == [(0, b'{"a":1}'), (8, b'{"b":')]
    with open(p, "ab") as f:
        f.write(b"2}\n")
    assert poll(r) == (RESET, [(0, b'{"a":1}'), (8, b'{"b":2}')])


def test_a_cached_reader_knows_the_last_line_it_gave(tmp_path):
    p = tmp_path / "s.jsonl"
    p.write_bytes(b'{"a":1}\n{"b":2}')
    quiet(p)
    r = LineReader(str(p))
    assert len(poll(r)[1]) == 2
    again = pickle.loads(pickle.dumps(r))  # as the handle cache keeps it
    assert poll(again) == (SAME, [])
    again._pending = b""  # (an older cache's reader kept no pending bytes)
    with open(p, "ab") as f:
        f.write(b'\n{"c":3}\n')
    assert poll(again)[1] == [(16, b'{"c":3}')]


def test_an_older_caches_cursor_still_loads():
    from huddle.io.reader import Cursor

    c = Cursor(*(10, 1, 2, 20, 3, 4, 5, -1))  # the eight fields of before
    assert (c.offset, c.given) == (10, 0)


def test_the_last_line_passes_the_readers_judge_like_any_other(tmp_path):
    p = tmp_path / "s.jsonl"
    p.write_bytes(b'{"a":1}\n{"skip":2}')
    quiet(p)
    r = LineReader(str(p))
    r.check()
    assert list(r.lines(skip=lambda buf, i, end: b"skip" in buf[i:end])) == [(0, b'{"a":1}')]
    assert poll(r) == (SAME, [])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    lines=st.lists(st.binary(min_size=1, max_size=12).filter(lambda b: b"\n" not in b and b"\r" not in b), max_size=6),
    ends=st.booleans(),
    cuts=st.lists(st.integers(min_value=0, max_value=80), max_size=6),
)
def test_every_line_once_however_the_file_grew_and_ended(tmp_path, lines, ends, cuts):
    """Written in any pieces, each read while fresh, then left quiet: every record once,
    the last one too, newline or not."""
    data = b"\n".join(lines) + (b"\n" if ends and lines else b"")
    p = tmp_path / "f.jsonl"
    p.write_bytes(b"")
    r = LineReader(str(p))
    got: list[bytes] = []
    prev = 0
    for b in sorted({min(c, len(data)) for c in cuts}) + [len(data)]:
        with open(p, "ab") as f:
            f.write(data[prev:b])
        prev = b
        got += [line for _, line in poll(r)[1]]
    with later():
        got += [line for _, line in poll(r)[1]]
    assert got == list(lines)
