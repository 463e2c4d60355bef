"""What a run reads follows what changed, on the history real users have: folders of
Claude Code 1.0 sessions whose titles are decided across the folder (summary records)
sleep like any other; an append wakes its folder only when a title can move; a new
session wakes only the sleeping ones it shares responses with; one session's page or
export reads that session. Every board is the one a fresh read gives."""

from __future__ import annotations

import json
import os
import shutil
import time
import uuid
from pathlib import Path

import pytest

from conftest import SAMPLES
from huddle.core import Huddle, Keeper
from huddle.core.single import one_session_core
from huddle.sources import Settings
from huddle.views.board import board_json, leave_board
from huddle.views.export import Options, export_data
from said import as_json

OLD = SAMPLES / "claude-history" / "1.0.128"
NEW = SAMPLES / "claude"
FORK = "-home-dev-work-04-resume-continue-fork-proj"
COMPACT = "-home-dev-work-05-compact-proj"
MODERN = "5e1f0c39-0d34-4f0a-9b7c-1d1b8c1c0b01"  # a 2.1 session put in the 1.0 folder: no summary of its own


@pytest.fixture
def home(tmp_path: Path) -> Path:
    projects = tmp_path / "claude" / "projects"
    for name in ("04-resume-continue-fork", "05-compact"):
        shutil.copytree(OLD / name / "config" / "projects", projects, dirs_exist_ok=True)
    errors = NEW / "07-errors" / "config" / "projects"
    shutil.copytree(errors, projects, dirs_exist_ok=True)
    main = next(p for p in (NEW / "01-basic-tools" / "config" / "projects").glob("*/*.jsonl"))
    text = main.read_text().replace(main.stem, MODERN)
    (projects / FORK / f"{MODERN}.jsonl").write_text(text)
    settle(tmp_path)
    return tmp_path


def settle(root: Path) -> None:
    then = time.time() - 3600
    for dirpath, dirs, files in os.walk(root):
        for n in files + dirs:
            os.utime(os.path.join(dirpath, n), (then, then))
        os.utime(dirpath, (then, then))


def settings(home: Path) -> Settings:
    return Settings(folders={"claude": str(home / "claude")}, huddle_home=str(home / "hh"))


def fresh(home: Path) -> dict:
    h = Huddle(settings(home), sources=["claude"])
    h.refresh()
    return as_json(board_json(h))


def cached(home: Path) -> tuple[dict, Huddle]:
    h = Huddle(settings(home), sources=["claude"], keep=Keeper())
    h.refresh()
    built: dict = {}
    b = as_json(board_json(h, built=built))
    leave_board(h, b, built)
    return b, h


def awake(h: Huddle) -> set[str]:
    return {k.split(":", 1)[1] for k in h.handles}


def append_prompt(path: Path) -> None:
    sid = path.stem
    rec = {
        "type": "user",
        "message": {"role": "user", "content": "one more thing"},
        "uuid": str(uuid.uuid4()),
        "parentUuid": None,
        "sessionId": sid,
        "timestamp": "2026-11-30T12:00:00.000Z",
    }
    with open(path, "a") as f:
        f.write(json.dumps(rec) + "\n")


def stems(home: Path, folder: str) -> set[str]:
    return {p.stem for p in (home / "claude" / "projects" / folder).glob("*.jsonl")}


def warm(home: Path) -> set[str]:
    """Two runs: the second reads only the sessions that share responses (never left unread)."""
    cached(home)
    _, h = cached(home)
    return awake(h)


def test_folders_whose_titles_come_from_summaries_sleep_once_nothing_moved(home):
    shared = warm(home)
    # only the sessions that share responses with another are read again (the ledger decides over them)
    assert shared and shared < stems(home, FORK)
    assert not shared & stems(home, COMPACT)
    assert cached(home)[0] == fresh(home)


def test_an_append_to_a_titled_session_wakes_its_folder_and_the_titles_stay_right(home):
    shared = warm(home)
    titled = max((home / "claude" / "projects" / COMPACT).glob("*.jsonl"), key=lambda p: p.stat().st_size)
    append_prompt(titled)
    board, h = cached(home)
    assert awake(h) == shared | stems(home, COMPACT)
    assert board == fresh(home)


def test_an_append_to_an_untitled_session_in_such_a_folder_reads_it_alone(home):
    shared = warm(home)
    append_prompt(home / "claude" / "projects" / FORK / f"{MODERN}.jsonl")
    board, h = cached(home)
    assert awake(h) == shared | {MODERN}
    assert board == fresh(home)


def test_a_new_session_wakes_only_the_sleeping_ones_holding_its_responses(home):
    """A resume into a new file that copies another's history without saying so (its
    records name the new session): the store says which session held those responses."""
    shared = warm(home)
    errors = next((home / "claude" / "projects").glob("*07-errors*"))
    original = max(errors.glob("*.jsonl"), key=lambda p: p.stat().st_size)
    copy = str(uuid.uuid4())
    (errors / f"{copy}.jsonl").write_text(original.read_text().replace(original.stem, copy))
    board, h = cached(home)
    assert awake(h) == shared | {copy, original.stem}
    assert board == fresh(home)
    rows = {r["id"]: r for r in board["sessions"]}
    assert sorted([rows[copy]["tokens"], rows[original.stem]["tokens"]])[0] == 0  # counted once, in one of them


def test_a_new_session_of_its_own_wakes_no_other(home):
    shared = warm(home)
    errors = next((home / "claude" / "projects").glob("*07-errors*"))
    main = next(p for p in (NEW / "06-named-session" / "config" / "projects").glob("*/*.jsonl"))
    shutil.copy(main, errors / main.name)
    board, h = cached(home)
    assert awake(h) == shared | {main.stem}
    assert board == fresh(home)


def test_one_sessions_export_reads_that_session_and_says_what_a_whole_core_says(home):
    warm(home)
    titled = max((home / "claude" / "projects" / COMPACT).glob("*.jsonl"), key=lambda p: p.stat().st_size)
    h = one_session_core(titled.stem[:8], settings(home), sources=["claude"])
    assert awake(h) | {k.split(":", 1)[1] for k in h.dormant} <= {titled.stem}
    ours, _ = export_data(h, titled.stem[:8], Options())
    assert awake(h) == {titled.stem}
    whole = Huddle(settings(home), sources=["claude"])
    whole.refresh()
    theirs, _ = export_data(whole, titled.stem, Options())
    assert {**ours, "exported_at": None} == {**theirs, "exported_at": None}
    assert ours["session"]["title"]  # the summary another record gives, kept without its neighbours


def test_a_notice_naming_a_file_reads_the_session_that_reads_it(home):
    """A watcher told which file moved reads that session alone (Huddle.read_files); a file
    no session reads yet (a new one) asks for the whole refresh."""
    warm(home)
    h = Huddle(settings(home), sources=["claude"], keep=Keeper())
    h.refresh()
    shared = awake(h)
    path = home / "claude" / "projects" / FORK / f"{MODERN}.jsonl"
    append_prompt(path)
    assert h.read_files([str(path)]) == {f"claude:{MODERN}"}
    assert awake(h) == shared | {MODERN}
    assert h.handles[f"claude:{MODERN}"].session.last_prompt == "one more thing"
    assert as_json(board_json(h)) == fresh(home)
    assert h.read_files([str(path.parent / "new.jsonl")]) is None


@pytest.mark.parametrize("shares", [False, True], ids=["of its own", "a copy of another's responses"])
def test_a_notice_naming_a_session_that_came_reads_it_without_a_scan(home, shares):
    """A new session file right in a project folder is placed as the scan would place it
    (Source.came): read alone, the sleeping sessions holding its responses woken, the
    board the one a fresh read gives. One the scan alone can place (its own folder
    beside it, a 2.0 agent file in its folder) asks for the whole refresh."""
    warm(home)
    h = Huddle(settings(home), sources=["claude"], keep=Keeper())
    h.refresh()
    shared = awake(h)
    errors = next((home / "claude" / "projects").glob("*07-errors*"))
    if shares:
        model = max(errors.glob("*.jsonl"), key=lambda p: p.stat().st_size)
    else:
        model = next(p for p in (NEW / "06-named-session" / "config" / "projects").glob("*/*.jsonl"))
    sid = str(uuid.uuid4())
    came = errors / f"{sid}.jsonl"
    came.write_text(model.read_text().replace(model.stem, sid))
    assert h.read_files([str(came)]) is not None
    assert awake(h) == shared | {sid} | ({model.stem} if shares else set())
    assert as_json(board_json(h)) == fresh(home)
    other = str(uuid.uuid4())
    (errors / other).mkdir()  # (its folder: sub-agents the scan gives it)
    (errors / f"{other}.jsonl").write_text(model.read_text().replace(model.stem, other))
    assert h.read_files([str(errors / f"{other}.jsonl")]) is None
    v2 = SAMPLES / "claude-history" / "2.0.77" / "02-subagents" / "config" / "projects"
    agent = next(v2.glob("*/agent-*.jsonl"))
    shutil.copy(agent, errors / agent.name)
    third = str(uuid.uuid4())
    (errors / f"{third}.jsonl").write_text(model.read_text().replace(model.stem, third))
    assert h.read_files([str(errors / f"{third}.jsonl")]) is None


def test_a_session_read_alone_counts_a_shared_response_where_the_home_does(tmp_path):
    """A resumed 1.0 session's copies of its parent's responses count in the parent: the
    one-session core (show, export) says so as the whole core does, without the parent."""
    shutil.copytree(OLD / "04-resume-continue-fork" / "config" / "projects", tmp_path / "claude" / "projects")
    settle(tmp_path)
    cached(tmp_path)
    whole = Huddle(settings(tmp_path), sources=["claude"])
    whole.refresh()
    copy = next(s for s in whole.sessions() if s.counted_elsewhere)
    h = one_session_core(copy.id, settings(tmp_path), sources=["claude"])
    ours, _ = export_data(h, copy.id, Options())
    theirs, _ = export_data(whole, copy.id, Options())
    assert {**ours, "exported_at": None} == {**theirs, "exported_at": None}
    assert any(e.get("counted_in") for e in ours["events"])


def test_a_scan_reads_an_agent_files_head_once_per_change_of_the_file(tmp_path, monkeypatch):
    """Claude Code 2.0's agent files beside the sessions: whose each is, its first records
    say. Every `claude` start (a new session file) makes the next run scan the folders;
    the heads of agent files that did not change are not read again, whether their
    sessions slept or were read (an earlier run's scan kept them: Source.memo), and
    the board is the one a fresh read gives."""
    from huddle.sources.claude import project_agents

    projects = tmp_path / "claude" / "projects"
    v2 = SAMPLES / "claude-history" / "2.0.77"
    for name in ("02-subagents", "04-resume-continue-fork"):
        shutil.copytree(v2 / name / "config" / "projects", projects, dirs_exist_ok=True)
    settle(tmp_path)
    agents = sorted(projects.glob("*/agent-*.jsonl"))
    assert len(agents) >= 5
    read: list[str] = []
    real = project_agents.session_ids
    monkeypatch.setattr(project_agents, "session_ids", lambda path: read.append(path) or real(path))
    cached(tmp_path)
    assert sorted(read) == sorted(map(str, agents))  # the first run reads each head

    for sample in ("06-named-session", "01-basic-tools"):
        read.clear()
        main = next(p for p in (NEW / sample / "config" / "projects").glob("*/*.jsonl"))
        shutil.copy(main, agents[0].parent / main.name)  # a new session: the folder moved, its source is scanned
        with open(agents[1], "a") as f:
            f.write("\n")  # (and a sub-agent's file moved: its session is read, the file placed by it)
        board, _ = cached(tmp_path)
        assert read == []
        assert board == fresh(tmp_path)


def test_a_sub_agents_file_that_came_is_read_by_its_session_without_a_scan(tmp_path):
    """Claude Code 2.1 starts a sub-agent: its transcript comes in the session's own
    folder (made for it, the first time). A session awake reads it as the scan would
    have it read; the board is the one a fresh read gives. A file in a sleeping
    session's folder asks for the whole refresh."""
    source = SAMPLES / "claude" / "02-subagents" / "config" / "projects"
    projects = tmp_path / "claude" / "projects"
    shutil.copytree(source, projects)
    folder = next(projects.iterdir())
    main = min(folder.glob("*.jsonl"))
    own = folder / main.stem
    held = tmp_path / "held"
    shutil.move(str(own), str(held))  # (no sub-agent yet: no folder of its own)
    settle(tmp_path)
    cached(tmp_path)
    h = Huddle(settings(tmp_path), sources=["claude"], keep=Keeper())
    h.refresh()
    append_prompt(main)
    assert h.read_files([str(main)]) == {f"claude:{main.stem}"}  # (awake: it is being written)
    shutil.move(str(held), str(own))
    agent = next((own / "subagents").glob("agent-*.jsonl"))
    assert h.read_files([str(agent)]) == {f"claude:{main.stem}"}
    assert as_json(board_json(h)) == fresh(tmp_path)
    other = max(folder.glob("*.jsonl"))
    assert f"claude:{other.stem}" in h.dormant
    late = next((folder / other.stem / "subagents").glob("agent-*.jsonl"))
    shutil.copy(late, late.with_name("agent-a000000000000000.jsonl"))
    assert h.read_files([str(late.with_name("agent-a000000000000000.jsonl"))]) is None
