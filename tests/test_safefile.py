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


def test_plain_path_refuses_a_fifo_and_a_symlink_out_and_says_so(tmp_path):
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "ok.jsonl").write_text("{}\n")
    (tmp_path / "secret").write_text("x\n")
    os.mkfifo(tmp_path / "in" / "fifo.jsonl")
    (tmp_path / "in" / "out.jsonl").symlink_to(tmp_path / "secret")
    (tmp_path / "in" / "near.jsonl").symlink_to("ok.jsonl")
    got = {
        n: safefile.plain_path(str(tmp_path / "in" / n)) for n in ("ok.jsonl", "fifo.jsonl", "out.jsonl", "near.jsonl")
    }
    assert got == {"ok.jsonl": True, "fifo.jsonl": False, "out.jsonl": False, "near.jsonl": True}
    notes = safefile.unreadable([str(tmp_path / "in")])
    assert len(notes) == 2 and any("FIFO" in n for n in notes) and any("symlink" in n for n in notes)
    os.unlink(tmp_path / "in" / "fifo.jsonl")
    os.unlink(tmp_path / "in" / "out.jsonl")
    assert safefile.unreadable([str(tmp_path / "in")]) == []


def test_an_export_of_a_session_whose_file_became_a_fifo_ends(tmp_path):
    import shutil

    from conftest import SAMPLES
    from faults import in_child
    from huddle.core import Huddle
    from huddle.sources import Settings
    from huddle.views.export import export_data

    folder = tmp_path / "claude"
    shutil.copytree(SAMPLES / "claude" / "01-basic-tools" / "config", folder)
    h = Huddle(Settings(folders={"claude": str(folder)}, huddle_home=str(tmp_path / "hh")), sources=["claude"])
    h.refresh()
    s = h.sessions()[0]
    main = s.agents[s.id].file if s.id in s.agents else next(a.file for a in s.agents.values() if a.file)
    os.unlink(main)
    os.mkfifo(main)  # the export reads records back from the file: a plain open() waits here for ever
    got = in_child(lambda: bool(export_data(h, s.id)[0]), 30.0)
    assert got is True, got
