"""io/stamps: "unmoved", the one meaning the cache's heads and the stored answers share;
with the folders a run has looked at kept (`seen`) it says what it says without."""

from __future__ import annotations

import os
import time

from huddle.io.stamps import stamps_of, unmoved


def _heads(tmp_path, n: int = 3) -> list[dict]:
    project = tmp_path / "project"
    project.mkdir()
    then = time.time_ns() - 3600 * 10**9
    files = []
    for i in range(n):
        f = project / f"s{i}.jsonl"
        f.write_text("{}\n")
        os.utime(f, ns=(then, then))
        files.append(str(f))
    os.utime(project, ns=(then, then))
    gone = str(tmp_path / "not-there")
    now = time.time_ns()
    return [{"files": stamps_of([f], now), "dirs": stamps_of([str(project), gone], now)} for f in files]


def _said(heads: list[dict]) -> tuple[list[bool], list[bool]]:
    seen: dict[str, int] = {}
    return [unmoved(h) for h in heads], [unmoved(h, seen) for h in heads]


def test_folders_looked_at_once_say_what_each_look_says(tmp_path):
    heads = _heads(tmp_path)
    alone, shared = _said(heads)
    assert alone == shared == [True, True, True]
    (tmp_path / "project" / "new.jsonl").write_text("")  # a new session moves the folder they share
    alone, shared = _said(heads)
    assert alone == shared == [False, False, False]


def test_a_folder_that_came_since_its_stamp_of_none_is_a_move(tmp_path):
    heads = _heads(tmp_path)
    (tmp_path / "not-there").mkdir()
    alone, shared = _said(heads)
    assert alone == shared == [False, False, False]


def test_a_file_moved_moves_its_own_head_only(tmp_path):
    heads = _heads(tmp_path)
    with open(heads[1]["files"][0][0], "a") as f:
        f.write("{}\n")
    alone, shared = _said(heads)
    assert alone == shared == [True, False, True]
