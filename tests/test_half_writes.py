"""Rewrites and half-writes (issue 34): a Claude `sessions/<pid>.json` or a Vibe `CURRENT`
caught half-written keeps the last good reading until a good one replaces it (the row
never flickers to "ended", the status line never prints an error); a rewrite in place
that keeps a file's size is noticed by the Codex and Gemini readers; an unreadable
hosted-run or OpenCode folder is a note, its sessions still there."""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from conftest import SAMPLES
from faults import NOBODY, in_child
from huddle.core import Huddle, Keeper
from huddle.io import reader
from huddle.sources import Settings
from huddle.views.board import board_json, leave_board
from said import as_json
from test_statusline import INPUT, live_copy

NONE = "/nonexistent-huddle-test"


@pytest.fixture
def alive():
    p = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    stat = Path(f"/proc/{p.pid}/stat").read_text()
    yield p.pid, stat[stat.rfind(")") + 2 :].split()[19]
    p.kill()
    p.wait()


def _states(h: Huddle) -> dict[str, str]:
    with h.lock:
        return {r["id"]: r["state"] for r in as_json(board_json(h))["sessions"]}


def test_a_half_written_registry_entry_keeps_the_last_good_reading(tmp_path, alive):
    config = live_copy(tmp_path, "16-needs-you-subagent-permission", *alive)
    reg = next((config / "sessions").glob("*.json"))
    good = reg.read_bytes()
    h = Huddle(Settings(folders={"claude": str(config), "codex": NONE, "vibe": NONE}), sources=["claude"])
    h.refresh()
    (sid,) = _states(h)
    assert _states(h)[sid] == "needs_you"
    for cut in (0, 1, len(good) // 3, len(good) // 2, len(good) - 1):  # caught mid-rewrite, in place
        with open(reg, "r+b") as f:
            f.truncate(0)
            f.write(good[:cut])
        h.refresh()
        assert _states(h)[sid] == "needs_you", f"cut at {cut}"
    busy = json.loads(good)
    busy.update(status="busy", waitingFor=None, updatedAt=busy["updatedAt"] + 1000)
    reg.write_text(json.dumps(busy))  # a good reading replaces it
    h.refresh()
    now = _states(h)[sid]
    assert now not in ("needs_you", "ended")
    with open(reg, "r+b") as f:
        f.truncate(0)
        f.write(good[:10])
    h.refresh()
    assert _states(h)[sid] == now  # the newer good reading stands
    reg.unlink()  # gone for good: the process's word is gone with it
    h.refresh()
    assert _states(h)[sid] == "ended"


def test_the_status_line_says_a_line_whatever_the_registry_holds(tmp_path, alive, monkeypatch):
    from huddle.statusline import run

    config = live_copy(tmp_path, "16-needs-you-subagent-permission", *alive)
    reg = next((config / "sessions").glob("*.json"))
    good = json.loads(reg.read_text())
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(config))
    h = Huddle(Settings.from_env(), keep=Keeper())
    h.refresh()
    built: dict = {}
    leave_board(h, board_json(h, built=built), built)  # the board file, as `huddle status` leaves it
    other = {**good, "status": "busy"}
    odd = [
        {**other, "sessionId": ["a", "list"]},
        {**other, "sessionId": {"a": 1}},
        {**other, "sessionId": "odd-1", "pid": "12", "procStart": 5, "pidDomain": []},
        {**other, "sessionId": "odd-2", "status": {"x": 1}, "waitingFor": ["q"], "updatedAt": "soon"},
        {**other, "sessionId": "odd-3", "pid": 10**30},
        {**good, "pid": 10**30, "updatedAt": 1},  # a stale entry of the same session, older
        [good],
        "text",
    ]
    for i, val in enumerate(odd):
        (config / "sessions" / f"{90000 + i}.json").write_text(json.dumps(val))
    with open(config / "sessions" / "90100.json", "wb") as f:
        f.write(json.dumps(good).encode()[:40])  # half-written
    summary = json.loads(run(["--json"], stdin=io.StringIO(json.dumps(INPUT))))
    assert len(summary["needs_you"]) == 1
    line = run([], stdin=io.StringIO(json.dumps({**INPUT, "cost": {"total_cost_usd": 10**400}})))
    assert "need" in line


def _vibe(tmp_path: Path) -> tuple[Huddle, Path]:
    vibe = tmp_path / "vibe"
    shutil.copytree(SAMPLES / "vibe" / "3.0.3-unified-bash", vibe)
    h = Huddle(Settings(folders={"vibe": str(vibe), "claude": NONE, "codex": NONE}), sources=["vibe"])
    h.refresh()
    (current,) = vibe.glob("logs/session/unified/*/CURRENT")
    return h, current


def test_a_half_written_vibe_current_keeps_the_generation_read(tmp_path):
    h, current = _vibe(tmp_path)
    good = current.read_bytes()

    def seen() -> dict:
        with h.lock:
            return {s.key: (s.error, len(s.events), dict(s.counts)) for s in h.sessions()}

    before = seen()
    states = _states(h)
    assert all(err is None for err, _n, _c in before.values())
    for cut in (0, 1, len(good) // 2, len(good) - 2):
        with open(current, "r+b") as f:
            f.truncate(0)
            f.write(good[:cut])
        h.refresh()
        assert seen() == before, f"cut at {cut}"
        assert _states(h) == states
    with open(current, "r+b") as f:
        f.truncate(0)
        f.write(good)
    h.refresh()
    assert seen() == before


def _outside_samples(data: bytes, inside: bytes) -> list[int]:
    """Positions, one in each place `inside` (a text) stands in the file, the same letter
    of it in each, that the reader's print does not sample (its head, its four samples,
    its tail): an edit there keeps the print."""
    end = len(data)
    windows = [(0, reader.HEAD_KEEP), (end - reader.TAIL_KEEP, end)]
    for k in range(1, reader.SAMPLES + 1):
        at = end * k // (reader.SAMPLES + 1)
        windows.append((at, at + reader.SAMPLE_LEN))
    starts, at = [], data.find(inside)
    while at >= 0:
        starts.append(at)
        at = data.find(inside, at + 1)
    assert starts
    for i in range(len(inside)):
        if inside[i : i + 1].isalpha() and not any(a <= p + i < b for p in starts for a, b in windows):
            return [p + i for p in starts]
    raise AssertionError("every letter of the text is sampled somewhere")


@pytest.mark.parametrize(
    ("source", "sample", "pattern"),
    [
        ("codex", SAMPLES / "codex" / "shell" / "codex_home", "sessions/*/*/*/rollout-*.jsonl"),
        ("gemini", SAMPLES / "gemini" / "02-shell" / "home" / ".gemini", "tmp/*/chats/*.jsonl"),
    ],
)
def test_a_rewrite_in_place_of_the_same_size_is_noticed(tmp_path, source, sample, pattern):
    folder = tmp_path / source
    shutil.copytree(sample, folder)
    settings = Settings(folders={"claude": NONE, "codex": NONE, "vibe": NONE, source: str(folder)})
    (path,) = sorted(folder.glob(pattern))[:1]
    live = Huddle(settings, sources=[source])
    live.refresh()
    with live.lock:
        (s,) = live.sessions()
        said = next(e.text for e in s.events if e.kind == "say" and len(e.text) > 12)
        before = [(e.kind, e.text) for e in s.events]
    data = path.read_bytes()
    changed = bytearray(data)
    for p in _outside_samples(data, json.dumps(said)[1:-1].encode()):
        changed[p : p + 1] = b"Q" if data[p : p + 1] != b"Q" else b"R"
    with open(path, "r+b") as f:  # in place: same inode, same size
        f.write(changed)
    st = os.stat(path)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))  # (a rewrite within the same tick moves it too)
    live.refresh()
    cold = Huddle(settings, sources=[source])
    cold.refresh()
    with live.lock, cold.lock:
        got = [(e.kind, e.text) for e in next(iter(live.sessions())).events]
        want = [(e.kind, e.text) for e in next(iter(cold.sessions())).events]
    assert got == want
    assert got != before


@pytest.fixture
def world():
    """A folder an ordinary user can reach (pytest's own are root's alone)."""
    top = Path(tempfile.mkdtemp(prefix="huddle-half-"))
    os.chmod(top, 0o755)
    yield top / "w"
    shutil.rmtree(top, ignore_errors=True)


def _as_nobody(root: Path) -> None:
    for d, dirs, files in os.walk(root):
        for n in [*dirs, *files]:
            os.lchown(os.path.join(d, n), NOBODY, NOBODY)
    os.chown(root, NOBODY, NOBODY)
    os.chmod(root, 0o755)


def _unreadable_folder(root: Path, settings: Settings, source: str, folder: Path) -> dict:
    """Read, make `folder` unreadable, read again, make it readable, read again: in a child
    as an ordinary user (root reads a mode-000 folder)."""

    def run() -> dict:
        if os.geteuid() == 0:
            os.setgid(NOBODY)
            os.setuid(NOBODY)
        h = Huddle(settings, sources=[source])
        h.refresh()
        out = {"before": sorted(k for k in h.handles)}
        mode = folder.stat().st_mode
        os.chmod(folder, 0)
        h.refresh()
        with h.lock:
            out["during"] = sorted(k for k in h.handles)
            board = as_json(board_json(h))
            out["rows"] = sorted(f"{r['source']}:{r['id']}" for r in board["sessions"])
            out["notes"] = list(board.get("notes") or [])
        os.chmod(folder, mode)
        h.refresh()
        out["after"] = sorted(k for k in h.handles)
        return out

    got = in_child(run, 60)
    assert isinstance(got, dict) and "before" in got, got
    return got


def test_an_unreadable_hosted_run_folder_is_a_note(world):
    from faults import _hosted_run

    root = world
    hh = root / "hh"
    _hosted_run(hh / "runs" / "r1", SAMPLES / "claude-stream" / "01-basic-tools")
    _hosted_run(hh / "runs" / "r2", SAMPLES / "claude-stream" / "01-basic-tools")
    _as_nobody(root)
    settings = Settings(folders={"claude": NONE, "codex": NONE, "vibe": NONE}, huddle_home=str(hh))
    for folder in (hh / "runs" / "r1", hh / "runs"):
        got = _unreadable_folder(root, settings, "hosted", folder)
        assert got["before"] == ["hosted:r1", "hosted:r2"]
        assert got["during"] == got["before"] and got["rows"] == got["before"], got
        assert [n for n in got["notes"] if str(folder) in n], got["notes"]
        assert got["after"] == got["before"]


def test_an_unreadable_opencode_folder_is_a_note(world):
    root = world
    data = root / "opencode"
    shutil.copytree(SAMPLES / "opencode" / "07-subagent" / "home" / ".local" / "share" / "opencode", data)
    _as_nobody(root)
    settings = Settings(folders={"opencode": str(data), "opencode-state": NONE}, huddle_home=str(root / "hh"))
    got = _unreadable_folder(root, settings, "opencode", data)
    assert got["before"] and got["during"] == got["before"] and got["rows"] == got["before"], got
    assert [n for n in got["notes"] if str(data) in n], got["notes"]
    assert got["after"] == got["before"]
