"""Nothing silent: every file under the agents' session folders is read into a session,
known as not a session, or not read with its reason (`huddle doctor`, GET /api/doctor,
`status --json`'s `files`)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import httpx

import incli
from conftest import SAMPLES
from huddle.core import Huddle
from huddle.model.files import EMPTY, UNKNOWN, UNKNOWN_VERSION, UNREADABLE
from huddle.server import ServerThread
from huddle.sources import Settings
from huddle.views.board import board_json
from huddle.views.doctor import doctor
from said import as_json

CLAUDE = SAMPLES / "claude" / "01-basic-tools" / "config" / "projects"
CODEX = SAMPLES / "codex" / "apply_patch" / "codex_home"


def home(tmp_path: Path) -> tuple[Settings, dict[str, Path]]:
    """A Claude and a Codex folder with real sessions, and beside them: an empty session
    file, a file of a format huddle does not know, a stray file, a FIFO, and a rollout
    of an early Codex layout (no session_meta, records of no type huddle reads)."""
    claude, codex = tmp_path / "claude", tmp_path / "codex"
    shutil.copytree(CLAUDE, claude / "projects")
    shutil.copytree(CODEX, codex)
    proj = next((claude / "projects").iterdir())
    day = next((codex / "sessions").glob("*/*/*"))
    planted = {
        "empty": proj / "00000000-0000-4000-8000-000000000000.jsonl",
        "stray": proj / "notes.txt",
        "fifo": proj / "11111111-1111-4111-8111-111111111111.jsonl",
        "early": day / "rollout-2025-08-30T12-00-00-22222222-2222-4222-8222-222222222222.jsonl",
        "loose": codex / "sessions" / "rollout-2025-08-01T00-00-00-33333333-3333-4333-8333-333333333333.json",
    }
    planted["empty"].write_bytes(b"")
    planted["stray"].write_text("not a session\n")
    os.mkfifo(planted["fifo"])
    planted["early"].write_text(
        '{"id": "22222222-2222-4222-8222-222222222222", "timestamp": "2025-08-30T12:00:00Z", "instructions": ""}\n'
        '{"record_type": "state"}\n'
    )
    planted["loose"].write_text('{"session": {"id": "x"}, "items": []}\n')
    none = str(tmp_path / "none")
    folders = {"claude": str(claude), "codex": str(codex), "vibe": none, "gemini": none, "opencode": none}
    return Settings(folders=folders, huddle_home=str(tmp_path / "hh")), planted


def by_path(agent: dict, what: str) -> dict[str, str]:
    return {f["path"]: f["reason"] for f in agent[what]}


def test_every_file_met_is_said(tmp_path):
    settings, planted = home(tmp_path)
    h = Huddle(settings)
    h.refresh()
    report = {a["name"]: a for a in doctor(h)["agents"]}
    claude, codex = report["claude"], report["codex"]
    assert claude["label"] == "Claude Code" and claude["exists"] and claude["sessions"] >= 1
    unread = by_path(claude, "not_read_files")
    assert unread[str(planted["stray"])] == UNKNOWN
    assert unread[str(planted["fifo"])].startswith(UNREADABLE)
    assert by_path(claude, "not_session_files")[str(planted["empty"])] == EMPTY
    unread = by_path(codex, "not_read_files")
    assert unread[str(planted["early"])].startswith(UNKNOWN_VERSION)  # a session no row shows: said here
    assert unread[str(planted["loose"])].startswith(UNKNOWN)
    for a in (claude, codex):
        assert a["found"] == a["sessions"] + a["not_sessions"] + a["not_read"]
        for what in ("not_read_files", "not_session_files", "errors"):  # in the order of their paths
            assert [f["path"] for f in a[what]] == sorted(f["path"] for f in a[what])
        assert a["not_read"] == len(a["not_read_files"]) and a["not_sessions"] == len(a["not_session_files"])
    # the board carries the counts, for every agent whose folder is here
    files = as_json(board_json(h))["files"]
    assert set(files) == {"claude", "codex", "hosted"} or set(files) == {"claude", "codex"}
    assert files["codex"] == {k: codex[k] for k in ("sessions", "not_sessions", "not_read")}
    assert files["claude"]["not_read"] == 2 and files["claude"]["not_sessions"] == 1


def test_a_file_that_turns_into_a_session_leaves_the_list(tmp_path):
    settings, planted = home(tmp_path)
    h = Huddle(settings)
    h.refresh()
    src = next(CLAUDE.iterdir()).glob("*.jsonl")
    planted["empty"].write_bytes(next(src).read_bytes())
    h.refresh()
    claude = next(a for a in doctor(h)["agents"] if a["name"] == "claude")
    assert str(planted["empty"]) not in by_path(claude, "not_session_files")


def _huddle(settings: Settings, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, **settings.env()}
    return incli.huddle(*args, env=env)


def test_doctor_json_is_the_route_and_status_json_carries_the_counts(tmp_path):
    settings, planted = home(tmp_path)
    out = _huddle(settings, "doctor")
    assert out.returncode == 0, out.stderr
    assert f"not read    {planted['early']}: {UNKNOWN_VERSION}" in out.stdout
    assert "Codex (codex)" in out.stdout and "files found" in out.stdout
    cli = _huddle(settings, "doctor", "--json")
    assert cli.returncode == 0, cli.stderr
    h = Huddle(Settings.from_env({**os.environ, **settings.env()}))
    h.refresh()
    with ServerThread(h) as srv, httpx.Client(base_url=srv.url, timeout=20) as client:
        route = client.get("/api/doctor").json()
        board = client.get("/api/sessions").json()
        agents = client.get("/api/agents").json()["agents"]
    assert json.loads(cli.stdout) == route
    again = _huddle(settings, "doctor", "--json")  # the sessions asleep now: their files said from the cache
    assert json.loads(again.stdout) == route
    status = json.loads(_huddle(settings, "status", "--json").stdout)
    assert status["files"] == board["files"]
    assert status["files"]["codex"]["not_read"] == 2
    assert agents["hosted"]["label"] == "huddle run" and agents["claude"]["colour"]
    # said again from the stored answer, the counts stay
    assert json.loads(_huddle(settings, "status", "--json").stdout)["files"] == status["files"]


def test_files_a_source_knows_are_no_session_say_why(tmp_path):
    """Claude Code's summary-only files title other sessions; Vibe keeps an index of its
    sessions: neither is a session, and neither is a file huddle could not read."""
    claude = tmp_path / "claude" / "projects" / "-p"
    claude.mkdir(parents=True)
    (claude / "0369069a-8464-4106-ba6a-c5c91ffcf799.jsonl").write_text(
        '{"type":"summary","summary":"Util module and tests","leafUuid":"b044e326-4b04-4fbc-8248-f2989a318601"}\n'
    )
    vibe = tmp_path / "vibe"
    shutil.copytree(SAMPLES / "vibe" / "2.26.1-legacy-multiturn", vibe)
    none = str(tmp_path / "none")
    folders = {"claude": str(tmp_path / "claude"), "codex": none, "vibe": str(vibe), "gemini": none, "opencode": none}
    h = Huddle(Settings(folders=folders, huddle_home=str(tmp_path / "hh")))
    h.refresh()
    report = {a["name"]: a for a in doctor(h)["agents"]}
    assert report["claude"]["not_read"] == 0 and report["vibe"]["not_read"] == 0
    (summaries,) = report["claude"]["not_session_files"]
    assert "summaries that title other sessions" in summaries["reason"]
    assert any(f["path"].endswith(".session_index.json") for f in report["vibe"]["not_session_files"])
