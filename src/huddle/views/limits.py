"""`huddle usage --limits --json` == GET /api/limits: each agent's plan quota, its pace.

The share used is the agent's own figure (huddle.io.quota: Claude Code's status-line
input, Codex's rollouts), with when it was read and when the window resets. Where an
agent said none (an older Claude Code, a status line huddle does not run, an API key),
the 5-hour share is estimated, and says so: the tokens of the last five hours against
the most any five-hour block of this history used (the block a plan let through).
"""

from __future__ import annotations

import time
from typing import Any

from huddle.io import quota
from huddle.model.times import iso

AGENTS = {"claude": "Claude Code", "codex": "Codex"}
SAID_BY = {"claude": "Claude Code's status line", "codex": "Codex's rollouts"}
BLOCK = 5 * 3600.0


def refresh_codex(huddle_home: str, codex_home: str) -> None:
    """Keep the newest reading Codex's rollouts hold."""
    if not codex_home or not huddle_home:
        return
    from huddle.sources.codex.limits import latest

    quota.record(huddle_home, "codex", latest(codex_home))


def _window(agent: str, window: str, p: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {
        "window": window,
        "label": quota.NAMES.get(window, window),
        "used_percent": round(p["used"], 1),
        "resets_at": iso(p.get("resets_at")),
        "seen_at": iso(p.get("seen_at")),
        "estimate": False,
        "said_by": SAID_BY.get(agent, agent),
    }
    if p.get("reset"):
        out["reset"] = True  # (the window it told of is over: what is used now is not known)
        out["used_percent"] = None
    out["pace"] = {
        "runs_out_at": iso(p.get("runs_out_at")),
        "at_reset_percent": round(p["at_reset"], 1) if p.get("at_reset") is not None else None,
        "estimate": True,
        "says": quota.sentence(window, p),
    }
    return out


def estimated(source: str, counted: dict[str, Any], now: float) -> dict[str, Any] | None:
    """The 5-hour share of `source`'s sessions as estimated from its history (see the
    module's text), or None when it has no history to go by."""
    times: list[tuple[float, int]] = []
    for s in counted.get("sessions", ()):
        if s.get("source") != source:
            continue
        for r in s.get("rows", ()):
            if r[0] is not None:
                times.append((r[0], sum(r[3:7])))
    if not times:
        return None
    times.sort()
    best, start, total = 0, 0, 0
    for t, n in times:  # the most tokens in any window of five hours
        total += n
        while times[start][0] <= t - BLOCK:
            total -= times[start][1]
            start += 1
        best = max(best, total)
    recent = sum(n for t, n in times if now - BLOCK < t <= now)
    if best <= 0:
        return None
    first = min((t for t, _ in times if now - BLOCK < t <= now), default=None)
    return {
        "window": "five_hour",
        "label": "5-hour",
        "used_percent": round(100.0 * recent / best, 1),
        "resets_at": iso(first + BLOCK) if first is not None else None,
        "seen_at": iso(now),
        "estimate": True,
        "said_by": "an estimate: the last 5 hours' tokens against the most any 5 hours of this history used",
        "pace": {"runs_out_at": None, "at_reset_percent": None, "estimate": True, "says": ""},
    }


def report(huddle_home: str, counted: dict[str, Any] | None = None, now: float | None = None) -> dict[str, Any]:
    now = time.time() if now is None else now
    kept = quota.load(huddle_home) if huddle_home else {}
    agents = []
    notes = []
    for agent, name in AGENTS.items():
        windows = [
            _window(agent, w, quota.pace(rs, now))
            for w, rs in sorted(kept.get(agent, {}).items(), key=lambda kv: quota.WINDOWS.get(kv[0], 0))
            if rs
        ]
        if not windows and counted is not None:
            guess = estimated(agent, counted, now)
            if guess is not None:
                windows = [guess]
                notes.append(
                    f"{name} said no quota here"
                    + (" (its status line says it from 2.1.80: `huddle statusline`)" if agent == "claude" else "")
                    + ": its 5-hour share is estimated"
                )
        if windows:
            agents.append({"agent": agent, "name": name, "windows": windows})
    return {"agents": agents, "notes": notes, "at": iso(now)}


def report_for(settings: Any) -> dict[str, Any]:
    """`huddle usage --limits --json` == GET /api/limits: the kept readings, Codex's newest
    read again, and an estimate for an agent that said none (its rows with their times,
    from the usage index)."""
    refresh_codex(settings.huddle_home, settings.folder("codex"))
    counted = None
    if any(a not in quota.load(settings.huddle_home) for a in AGENTS):
        from huddle.cost.pricing import current
        from huddle.usage.index import counted_from_index

        # (a bound inside a day: the index gives its rows, with their times)
        counted, _ = counted_from_index(settings, current(settings.huddle_home), since=time.time() - 7 * 86400 - 1.5)
    return report(settings.huddle_home, counted)
