"""What another machine wrote, checked before any view sees it.

The hub holds rows from every machine, each written by whatever huddle (or psql) that
machine ran: a row that is not a JSON object, one nested 5,000 deep, a time of 1e300 or
NaN, a count past any model's window. Each costs its own row: a board row is decoded
and shaped here (a field of the wrong type is emptied, a number that is no number is
none), a response out of range is left out of every sum in SQL (`sums.good`), and
each is said in a note naming the machine and the session (read.bad_notes for responses). `problems(conn)` lists them
all for `huddle doctor --hub`.
"""

from __future__ import annotations

import math
from typing import Any

import msgspec

from huddle.model.times import LATEST

from .sums import good

INT_MAX = (1 << 63) - 1
_TEXT = (
    *("title", "cwd", "project", "state", "state_since", "started_at", "updated_at", "waiting_for", "doing"),
    *("resume", "error", "machine", "pushed_at", "label", "name", "type", "description", "parent", "tool_use_id"),
)
_COUNTS = ("tokens", "urgency", "skipped_lines", "depth")
_MAPS = ("usage", "models", "cost", "events")
_LISTS = ("agents", "background", "machines")

_decode = msgspec.json.Decoder().decode


def board_row(text: str | bytes | None) -> tuple[dict[str, Any] | None, str]:
    """A session's board row as the hub keeps it (its JSON text), shaped as the views
    expect it; or None and why it cannot be one."""
    if text is None:
        return None, "no row"
    try:
        val = _decode(text)
    except RecursionError:
        return None, "its row is nested too deep to read"
    except msgspec.DecodeError as exc:
        return None, f"its row is not JSON huddle can read ({exc})"
    if not isinstance(val, dict):
        return None, f"its row is a JSON {type(val).__name__}, not an object"
    if not isinstance(val.get("id"), str) or not isinstance(val.get("source"), str):
        return None, "its row has no id or source"
    try:
        return _shaped(val, 0), ""
    except RecursionError:
        return None, "its row is nested too deep to read"


def _number(v: Any) -> Any:
    if isinstance(v, float) and not math.isfinite(v):
        return None
    if type(v) is int and not -INT_MAX <= v <= INT_MAX:
        return None
    return v


def _plain(v: Any, depth: int) -> Any:
    """Every number in `v` a number JSON can say (inf and NaN none, ints in 64 bits)."""
    if isinstance(v, dict):
        return {k: _plain(x, depth + 1) for k, x in v.items()}
    if isinstance(v, list):
        return [_plain(x, depth + 1) for x in v]
    return _number(v)


def _shaped(d: dict[str, Any], depth: int) -> dict[str, Any]:
    out = {k: _plain(v, depth + 1) for k, v in d.items()}
    for k in _TEXT:
        if k in out and out[k] is not None and not isinstance(out[k], str):
            out[k] = "" if k == "title" else None
    for k in _COUNTS:
        if k in out and (type(out[k]) is not int or not 0 <= out[k] <= INT_MAX):
            out[k] = 0
    for k in _MAPS:
        if k in out and not isinstance(out[k], dict):
            out[k] = {}
    for k in _LISTS:
        if k in out and not isinstance(out[k], list):
            out[k] = []
    if "agents" in out:
        out["agents"] = [_shaped(a, depth + 1) for a in out["agents"] if isinstance(a, dict)]
    for k in ("background", "machines"):
        if k in out:
            out[k] = [x for x in out[k] if isinstance(x, str)]
    cost = out.get("cost")
    if isinstance(cost, dict):
        usd = cost.get("usd")
        if usd is not None and (isinstance(usd, bool) or not isinstance(usd, (int, float))):
            cost["usd"] = None
        unpriced = cost.get("unpriced")
        cost["unpriced"] = [x for x in unpriced if isinstance(x, str)] if isinstance(unpriced, list) else []
    return out


def note(machine: str, key: str, why: str) -> str:
    return f"hub: {key} from machine {machine!r}: {why}; left out"


def problems(conn: Any, limit: int = 500) -> list[dict[str, str]]:
    """Every row of the hub no view can take as it stands, with the machine that pushed
    it and its session: what `huddle doctor --hub` says."""
    out: list[dict[str, str]] = []
    cur = conn.execute(
        "SELECT s.key, s.machine, s.row::text, s.started_at, s.updated_at, s.pushed_at FROM huddle.sessions s"
        " ORDER BY s.machine, s.key"
    )
    for key, machine, text, *times in cur:
        row, why = board_row(text)
        if row is None:
            out.append({"machine": machine, "session": key, "what": why})
        bad = [t for t in times if t is not None and not (-LATEST < t < LATEST)]
        if bad:
            out.append({"machine": machine, "session": key, "what": f"a session time out of range ({bad[0]!r})"})
        if len(out) >= limit:
            break
    conn.commit()
    cur = conn.execute(
        f"""
        SELECT s.machine, r.session_key, count(*) FROM huddle.responses r
        JOIN huddle.sessions s ON s.key = r.session_key WHERE NOT ({good("r")}) GROUP BY 1, 2 ORDER BY 1, 2
        """
    )
    for machine, key, n in cur:
        out.append({"machine": machine, "session": key, "what": f"{n} response(s) with a time or count out of range"})
    conn.commit()
    return out[:limit]
