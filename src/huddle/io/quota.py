"""Plan quotas as the agents say them, kept, and the pace at which they go.

Claude Code (2.1.80 and later) gives its status line `rate_limits`: `five_hour` and
`seven_day`, each with `used_percentage` and `resets_at` (unix seconds). Codex writes
`rate_limits` in its `token_count` records: `primary` and `secondary`, each with
`used_percent`, `window_minutes` and `resets_at` (or, older, `resets_in_seconds`).
Both are the provider's own figure: huddle shows it as said, never one worked out
from dollars. The last readings (a few per window) are kept in
`$HUDDLE_HOME/limits.json` (the status line writes Claude's, `huddle usage --limits`
Codex's), so the board and `huddle usage --limits` say them too.

The pace is worked out from the readings of the current window: the share used per
hour since the first reading of the window (or, with one reading, since the window
began), projected to 100%: "at this rate the 5-hour window runs out at 16:40". It is
always an estimate, and says so.

Standard library only (the status line imports it), and not even the json package
unless a reading is written (the status line gives its own parser: `load(parse=)`).
"""

from __future__ import annotations

import math
import os
import time

TYPE_CHECKING = False  # (typing and re cost the status line ~10 ms of its ~23: read by mypy alone)
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

FILE = "limits.json"
WINDOWS = {"five_hour": 5 * 3600, "seven_day": 7 * 86400}
NAMES = {"five_hour": "5-hour", "seven_day": "7-day"}
KEEP = 24  # readings kept per window


def _num(v: Any) -> float | None:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    try:
        f = float(v)
    except OverflowError:
        return None
    return f if math.isfinite(f) else None


def _when(v: Any) -> float | None:
    """resets_at: unix seconds (or milliseconds), or an ISO 8601 time."""
    f = _num(v)
    if f is not None:
        f = f / 1000.0 if f > 1e11 else f
        return f if 0 < f < 7258118400.0 else None
    if isinstance(v, str) and 10 <= len(v) <= 40:
        from datetime import datetime

        try:
            d = datetime.fromisoformat(v.replace("Z", "+00:00"))
        except ValueError:
            return None
        return d.timestamp() if d.tzinfo else None
    return None


def _reading(window: str, used: Any, resets: Any, seen: float, length: float | None = None) -> dict[str, Any] | None:
    pct = _num(used)
    if pct is None or not 0 <= pct <= 1000:
        return None
    r: dict[str, Any] = {"window": window, "used": pct, "resets_at": _when(resets), "seen_at": seen}
    if length:
        r["length"] = length
    return r


def from_claude(inp: Any, now: float | None = None) -> list[dict[str, Any]]:
    """Claude Code's status-line input's `rate_limits` as readings (none when it has none)."""
    now = time.time() if now is None else now
    rl = inp.get("rate_limits") if isinstance(inp, dict) else None
    if not isinstance(rl, dict):
        return []
    out = []
    for window in WINDOWS:
        w = rl.get(window)
        if isinstance(w, dict):
            r = _reading(window, w.get("used_percentage"), w.get("resets_at"), now, WINDOWS[window])
            if r is not None:
                out.append(r)
    return out


def from_codex(rl: Any, seen: float) -> list[dict[str, Any]]:
    """A Codex `rate_limits` (of a token_count record written at `seen`) as readings."""
    if not isinstance(rl, dict):
        return []
    out = []
    for key in ("primary", "secondary"):
        w = rl.get(key)
        if not isinstance(w, dict):
            continue
        minutes = _num(w.get("window_minutes"))
        length = minutes * 60 if minutes and minutes > 0 else None
        window = {300 * 60: "five_hour", 10080 * 60: "seven_day"}.get(int(length or 0), "")
        window = window or (f"{int(minutes)}m" if minutes else key)
        resets: Any = w.get("resets_at")
        if resets is None and _num(w.get("resets_in_seconds")) is not None:
            resets = seen + float(w["resets_in_seconds"])
        r = _reading(window, w.get("used_percent"), resets, seen, length)
        if r is not None:
            out.append(r)
    return out


def path(home: str) -> str:
    return os.path.join(home, FILE)


def load(home: str, parse: Callable[[str], Any] | None = None) -> dict[str, Any]:
    """{agent: {window: [readings, oldest first]}}; nothing when there is no good file."""
    try:
        with open(path(home), "rb") as f:
            raw = f.read(1 << 20)
    except OSError:
        return {}
    if parse is None:
        import json

        parse = json.loads
    try:
        data = parse(raw.decode("utf-8"))
    except (ValueError, RecursionError, UnicodeDecodeError):
        return {}
    if not isinstance(data, dict):
        return {}
    out: dict[str, Any] = {}
    for agent, windows in data.items():
        if isinstance(agent, str) and isinstance(windows, dict):
            out[agent] = {
                w: [r for r in rs if isinstance(r, dict) and _num(r.get("used")) is not None]
                for w, rs in windows.items()
                if isinstance(w, str) and isinstance(rs, list)
            }
    return out


def record(home: str, agent: str, readings: list[dict[str, Any]], parse: Callable[[str], Any] | None = None) -> bool:
    """Keep these readings (the same as the last one of its window is not kept again).
    Returns whether the file changed."""
    if not readings or not home:
        return False
    data = load(home, parse)
    kept = data.setdefault(agent, {})
    changed = False
    for r in readings:
        rs = kept.setdefault(r["window"], [])
        last = rs[-1] if rs else None
        if last is not None and last.get("used") == r["used"] and last.get("resets_at") == r.get("resets_at"):
            continue
        if last is not None and (last.get("seen_at") or 0) > r["seen_at"]:
            continue  # (an older reading than the kept one: an older file read later)
        rs.append(r)
        del rs[:-KEEP]
        changed = True
    if changed:
        import json

        os.makedirs(home, mode=0o700, exist_ok=True)
        tmp = f"{path(home)}.{os.getpid()}.tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(data, f, separators=(",", ":"))
        os.replace(tmp, path(home))
    return changed


def pace(readings: list[dict[str, Any]], now: float) -> dict[str, Any]:
    """The newest reading of a window and where its pace leads (an estimate)."""
    last = readings[-1]
    out: dict[str, Any] = {"used": last["used"], "resets_at": last.get("resets_at"), "seen_at": last["seen_at"]}
    resets = last.get("resets_at")
    if resets is not None and resets <= now:
        out["reset"] = True  # the window it tells of is over: what is used now is not known
        return out
    same = [r for r in readings if r.get("resets_at") == resets]
    first = same[0]
    length = last.get("length")
    t0, u0 = first["seen_at"], first["used"]
    if (len(same) < 2 or last["seen_at"] - t0 < 60) and resets is not None and length:
        t0, u0 = resets - length, 0.0  # one reading: the pace since the window began
    span = last["seen_at"] - t0
    rate = (last["used"] - u0) / span if span > 0 else 0.0  # percent per second
    if rate <= 0:
        return out
    runs_out = last["seen_at"] + max(0.0, 100.0 - last["used"]) / rate
    if resets is None or runs_out < resets:
        out["runs_out_at"] = runs_out
    elif resets is not None:
        out["at_reset"] = min(100.0, last["used"] + rate * (resets - last["seen_at"]))
    return out


def clock(t: float) -> str:
    lt = time.localtime(t)
    if time.strftime("%Y-%m-%d", lt) == time.strftime("%Y-%m-%d", time.localtime()):
        return time.strftime("%H:%M", lt)
    return time.strftime("%a %H:%M", lt)


def short(window: str, p: dict[str, Any]) -> str:
    """`5h 42%` with where the pace leads: `5h 42% →16:40` (runs out then), or the reset."""
    name = {"five_hour": "5h", "seven_day": "7d"}.get(window, window)
    text = f"{name} {p['used']:.0f}%"
    if p.get("runs_out_at") is not None:
        text += f" →{clock(p['runs_out_at'])}"
    elif p.get("resets_at") is not None and not p.get("reset"):
        text += f" ↻{clock(p['resets_at'])}"
    return text


def sentence(window: str, p: dict[str, Any]) -> str:
    name = NAMES.get(window, window)
    if p.get("reset"):
        return f"the {name} window has reset since the last reading"
    if p.get("runs_out_at") is not None:
        return f"at this rate the {name} window runs out at {clock(p['runs_out_at'])} (an estimate)"
    if p.get("at_reset") is not None and p.get("resets_at") is not None:
        return (
            f"at this rate {p['at_reset']:.0f}% of the {name} window is used when it resets at {clock(p['resets_at'])}"
        )
    return ""
