"""The incremental reader: appended bytes only, half lines wait, rewrites are noticed."""

from __future__ import annotations

import os
import re

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import SAMPLES
from huddle.io.reader import GONE, GROWN, RESET, SAME, LineReader, read_span, read_tail

SAMPLE = next((SAMPLES / "claude" / "10-interactive-tmux" / "config" / "projects").glob("*/*.jsonl"))
DATA = SAMPLE.read_bytes()


def lines_of(data: bytes) -> list[tuple[int, bytes]]:
    out, pos = [], 0
    while True:
        nl = data.find(b"\n", pos)
        if nl < 0:
            return out
        if nl > pos:
            out.append((pos, data[pos:nl]))
        pos = nl + 1


def poll(r: LineReader) -> tuple[str, list]:
    status = r.check()
    return status, list(r.lines()) if status in (GROWN, RESET) else []


def test_reads_only_what_was_appended(tmp_path):
    p = tmp_path / "s.jsonl"
    p.write_bytes(b'{"a":1}\n{"b":2}\n')
    r = LineReader(str(p))
    assert poll(r) == (GROWN, [(0, b'{"a":1}'), (8, b'{"b":2}')])
    assert poll(r) == (SAME, [])
    with open(p, "ab") as f:
        f.write(b'{"c":3}\n')
    assert poll(r) == (GROWN, [(16, b'{"c":3}')])


def test_half_line_waits_for_its_newline(tmp_path):
    p = tmp_path / "s.jsonl"
    p.write_bytes(b'{"a":1}\n{"b":')
    r = LineReader(str(p))
    assert poll(r)[1] == [(0, b'{"a":1}')]
    assert poll(r) == (SAME, [])
    with open(p, "ab") as f:
        f.write(b"2}")
    assert poll(r)[1] == []
    with open(p, "ab") as f:
        f.write(b"\n")
    assert poll(r)[1] == [(8, b'{"b":2}')]


def test_truncation_reads_again_from_the_start(tmp_path):
    p = tmp_path / "s.jsonl"
    p.write_bytes(b'{"a":1}\n{"b":2}\n')
    r = LineReader(str(p))
    poll(r)
    p.write_bytes(b'{"z":9}\n')
    assert poll(r) == (RESET, [(0, b'{"z":9}')])
    assert r.resets == 1


def test_rewrite_in_place_with_same_size_or_larger_is_noticed(tmp_path):
    p = tmp_path / "s.jsonl"
    p.write_bytes(b'{"a":1}\n{"b":2}\n')
    r = LineReader(str(p))
    poll(r)
    with open(p, "r+b") as f:  # same inode, earlier bytes changed, file grew
        f.write(b'{"x":1}\n{"y":2}\n{"w":3}\n')
    status, got = poll(r)
    assert status == RESET and [line for _, line in got] == [b'{"x":1}', b'{"y":2}', b'{"w":3}']


def test_replaced_file_new_inode(tmp_path):
    p = tmp_path / "s.jsonl"
    p.write_bytes(b'{"a":1}\n')
    r = LineReader(str(p))
    poll(r)
    tmp = tmp_path / "s.tmp"
    tmp.write_bytes(b'{"a":1}\n{"b":2}\n')
    os.replace(tmp, p)
    assert poll(r)[0] == RESET


def test_gone(tmp_path):
    p = tmp_path / "s.jsonl"
    p.write_bytes(b"{}\n")
    r = LineReader(str(p))
    poll(r)
    p.unlink()
    assert r.check() == GONE


def test_long_lines_across_chunks(tmp_path, monkeypatch):
    import huddle.io.reader as reader

    monkeypatch.setattr(reader, "CHUNK", 7)
    p = tmp_path / "s.jsonl"
    body = b'{"big":"' + b"x" * 100 + b'"}\n{"s":1}\n'
    p.write_bytes(body)
    r = LineReader(str(p))
    assert [line for _, line in poll(r)[1]] == [body.split(b"\n")[0], b'{"s":1}']


def test_tail_and_span(tmp_path):
    p = tmp_path / "s.jsonl"
    p.write_bytes(DATA)
    tail = read_tail(str(p), 4096)
    assert tail and tail == [x for x in lines_of(DATA) if x[0] >= tail[0][0]]
    off, line = tail[0]
    assert read_span(str(p), off, len(line)) == line


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cuts=st.lists(st.integers(min_value=0, max_value=len(DATA)), max_size=30))
def test_any_chunking_gives_the_same_lines(tmp_path, cuts):
    p = tmp_path / "chunked.jsonl"
    p.write_bytes(b"")
    r = LineReader(str(p))
    got = []
    bounds = sorted(set(cuts)) + [len(DATA)]
    prev = 0
    for b in bounds:
        with open(p, "ab") as f:
            f.write(DATA[prev:b])
        prev = b
        got += poll(r)[1]
    assert got == lines_of(DATA)


class Problems:
    def __init__(self):
        self.said: list[tuple[str, int, str]] = []

    def problem(self, path: str, offset: int, what: str) -> None:
        self.said.append((path, offset, what))


def test_a_line_over_the_cap_is_skipped_counted_and_not_kept(tmp_path, monkeypatch):
    import huddle.io.reader as reader

    monkeypatch.setattr(reader, "CHUNK", 16)
    monkeypatch.setattr(reader, "LINE_MAX", 50)
    p = tmp_path / "s.jsonl"
    p.write_bytes(b'{"a":1}\n' + b"x" * 200)  # the long line still being written
    r, said = LineReader(str(p)), Problems()
    assert list(r.lines(said)) == [(0, b'{"a":1}')]
    assert r._pending == b""  # its bytes are not kept while it grows
    assert said.said == [(str(p), 8, "a line over 0 MB: skipped, not kept")] and r.long_lines == 1
    with open(p, "ab") as f:
        f.write(b"y" * 100 + b'\n{"b":2}\n')
    assert r.check() == GROWN
    assert list(r.lines(said)) == [(309, b'{"b":2}')]
    assert len(said.said) == 1  # said once


def test_a_sparse_hole_in_a_long_line_is_skipped_unread(tmp_path, monkeypatch):
    import huddle.io.reader as reader

    monkeypatch.setattr(reader, "LINE_MAX", 1 << 20)
    p = tmp_path / "sparse.jsonl"
    with open(p, "wb") as f:
        f.write(b'{"a":1}\n{"x":"')
        f.truncate(1 << 40)  # a terabyte of holes: a read of it would never end
    r, said = LineReader(str(p)), Problems()
    assert list(r.lines(said)) == [(0, b'{"a":1}')]
    with open(p, "ab") as f:
        f.write(b'"}\n{"b":2}\n')
    assert r.check() == GROWN
    assert [line for _, line in r.lines(said)] == [b'{"b":2}'] and len(said.said) == 1


def test_the_cursor_is_past_a_line_its_consumer_failed_on(tmp_path):
    p = tmp_path / "s.jsonl"
    p.write_bytes(b'{"a":1}\n{"bad":2}\n{"c":3}\n')
    r = LineReader(str(p))
    got = []
    for _off, line in r.lines():
        if b"bad" in line:
            break  # the consumer raised here
        got.append(line)
    assert poll(r)[1] == [(18, b'{"c":3}')]  # the bad line is not read again


def test_a_same_size_rewrite_keeping_the_last_bytes_is_noticed(tmp_path):
    p = tmp_path / "s.jsonl"
    lines = [b'{"n":%02d,"t":"%s"}\n' % (i, b"abcdefgh"[i % 6 :][:3]) for i in range(40)]
    lines[-1] = b'{"last":"' + b"z" * 80 + b'"}\n'  # the 64 bytes before the offset stay the same
    data = b"".join(lines)
    p.write_bytes(data)
    r = LineReader(str(p))
    poll(r)
    st = os.stat(p)
    swapped = b"".join([lines[0], *reversed(lines[1:-1]), lines[-1]])  # same size, same head and tail
    assert len(swapped) == len(data) and swapped[-64:] == data[-64:] and swapped != data
    with open(p, "r+b") as f:
        f.write(swapped)
    os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns))  # even with the old mtime: ctime moved
    status, got = poll(r)
    assert status == RESET and [line for _, line in got] == swapped.splitlines()
    with open(p, "r+b") as f:  # and put back the way it was: read again, not a mix
        f.write(data)
    status, got = poll(r)
    assert status == RESET and [line for _, line in got] == data.splitlines()


def test_a_fifo_or_a_symlink_out_is_refused_without_blocking(tmp_path):
    import pytest

    from huddle.io.safefile import Escapes, NotRegular

    fifo = tmp_path / "f.jsonl"
    os.mkfifo(fifo)
    with pytest.raises(NotRegular, match="a FIFO"):
        LineReader(str(fifo)).check()
    outside = tmp_path / "elsewhere.jsonl"
    outside.write_bytes(b'{"secret":1}\n')
    (tmp_path / "agent").mkdir()
    link = tmp_path / "agent" / "s.jsonl"
    link.symlink_to(outside)
    r = LineReader(str(link))
    assert r.check() == GROWN
    with pytest.raises(Escapes, match="out of the agent's folder"):
        list(r.lines())
    inside = tmp_path / "agent" / "t.jsonl"
    inside.symlink_to("real.jsonl")
    (tmp_path / "agent" / "real.jsonl").write_bytes(b'{"ok":1}\n')
    assert poll(LineReader(str(inside)))[1] == [(0, b'{"ok":1}')]  # a symlink that stays is fine


def _commented(buf: bytes, i: int, end: int) -> bool:
    return buf.startswith(b"#", i)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    lines=st.lists(st.sampled_from([b"#skip me", b"keep", b"#", b"x" * 40, b"#" + b"y" * 50, b""]), max_size=40),
    cuts=st.lists(st.integers(min_value=0, max_value=2000), max_size=8),
    chunk=st.sampled_from([7, 64, 1 << 20]),
)
def test_lines_passed_over_in_the_buffer_are_the_ones_a_filter_drops(tmp_path, monkeypatch, lines, cuts, chunk):
    """`skip` judges a line where it lies in the read buffer (also one begun in an
    earlier chunk or poll): exactly the lines a filter after the read would drop are
    never handed out, and the cursor ends where a plain read's does."""
    import huddle.io.reader as reader

    monkeypatch.setattr(reader, "CHUNK", chunk)
    data = b"".join(x + b"\n" for x in lines) + b"#half"
    p = tmp_path / "skip.jsonl"
    p.write_bytes(b"")
    plain, skipping = LineReader(str(p)), LineReader(str(p))
    got, want = [], []
    prev = 0
    for b in sorted({min(c, len(data)) for c in cuts}) + [len(data)]:
        with open(p, "ab") as f:
            f.write(data[prev:b])
        prev = b
        for r, out, skip in ((plain, want, None), (skipping, got, _commented)):
            if r.check() in (GROWN, RESET):
                out += list(r.lines(None, skip))
    assert got == [(o, x) for o, x in want if not x.startswith(b"#")]
    assert skipping.cursor.offset == plain.cursor.offset


class _Learning:
    """A judge that learns from the lines it is handed: after a `+` line it passes over
    the lines that start with `#` (a compiled pattern's match, as a usage-only read
    gives), after a `-` line none."""

    _commented = re.compile(rb"#").match

    def __init__(self) -> None:
        self.skip = None

    def feed(self, line: bytes) -> None:
        if line.startswith(b"+"):
            self.skip = self._commented
        elif line.startswith(b"-"):
            self.skip = None


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    lines=st.lists(st.sampled_from([b"#skip", b"keep", b"+", b"-", b"#" + b"y" * 50, b"", b"x" * 30]), max_size=40),
    cuts=st.lists(st.integers(min_value=0, max_value=2000), max_size=8),
    chunk=st.sampled_from([7, 64, 1 << 20]),
    stop=st.integers(min_value=0, max_value=40),
)
def test_a_judge_that_learns_passes_over_what_it_says_after_each_line_kept(
    tmp_path, monkeypatch, lines, cuts, chunk, stop
):
    """`judge.skip` is read again after each line handed out: the lines passed over are
    exactly those a filter with the same rule, applied after a plain read, drops; the
    cursor ends where a plain read's does, also when the consumer stops early (a line's
    failure) and reads on at the next poll."""
    import huddle.io.reader as reader

    monkeypatch.setattr(reader, "CHUNK", chunk)
    data = b"".join(x + b"\n" for x in lines) + b"#half"
    p = tmp_path / "learn.jsonl"
    p.write_bytes(b"")
    plain, judged = LineReader(str(p)), LineReader(str(p))
    want, got = [], []
    seen = _Learning()  # the rule, applied to the plain read's lines
    judge = _Learning()
    prev = 0
    for b in sorted({min(c, len(data)) for c in cuts}) + [len(data)]:
        with open(p, "ab") as f:
            f.write(data[prev:b])
        prev = b
        if plain.check() in (GROWN, RESET):
            for o, x in plain.lines():
                if not (seen.skip is not None and seen.skip(x)):
                    want.append((o, x))
                    seen.feed(x)
        if judged.check() in (GROWN, RESET):
            for o, x in judged.lines(None, None, judge):
                got.append((o, x))
                judge.feed(x)
                if len(got) == stop:
                    break  # the consumer stops: the cursor is past this line, not past the next
    for o, x in judged.lines(None, None, judge):  # what was left after an early stop
        got.append((o, x))
        judge.feed(x)
    assert got == want
    assert judged.cursor.offset == plain.cursor.offset


def test_a_long_line_its_head_passes_over_is_never_joined_nor_handed_out(tmp_path):
    # lines that span reads (CHUNK bytes each), some of them passed over by their head
    from huddle.io import reader as rd

    long = b'{"skip":"' + b"x" * (rd.CHUNK + 10) + b'"}'
    kept = b'{"keep":"' + b"y" * (rd.CHUNK + 10) + b'"}'
    data = b'{"a":1}\n' + long + b"\n" + kept + b"\r\n" + long + b'\n{"b":2}\n'
    p = tmp_path / "s.jsonl"
    p.write_bytes(data)
    heads: list[bytes] = []

    def cut(head: bytes) -> bool:
        heads.append(head)
        return head.startswith(b'{"skip"')

    r = LineReader(str(p))
    r.check()
    got = list(r.lines(cut=cut))
    assert got == [(0, b'{"a":1}'), (8 + len(long) + 1, kept), (len(data) - 8, b'{"b":2}')]
    assert all(len(h) == rd.HEAD for h in heads) and len(heads) == 3
    assert r.cursor.offset == len(data)


def test_a_long_line_passed_over_by_its_head_waits_at_its_start_until_whole(tmp_path):
    from huddle.io import reader as rd

    half = b'{"skip":"' + b"x" * (rd.CHUNK + 10)
    p = tmp_path / "s.jsonl"
    p.write_bytes(b'{"a":1}\n' + half)
    r = LineReader(str(p))

    def cut(head: bytes) -> bool:
        return head.startswith(b'{"skip"')

    assert r.check() == GROWN and list(r.lines(cut=cut)) == [(0, b'{"a":1}')]
    assert r.cursor.offset == 8 and r.check() == SAME
    with open(p, "ab") as f:
        f.write(b'"}\n{"b":2}\n')
    assert r.check() == GROWN
    assert list(r.lines(cut=cut)) == [(8 + len(half) + 3, b'{"b":2}')]
    assert r.cursor.offset == p.stat().st_size


def test_a_line_passed_over_by_its_head_past_the_cap_is_said_as_any_over_long_line(tmp_path, monkeypatch):
    from huddle.io import reader as rd

    monkeypatch.setattr(rd, "LINE_MAX", 3 * rd.CHUNK)
    p = tmp_path / "s.jsonl"
    p.write_bytes(b'{"skip":"' + b"x" * (4 * rd.CHUNK) + b'"}\n{"b":2}\n')
    said = []

    class Problems:
        def problem(self, path, offset, what):
            said.append(offset)

    r = LineReader(str(p))
    r.check()
    assert list(r.lines(Problems(), cut=lambda head: True)) == [(p.stat().st_size - 8, b'{"b":2}')]
    assert said == [0] and r.long_lines == 1
