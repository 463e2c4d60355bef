"""The incremental reader: appended bytes only, half lines wait, rewrites are noticed."""

from __future__ import annotations

import os

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
