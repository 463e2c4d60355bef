"""The folders watched through Linux's inotify (live.inotify) and the notices built on
it (live.notices), beside watchfiles' path: real folders, real writes, the real kernel."""

from __future__ import annotations

import os
import struct
import threading
import time

import pytest
from hypothesis import given
from hypothesis import settings as examples
from hypothesis import strategies as st

from huddle.live.inotify import Inotify
from huddle.live.notices import Notices

pytestmark = pytest.mark.skipif(not os.path.exists("/proc/sys/fs/inotify"), reason="Linux's inotify only")


def named_until(ino: Inotify, want: set[str], seconds: float = 30) -> set[str]:
    """What reads name until all of `want` was named (or the time is up)."""
    got: set[str] = set()
    end = time.monotonic() + seconds
    while not want <= got and time.monotonic() < end:
        named = ino.read(timeout=max(0.0, end - time.monotonic()))
        assert named is not None, "no overflow here"
        got |= named
    return got


def test_a_line_appended_and_a_file_that_came_are_named(tmp_path):
    project = tmp_path / "projects" / "p"
    project.mkdir(parents=True)
    old = project / "a.jsonl"
    old.write_text("{}\n")
    with Inotify([str(tmp_path)]) as ino:
        with old.open("a") as f:
            f.write("{}\n")
        assert str(old) in named_until(ino, {str(old)})
        new = project / "b.jsonl"
        new.write_text("{}\n")
        assert str(new) in named_until(ino, {str(new)})
        new.unlink()
        assert str(new) in named_until(ino, {str(new)})


def test_a_folder_that_came_is_watched_and_what_it_held_named(tmp_path):
    with Inotify([str(tmp_path)]) as ino:
        inner = tmp_path / "s" / "subagents"
        inner.mkdir(parents=True)  # (two folders at once: the inner one before any watch on it)
        early = inner / "agent-1.jsonl"
        early.write_text("{}\n")
        got = named_until(ino, {str(tmp_path / "s"), str(early)})
        assert {str(tmp_path / "s"), str(early)} <= got
        with early.open("a") as f:  # (the new folder is watched now: its appends are named)
            f.write("{}\n")
        assert str(early) in named_until(ino, {str(early)})


def test_nothing_moving_reads_nothing_and_an_interrupt_ends_a_wait(tmp_path):
    with Inotify([str(tmp_path)]) as ino:
        assert ino.read(timeout=0) == set()
        out: list[set[str] | None] = []
        t = threading.Thread(target=lambda: out.append(ino.read()))
        t.start()
        ino.interrupt()
        t.join(30)
        assert not t.is_alive() and out == [set()]
    ino.interrupt()  # (closed: nothing written to a number another file may hold now)


def test_links_are_not_followed_and_missing_roots_are_left(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    root = tmp_path / "root"
    root.mkdir()
    (root / "link").symlink_to(outside, target_is_directory=True)
    with Inotify([str(root), str(tmp_path / "not-there")]) as ino:
        assert set(ino.folders.values()) == {str(root)}
        (outside / "x.jsonl").write_text("{}\n")
        marker = root / "after.jsonl"  # (the kernel says events in order: once this is named, that one was not)
        marker.write_text("{}\n")
        got = named_until(ino, {str(marker)})
        assert str(marker) in got and not any(p.startswith((str(outside), str(root / "link"))) for p in got)


@pytest.mark.parametrize("kernel", [True, False], ids=["inotify", "watchfiles"])
def test_notices_name_the_file_that_moved(tmp_path, kernel):
    root = tmp_path / "projects"
    root.mkdir()
    session = root / "a.jsonl"
    session.write_text("{}\n")
    wake = threading.Event()
    threads: list[threading.Thread] = []
    notices = Notices(wake, threads, kernel=kernel)
    notices.ensure([str(root)], lambda: [str(root)])
    try:
        assert notices.ready.wait(30) and notices.watching
        notices.take()  # (the start's own wake-up names nothing)
        wake.clear()
        end = time.monotonic() + 30
        named: set[str] = set()
        with session.open("a") as f:
            f.write("{}\n")
        while str(session) not in named and time.monotonic() < end:
            wake.wait(max(0.0, end - time.monotonic()))
            wake.clear()
            got, _told = notices.take()
            named |= got or set()
        assert str(session) in named
    finally:
        notices.stop()
        for t in threads:
            t.join(30)
    assert not any(t.is_alive() for t in threads)


@given(raw=st.binary(max_size=400), wds=st.lists(st.integers(-2, 4), max_size=6))
@examples(max_examples=200, deadline=None)
def test_any_bytes_read_name_only_watched_folders_and_never_raise(tmp_path_factory, raw, wds):
    """What the kernel hands over is parsed event by event: bytes of any shape (a
    short tail, an unknown watch, a name with no end) name paths under the watched
    folders only, or say an overflow."""
    root = tmp_path_factory.getbasetemp() / "inotify-any"
    root.mkdir(exist_ok=True)
    with Inotify([str(root)]) as ino:
        events = b"".join(
            struct.pack("iIII", wd, mask, 0, len(name)) + name
            for wd, mask, name in zip(wds, (0x2, 0x100, 0x40000100, 0x4000, 0x8000, 0x200), (b"a", b"b\0\0\0", b""))
        )
        named: set[str] = set()
        ok = ino._named(events + raw, named)
        assert isinstance(ok, bool)
        assert all(p == str(root) or p.startswith(str(root) + os.sep) for p in named)
