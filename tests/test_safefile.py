"""Opening files huddle does not own: never blocking, regular files only, capped,
never out of the agent's folder; what is skipped is a note until it reads again."""

from __future__ import annotations

import os

import pytest

from huddle.io import safefile


def test_side_files_are_regular_capped_and_never_block(tmp_path):
    (tmp_path / "ok.json").write_text('{"a": 1}')
    assert safefile.read_json(str(tmp_path / "ok.json")) == {"a": 1}
    os.mkfifo(tmp_path / "fifo.json")  # a plain open() would wait here for a writer, for ever
    assert safefile.read_json(str(tmp_path / "fifo.json")) is None
    (tmp_path / "big.json").write_bytes(b" " * 100 + b"{}")
    with pytest.raises(safefile.TooBig):
        safefile.read_small(str(tmp_path / "big.json"), cap=50)
    with pytest.raises(safefile.NotRegular, match="a folder"):
        safefile.read_small(str(tmp_path))
    (tmp_path / "deep.json").write_bytes(b"[" * 100_000 + b"]" * 100_000)
    assert safefile.read_json(str(tmp_path / "deep.json")) is None  # nested too deep: no RecursionError


def test_what_cannot_be_read_is_a_note_until_it_can(tmp_path):
    root = str(tmp_path)
    fifo = tmp_path / "s.json"
    os.mkfifo(fifo)
    assert safefile.read_json(str(fifo)) is None
    loop = tmp_path / "loop.json"
    loop.symlink_to("loop.json")
    assert safefile.stamp(str(loop)) is None
    notes = safefile.unreadable([root])
    assert len(notes) == 2 and any("a FIFO" in n for n in notes) and any("symbolic links" in n for n in notes)
    assert safefile.unreadable([str(tmp_path / "elsewhere")]) == []  # each core sees its own folders only
    fifo.unlink()
    fifo.write_text("{}")
    loop.unlink()
    assert safefile.unreadable([root]) == []  # the causes went: so did the notes, nothing else changed


def test_a_symlink_is_followed_only_inside_its_folder(tmp_path):
    (tmp_path / "agent").mkdir()
    (tmp_path / "secret").write_text("{}")
    (tmp_path / "agent" / "out.json").symlink_to(tmp_path / "secret")
    (tmp_path / "agent" / "real.json").write_text("{}")
    (tmp_path / "agent" / "in.json").symlink_to("real.json")
    with pytest.raises(safefile.Escapes):
        safefile.read_small(str(tmp_path / "agent" / "out.json"))
    assert safefile.read_small(str(tmp_path / "agent" / "in.json")) == b"{}"
    assert safefile.read_small(str(tmp_path / "agent" / "out.json"), follow=True) == b"{}"  # a user's config may
