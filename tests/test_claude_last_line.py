"""A Claude Code transcript whose last record has no newline (Entire's copies end that
way: shared/external/SOURCES.md; so does a file whose writer was killed mid-line) counts
that record once the file is quiet and no process holds the session; while the
session's process lives, the record waits for its newline."""

from __future__ import annotations

import json
import os
import shutil
import time

from conftest import SAMPLES
from helpers import claude_huddle
from huddle.io.stamps import SETTLE_NS

BASIC = SAMPLES / "claude" / "01-basic-tools" / "config"


def quiet(paths) -> None:
    then = (time.time_ns() - 3 * SETTLE_NS) / 1e9
    for p in paths:
        os.utime(p, (then, then))


def copy_without_last_newline(tmp_path):
    """The sample cut after the first record of its last response, that record left
    without its newline; and what the cut file holds, read with its newline."""
    config = tmp_path / "config"
    shutil.copytree(BASIC, config)
    (main,) = config.glob("projects/*/*.jsonl")
    lines = main.read_bytes().splitlines()
    recs = [json.loads(x) for x in lines]
    last_id = [r["message"]["id"] for r in recs if r.get("type") == "assistant"][-1]
    cut = next(i for i, r in enumerate(recs) if r.get("type") == "assistant" and r["message"]["id"] == last_id)
    main.write_bytes(b"\n".join(lines[: cut + 1]) + b"\n")
    whole = claude_huddle(config).sessions()[0].usage
    main.write_bytes(b"\n".join(lines[: cut + 1]))
    return config, main, whole


def test_the_last_record_of_a_quiet_file_counts(tmp_path):
    config, main, whole = copy_without_last_newline(tmp_path)
    quiet([main])
    (s,) = claude_huddle(config).sessions()
    assert s.usage.to_dict() == whole.to_dict()
    assert s.skipped_lines == 0


def test_it_waits_while_the_sessions_process_lives_and_counts_once_it_is_gone(tmp_path):
    config, main, whole = copy_without_last_newline(tmp_path)
    quiet([main])
    (sid,) = [main.stem]
    reg = config / "sessions"
    reg.mkdir()
    entry = reg / f"{os.getpid()}.json"  # this test's own process stands for Claude Code
    entry.write_text(json.dumps({"pid": os.getpid(), "sessionId": sid, "status": "busy", "updatedAt": 1}))
    h = claude_huddle(config)
    (s,) = h.sessions()
    assert s.usage.output < whole.output  # its last response waits for its newline
    entry.unlink()
    h.refresh()
    (s,) = h.sessions()
    assert s.usage.to_dict() == whole.to_dict()
    with open(main, "ab") as f:  # the writer's newline after all: nothing counted twice
        f.write(b"\n")
    h.refresh()
    assert h.sessions()[0].usage.to_dict() == whole.to_dict()
