"""The board: every session with its attention state, needs-you first.

`board_json` is what `huddle status --json` prints and `GET /api/sessions` returns.
"""

from __future__ import annotations

import time
import weakref

from .session import Session, parse_time
from .states import URGENCY, Debouncer, State, classify, state_dict


def parse_at(value: str) -> float | None:
    """A time given on the command line: unix seconds or ISO 8601."""
    try:
        return float(value)
    except ValueError:
        return parse_time(value)


def pricing_table(h):
    """The pricing table for one board (loaded once, not per session)."""
    try:
        from . import pricing
    except ImportError:
        return None
    try:
        return pricing.current(h.settings.huddle_home)
    except Exception as exc:  # a bad user pricing file: say so, keep the board
        note = f"pricing: {exc}"
        if note not in h.notes:
            h.notes.append(note)
        return None


def session_cost(s: Session, table=None) -> dict:
    if table is None:
        return {"usd": None, "unpriced": sorted(m for m in s.model_usage if m)}
    from .pricing import session_cost as cost

    return cost(s, table)


_rows: "weakref.WeakKeyDictionary[Session, tuple[int, object, dict]]" = weakref.WeakKeyDictionary()


def _summary(s: Session, table) -> dict:
    """The parts of a row that change only when the session does: built once per version."""
    hit = _rows.get(s)
    if hit is None or hit[0] != s.version or hit[1] is not table:
        d = s.summary()
        d["tokens"] = s.usage.total
        d["cost"] = session_cost(s, table)
        hit = _rows[s] = (s.version, table, d)
    d = dict(hit[2])  # the row and its agents get states added: copy those, share the rest
    d["agents"] = [dict(a) for a in d["agents"]]
    return d


_states: "weakref.WeakKeyDictionary[Session, tuple[tuple, State, dict]]" = weakref.WeakKeyDictionary()
RECHECK = 5.0  # seconds: time alone can move a state (idle after a threshold)


def _classify(h, s: Session, live: dict, at: float | None) -> tuple[State, dict]:
    """Classify again only when the session, its live signals or the clock moved."""
    key = (s.version, repr(sorted(live.items())), at, int(time.time() // RECHECK) if at is None else 0)
    hit = _states.get(s)
    if hit is not None and hit[0] == key:
        return hit[1], hit[2]
    st, per = classify(s, live, at=at, idle_after=getattr(h, "idle_after", 30 * 60.0))
    per_dicts = {aid: state_dict(x) for aid, x in per.items()}
    _states[s] = (key, st, per_dicts)
    return st, per_dicts


def session_entry(h, s: Session, at: float | None = None, debounce: Debouncer | None = None, table=None) -> dict:
    """One board row: the session summary, its state and each agent's."""
    d = _summary(s, table)
    handle = h.handle(s.key)
    live: dict = {}
    if handle is not None:
        try:
            live = handle.live(at=at) or {}
        except Exception as exc:  # a source's liveness check must not cost the row
            live = {}
            d.setdefault("error", f"{s.source} liveness: {type(exc).__name__}: {exc}")
    try:
        st, per = _classify(h, s, live, at)
    except Exception as exc:
        st, per = State("your_turn"), {}
        d.setdefault("error", f"state: {type(exc).__name__}: {exc}")
    if debounce is not None and at is None:
        st = debounce(s.key, st)
    d.update(state_dict(st))
    d["background"] = st.background
    for a in d["agents"]:
        ast = per.get(a["id"])
        if ast is not None:
            a.update(ast)
    if live.get("pid") is not None:
        d["pid"] = live["pid"]
    return d


def sort_rows(rows: list[dict]) -> list[dict]:
    """Most urgent first (needs you, then waiting...), most recently updated first within."""
    rows.sort(key=lambda d: d.get("updated_at") or "", reverse=True)
    rows.sort(key=lambda d: URGENCY.get(d.get("state"), 9))
    return rows


def board_json(h, at: float | None = None, debounce: Debouncer | None = None) -> dict:
    table = pricing_table(h)
    rows = [session_entry(h, s, at=at, debounce=debounce, table=table) for s in h.sessions()]
    sort_rows(rows)
    out: dict = {"sessions": rows}
    if h.notes:
        out["notes"] = list(h.notes)
    return out
