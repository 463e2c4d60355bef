"""Codex's plan quota as its rollouts say it: the `rate_limits` of the newest
`token_count` record (primary: the 5-hour window, secondary: the week), read from the
tails of the newest rollout files only (`huddle usage --limits`, the board's header).
A record whose windows are null (an API key, another provider) says nothing."""

from __future__ import annotations

import json
import os
from typing import Any

from huddle.io import quota
from huddle.io.reader import read_tail
from huddle.io.safefile import listdir
from huddle.model.times import parse_time

NEWEST = 4  # rollout files looked at
TAIL = 256 * 1024  # bytes of each read from its end


def _newest(sessions: str) -> list[str]:
    """The newest rollout files: the newest day folders first (sessions/YYYY/MM/DD)."""
    files: list[tuple[float, str]] = []
    for year in sorted((d for d in listdir(sessions) if d.is_dir(follow_symlinks=False)), key=lambda d: d.name)[::-1]:
        for month in sorted(listdir(year.path), key=lambda d: d.name, reverse=True):
            for day in sorted(listdir(month.path), key=lambda d: d.name, reverse=True):
                for f in listdir(day.path):
                    if f.name.startswith("rollout-") and f.name.endswith(".jsonl"):
                        try:
                            files.append((f.stat(follow_symlinks=False).st_mtime, f.path))
                        except OSError:
                            continue
                if len(files) >= NEWEST:
                    return [p for _, p in sorted(files, reverse=True)[:NEWEST]]
    return [p for _, p in sorted(files, reverse=True)[:NEWEST]]


def latest(codex_home: str) -> list[dict[str, Any]]:
    """The newest reading Codex wrote (quota.from_codex's), or none."""
    best: tuple[float, list[dict[str, Any]]] | None = None
    root = os.path.join(codex_home, "sessions")
    for path in _newest(root):
        for _, line in reversed(read_tail(path, TAIL, within=codex_home)):
            if b'"rate_limits"' not in line or b'"used_percent"' not in line:
                continue
            try:
                rec = json.loads(line)
                payload = rec.get("payload") or {}
                rl = payload.get("rate_limits")
                seen = parse_time(rec.get("timestamp"))
            except (ValueError, AttributeError, RecursionError):
                continue
            if seen is None:
                continue
            readings = quota.from_codex(rl, seen)
            if readings:
                if best is None or seen > best[0]:
                    best = (seen, readings)
                break
    return best[1] if best else []
