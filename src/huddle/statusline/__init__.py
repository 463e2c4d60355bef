"""`huddle statusline`: one line for Claude Code's status bar (and tmux, prompts).

It runs on every message of every session, so it must be fast and never pile up:
standard library only (no click, no msgspec), a hard time budget, and no parsing
of transcripts here. It reads the board huddle left in its cache, notices when
that board is stale (a session file moved), asks for a refresh in the background
(one refresher at a time, whatever number of status lines ask), and overlays the
live Claude Code registry (sessions/<pid>.json, tiny JSON, in the folder the board
was read from) with the board's own rules (`huddle.model.attention`), so "needs you"
is right even before the refresh lands.
"""

from __future__ import annotations

import os
import sys
import time

from huddle.io import folders, private, procs
from huddle.io.boardfile import board_path, dirs_moved, files_moved, read_board, read_row
from huddle.io.safefile import read_small
from huddle.io.visible import visible
from huddle.model import attention as rules

BUDGET = float(os.environ.get("HUDDLE_STATUSLINE_BUDGET", "0.25"))  # seconds, hard
STALE_AFTER = 10.0  # refresh a board older than this even if nothing seemed to move


def parse_json(text: str):
    """JSON with CPython's C scanner, without importing the json package (which pulls in
    re and enum: a third of this command's start-up). Falls back to json elsewhere."""
    try:
        from _json import make_scanner
    except ImportError:  # not CPython
        import json

        return json.loads(text)

    class Options:
        strict = True
        object_hook = None
        object_pairs_hook = None
        parse_float = float
        parse_int = int
        parse_constant = float  # NaN, Infinity, -Infinity
        memo: dict = {}  # noqa: RUF012 (the scanner's memo: one per parse is what it wants)

    s = text.strip()
    try:
        # typeshed types the context as the scanner class; any object with these attributes is what C reads
        val, end = make_scanner(Options())(s, 0)  # type: ignore[arg-type]
    except StopIteration:
        raise ValueError("not JSON") from None
    if end != len(s):
        raise ValueError("extra data after the JSON value")
    return val


def read_input(raw: str) -> dict:
    """Claude Code's statusLine JSON; anything else is tolerated as no input."""
    try:
        val = parse_json(raw) if raw.strip() else {}
    except Exception:  # malformed input of any kind: print the board line anyway
        return {}
    return val if isinstance(val, dict) else {}


def load_board(path: str) -> dict | None:
    return read_board(path, whole=False)


def is_stale(board: dict, deadline: float) -> bool:
    """Whether the board may say something else now: old, a folder or a file moved, or
    a row's state is one time alone has moved since (its `next_change` is past:
    huddle.model.attention.next_change)."""
    now = time.time()
    if now - (board.get("written_at") or 0) > STALE_AFTER:
        return True
    if dirs_moved(board.get("dirs") or []):
        return True
    for s in board["sessions"]:
        if time.monotonic() > deadline:
            return True  # out of time to look: assume stale, the refresher will tell
        moves = s.get("next_change")
        if isinstance(moves, (int, float)) and moves <= now:
            return True
        if files_moved(s.get("files") or []):
            return True
    return False


LOCK_FD = 3  # where the refresher finds the lock it is handed


def kick_refresh(home: str) -> None:
    """Start `python -m huddle.refresh` detached, unless one is already running.
    The lock is taken here and held across the spawn, then handed to the refresher
    (its descriptor 3, the same open file): taking it only to look, then letting go
    before the spawn, let a dozen status lines asking at once start a dozen."""
    lock = os.path.join(home, "cache", "refresh.lock")
    try:
        import fcntl

        fd = private.create(lock, os.O_RDWR)
    except OSError:
        return
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return  # a refresher holds it (or one is being started): do not pile up
        # posix_spawn, not subprocess: no import, no fork of this process, its own session.
        devnull = os.open(os.devnull, os.O_RDWR)
        try:
            os.posix_spawn(
                sys.executable,
                [sys.executable, "-m", "huddle.refresh"],
                {**os.environ, "HUDDLE_REFRESH_LOCK_FD": str(LOCK_FD)},
                file_actions=[
                    *((os.POSIX_SPAWN_DUP2, devnull, n) for n in (0, 1, 2)),
                    (os.POSIX_SPAWN_DUP2, fd, LOCK_FD),
                ],
                setsid=True,
            )
        except (OSError, AttributeError, NotImplementedError):
            pass
        finally:
            os.close(devnull)
    finally:
        os.close(fd)  # the lock stays with the refresher's copy (or goes, if none started)


def overlay_registry(rows: list[dict], claude_dir: str, deadline: float, path: str = "") -> None:
    """Claude Code rewrites sessions/<pid>.json whenever its status changes: the
    freshest word on who needs you, cheaper than any transcript. A session the board
    file's head leaves out (settled long ago) is looked up in the whole board (`path`)."""
    folder = os.path.join(claude_dir, "sessions")
    try:
        names = [n for n in os.listdir(folder) if n.endswith(".json")]
    except OSError:
        return
    by_id = {r["id"]: r for r in rows if r.get("source") == "claude" and isinstance(r.get("id"), str)}
    newest: dict[str, dict] = {}  # per session, its newest entry (a killed process's may linger)
    for n in names:
        if time.monotonic() > deadline:
            break
        try:
            val = parse_json(read_small(os.path.join(folder, n)).decode())  # a FIFO here must not block
        except (OSError, ValueError, UnicodeDecodeError, RecursionError):
            continue  # half-written (or not a file at all): the cached state stands this round
        if not isinstance(val, dict) or not isinstance(val.get("sessionId"), str):
            continue  # (a shape the registry never has: the refresher says what it is)
        prev = newest.get(val["sessionId"])
        if prev is None or _updated(val) > _updated(prev):
            newest[val["sessionId"]] = val
    for val in newest.values():
        try:
            _overlay(rows, by_id, val, path)
        except Exception:  # an odd value in one entry costs that entry's word, never the line
            continue


def _updated(val: dict) -> float:
    t = val.get("updatedAt")
    return t if isinstance(t, (int, float)) and not isinstance(t, bool) and t == t else 0


def _overlay(rows: list[dict], by_id: dict[str, dict], val: dict, path: str) -> None:
    """One registry entry's word on its session's row."""
    sid = val["sessionId"]
    row = by_id.get(sid)
    if row is None and path:
        found = read_row(path, f"claude:{sid}")  # (the one row decoded, the others left as bytes)
        if found is not None:
            row = dict(found)
            rows.append(row)
            by_id[sid] = row
    if row is None:
        row = {"id": sid, "source": "claude", "title": val.get("name") or "", "state": None}
        rows.append(row)
        by_id[sid] = row
    # The same rules as the board's (huddle.model.attention): a gone process has ended;
    # an unknown one (another pid namespace) still tells its status.
    alive = procs.alive(val.get("pid"), val.get("procStart"), val.get("pidDomain"))
    before = row.get("state")
    state = rules.with_process_status(before, val.get("status"), bool(row.get("background")))
    state = rules.with_liveness(state, alive)
    if state != before:
        row["state"] = state
        if state == rules.NEEDS_YOU:
            why = val.get("waitingFor")
            row["waiting_for"] = why if isinstance(why, str) and why else "your answer"


def summarise(inp: dict, board: dict | None, stale: bool) -> dict:
    me = inp.get("session_id")
    rows = (board or {}).get("sessions") or []
    count = (board or {}).get("count", len(rows))
    others = [r for r in rows if r.get("id") != me]
    need = [r for r in others if r.get("state") == rules.NEEDS_YOU]
    working = [r for r in others if r.get("state") in (rules.WORKING, rules.WAITING)]
    cost = got if isinstance(got := inp.get("cost"), dict) else {}
    ctx = got if isinstance(got := inp.get("context_window"), dict) else {}
    pct = ctx.get("used_percentage")
    if pct is None and ctx.get("context_window_size"):
        used = (ctx.get("total_input_tokens") or 0) + (ctx.get("total_output_tokens") or 0)
        pct = 100.0 * used / ctx["context_window_size"]
    mine = next((r for r in rows if r.get("id") == me), None)
    usd = cost.get("total_cost_usd")
    if usd is None and mine is not None:
        usd = mine.get("cost_usd")
    return {
        "session": {"id": me, "cost_usd": usd, "context_percent": pct},
        "needs_you": [
            {"id": r.get("id"), "source": r.get("source"), "title": r.get("title"), "waiting_for": r.get("waiting_for")}
            for r in need
        ],
        "working": len(working),
        "sessions": max(count, len(rows)),
        "stale": stale or board is None,
    }


def limits(inp: dict, home: str, now: float) -> dict:
    """Plan quotas (huddle.io.quota): Claude Code's own reading of this call kept, and
    every agent's last reading with its pace, {agent: {window: pace}}."""
    from huddle.io import quota

    try:
        mine = quota.from_claude(inp, now)
        if mine:
            quota.record(home, "claude", mine, parse_json)
        out: dict = {}
        for agent, windows in quota.load(home, parse_json).items():
            for window, readings in windows.items():
                if readings:
                    p = quota.pace(readings, now)
                    if not p.get("reset"):
                        out.setdefault(agent, {})[window] = p
        return out
    except Exception:  # (a quota is a nicety: the line comes first)
        return {}


def _quota_parts(s: dict) -> tuple[list[str], list[str]]:
    from huddle.io import quota

    mine, others = [], []
    for agent, windows in (s.get("limits") or {}).items():
        shown = [
            quota.short(w, p)
            for w, p in sorted(windows.items())
            if w == "five_hour" or (isinstance(p.get("used"), (int, float)) and p["used"] >= 50)
        ]
        if agent == "claude":
            mine += shown
        elif shown:
            others.append(f"{agent} " + " ".join(shown))
    return mine, others


def _finite(v: object) -> float | None:
    """A number a format can say (Claude Code's input is JSON: 1e400 and 10**400 are numbers)."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    try:
        f = float(v)
    except OverflowError:
        return None
    return f if f == f and abs(f) != float("inf") else None


def render(s: dict) -> str:
    parts = []
    me = s["session"]
    usd, pct = _finite(me.get("cost_usd")), _finite(me.get("context_percent"))
    if usd is not None:
        parts.append(f"${usd:.2f}")
    if pct is not None:
        parts.append(f"ctx {pct:.0f}%")
    mine, theirs = _quota_parts(s)
    parts += mine
    others = []
    if s["needs_you"]:
        n = len(s["needs_you"])
        first = s["needs_you"][0]
        hint = visible(str(first.get("title") or "")[:24])
        others.append(f"✋ {n} need{'s' if n == 1 else ''} you" + (f" ({hint})" if n == 1 and hint else ""))
    if s["working"]:
        others.append(f"⚙ {s['working']} working")
    others += theirs
    line = " · ".join(parts)
    if others:
        line = (line + " │ " if line else "") + " · ".join(others)
    return line or "huddle: all quiet"


def run(argv: list[str], stdin=None) -> str:
    start = time.monotonic()
    deadline = start + BUDGET
    as_json = "--json" in argv
    stdin = stdin if stdin is not None else sys.stdin
    try:
        raw = "" if stdin is None or stdin.isatty() else stdin.read()
    except (OSError, ValueError):
        raw = ""
    inp = read_input(raw)
    home = folders.huddle_home()
    path = board_path(home)
    board = load_board(path)
    stale = board is None or is_stale(board, deadline)
    if stale:
        kick_refresh(home)
    if board is None:
        board = _wait_for_board(path, deadline)
    rows = [dict(r) for r in (board or {}).get("sessions", [])]
    claude_dir = ((board or {}).get("folders") or {}).get("claude")
    if claude_dir:  # where the board's Claude sessions were read from
        overlay_registry(rows, claude_dir, deadline, path)
    count = (board or {}).get("count", 0)
    _add_mine(inp, rows, count, path)
    summary = summarise(inp, {"sessions": rows, "count": count} if board is not None or rows else None, stale)
    got = limits(inp, home, time.time())
    if got:
        summary["limits"] = got
    if as_json:
        import json  # only for the JSON form

        return json.dumps(summary, ensure_ascii=False)
    return render(summary)


def _wait_for_board(path: str, deadline: float) -> dict | None:
    """First run (or a corrupt cache): wait for the refresher within the budget."""
    while time.monotonic() < deadline - 0.02:
        time.sleep(0.02)
        board = load_board(path)
        if board is not None:
            return board
    return None


def _add_mine(inp: dict, rows: list[dict], count: int, path: str) -> None:
    """This session's row, when Claude Code says no cost and the board file's head left
    it out (settled long ago: its cost is in the whole board)."""
    me = inp.get("session_id")
    cost = got if isinstance(got := inp.get("cost"), dict) else {}
    if me and cost.get("total_cost_usd") is None and count > len(rows) and all(r.get("id") != me for r in rows):
        mine = read_row(path, f"claude:{me}")
        if mine is not None:
            rows.append(dict(mine))


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if "-h" in argv or "--help" in argv:
        print(
            "usage: huddle statusline [--json]\n\nReads Claude Code's statusLine JSON on stdin and prints one line:\n"
            "this session's cost and context use, and who needs you across all sessions."
        )
        return 0
    try:
        print(run(argv))
    except Exception:  # a status bar must always get a line
        print("huddle: …")
    return 0
