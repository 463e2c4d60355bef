"""The board: every session with its attention state, needs-you first.

`board_json` is what `huddle status --json` prints and `GET /api/sessions` returns.
"""

from __future__ import annotations

import time
import weakref
from typing import TYPE_CHECKING, Any

from huddle.cost import pricing
from huddle.io.boardfile import write_board
from huddle.model.attention import YOUR_TURN, settled, urgency
from huddle.model.session import Session
from huddle.model.signals import NOTHING, Live
from huddle.model.times import parse_time
from huddle.sources.registry import resume_command

from .files import file_counts
from .states import Debouncer, State, classify, state_dict

if TYPE_CHECKING:
    from huddle.core import Huddle


def parse_at(value: str) -> float | None:
    """A time given on the command line: unix seconds or ISO 8601."""
    try:
        return float(value)
    except ValueError:
        return parse_time(value)


def pricing_table(h: Huddle) -> pricing.Table | None:
    """The pricing table for one board (loaded once, not per session); None if it cannot
    be had at all (`board_notes` says why). Building a board changes nothing in the core."""
    try:
        return pricing.current(h.settings.huddle_home)
    except Exception:  # a bug in the table: the board goes on without costs
        return None


def board_notes(h: Huddle) -> list[str]:
    """What a board says beside its rows: the core's notes, and why prices are missing
    or a user's pricing file is not used."""
    notes = list(h.notes)
    try:
        problem = pricing.current(h.settings.huddle_home).problem
    except Exception as exc:
        problem = f"{type(exc).__name__}: {exc}"
    if problem:
        notes.append(f"pricing: {problem}")
    return notes


def session_cost(s: Session, table: pricing.Table | None = None) -> dict[str, Any]:
    if table is None:
        return {"usd": None, "unpriced": sorted(m for m in s.model_usage if m)}
    return pricing.session_cost(s, table)


RECHECK = 5.0  # seconds: time alone can move a state (idle after a threshold)
# Session -> (what the row was built from, the row, the session's state). A row is built
# again only when the session, its live signals, the pricing or the clock moved: with
# nothing changed, a board of 1,000 sessions is a few milliseconds.
_built: weakref.WeakKeyDictionary[Session, tuple[tuple[Any, ...], dict[str, Any], State]] = weakref.WeakKeyDictionary()


def _build(
    h: Huddle, s: Session, live: Live, problem: str | None, at: float | None, table: pricing.Table | None
) -> tuple[dict[str, Any], State]:
    d = s.summary()
    d["tokens"] = s.usage.total
    d["cost"] = session_cost(s, table)
    resume = resume_command(s.source, s.id)
    if resume:
        d["resume"] = resume
    if problem:
        d.setdefault("error", problem)
    try:
        st, per = classify(s, live, at=at, idle_after=getattr(h, "idle_after", 30 * 60.0))
    except Exception as exc:  # a bug in the rules costs this row its state, not the board
        st, per = State(YOUR_TURN), {}
        d.setdefault("error", f"state: {type(exc).__name__}: {exc}")
    d.update(state_dict(st))
    d["background"] = st.background
    for a in d["agents"]:
        ast = per.get(a["id"])
        if ast is not None:
            a.update(state_dict(ast))
    if live.pid is not None:
        d["pid"] = live.pid
    if live.facts.get("answer") is not None:  # a run huddle hosts and can answer (huddle.answer): what is pending
        d["answer"] = live.facts["answer"]
    if not s.has_conversation and s.started_at is None and not d.get("error") and not live.alive:
        d["empty"] = True  # nothing said or done, ever (a 0-byte or summary-only file): off the board
    if getattr(s, "counted_only", False):
        d["empty"] = True  # (a telemetry twin: counted in usage; its session is shown from its own files)
    return d, st


def listed(row: dict[str, Any]) -> bool:
    """Whether a board row is shown: a session with no conversation is not (`huddle show
    ID` still reads it)."""
    return not row.get("empty")


def session_entry(
    h: Huddle,
    s: Session,
    at: float | None = None,
    debounce: Debouncer | None = None,
    table: pricing.Table | None = None,
    fresh: bool = False,
) -> dict[str, Any]:
    """One board row: the session summary, its state and each agent's. `fresh` builds it
    again even if nothing it is built from moved (a row looked at because time passed)."""
    handle = h.handle(s.key)
    live = NOTHING
    problem = None
    if handle is not None:
        try:
            live = handle.live(at=at)
            if not isinstance(live, Live):
                live = NOTHING
                raise TypeError("live() gave no huddle.model.signals.Live (docs/adapters.md)")
        except Exception as exc:  # a source's liveness check must not cost the row
            problem = f"{s.source} liveness: {type(exc).__name__}: {exc}"
    key = (
        s.version,
        live,
        problem,
        at,
        id(table),
        int(time.time() // RECHECK) if at is None else 0,
    )
    hit = _built.get(s)
    if hit is None or hit[0] != key or fresh:
        hit = _built[s] = (key, *_build(h, s, live, problem, at, table))
    row, st = dict(hit[1]), hit[2]
    if debounce is not None and at is None:
        shown = debounce(s.key, st, signal=live.word())
        if shown is not st:
            row.update(state_dict(shown))
            row["background"] = shown.background
    return row


def sort_rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Most urgent first (needs you, then waiting...), most recently updated first within,
    then by source and id: rows read afresh and rows kept in the cache come in no set
    order, and the same board must come out the same whichever were which."""
    rows.sort(key=lambda d: (str(d.get("source") or ""), str(d.get("id") or "")))
    # (urgency up and the time down in one stable sort: reversed, equal keys keep their order)
    rows.sort(key=lambda d: (-urgency(d.get("state")), d.get("updated_at") or ""), reverse=True)
    return rows


# What a row's brief keeps of it, known without decoding the row: what sorts and lists it
# (sort_rows, listed) and what the status line's board file shows (io.boardfile), beside
# the keeper's own two (core.cache.Row): `still`, `process`.
BRIEF: tuple[str, ...] = ("state", "empty", "background", "pid", "id", "source", "title", "project", "state_since")
BRIEF += ("waiting_for",)
BRIEF += ("tokens", "cost", "updated_at")


def still(row: dict[str, Any]) -> bool:
    """Whether time alone cannot move this row: its state is settled (model.attention:
    idle, ended), or there is nothing in it (off the board until a line or a process)."""
    return settled(row.get("state")) or bool(row.get("empty"))


def brief_of(row: dict[str, Any]) -> dict[str, Any]:
    """A row's brief (BRIEF): what is only tested for as a flag, of the cost its sum in
    dollars; and the keeper's `still` and `process` (whether it names one, which may go)."""
    out = {k: row[k] for k in BRIEF if k in row}
    for flag in ("empty", "background"):
        if flag in out:
            out[flag] = bool(out[flag])
    if "cost" in out:
        out["cost"] = {"usd": (out["cost"] or {}).get("usd")}
    out["still"] = still(row)
    out["process"] = row.get("pid") is not None
    return out


def kept_rows(rows: dict[str, dict[str, Any]]) -> dict[str, tuple[dict[str, Any], dict[str, Any]]]:
    """Board rows as the keeper keeps them: each with its brief."""
    return {k: (r, brief_of(r)) for k, r in rows.items()}


def leave_board(h: Huddle, board: dict[str, Any], built: dict[str, dict[str, Any]] | None = None) -> None:
    """The board left where the standard-library status line reads it, and its rows with
    the keeper (what a sleeping session shows next time). `built`: every row the board
    was built with, listed or not (board_json's)."""
    if not h.settings.huddle_home:
        return
    with h.lock:
        if h.keeper is not None and h.lazy:
            rows = built or {f"{r['source']}:{r['id']}": r for r in board.get("sessions", ())}
            h.keeper.save(h, kept_rows(rows))
        files = h.board_files()
    write_board(h.settings.huddle_home, board, files, h.watch_dirs(), h.settings.folders)


def rows_key(h: Huddle, table: pricing.Table | None) -> list[Any]:
    """What a kept row was built with besides its session: the prices and the idle time."""
    return [repr(sorted(table.describe().items())) if table is not None else None, getattr(h, "idle_after", None)]


def board_json(
    h: Huddle,
    at: float | None = None,
    debounce: Debouncer | None = None,
    raw: bool = False,
    built: dict[str, dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """The board. `raw`: a sleeping session's row may be given as kept (core.cache.Kept:
    its brief, with its JSON beside it), for a board said as JSON (`said_json`). `built`:
    given every row built, listed or not (what the keeper keeps: `leave_board`)."""
    table = pricing_table(h)
    kept: dict[str, dict[str, Any]] = {}
    keeper = h.keeper
    cache = h.cache
    if h.dormant and keeper is not None:
        # sessions left unread (huddle's cache): their rows as last built, if built alike
        if at is not None or cache is None or cache.meta().get("rows") != rows_key(h, table):
            h.wake_all()
        kept = keeper.kept_rows() if raw and at is None else keeper.rows()
    sessions = h.loaded_sessions()
    made = {s.key: session_entry(h, s, at=at, debounce=debounce, table=table) for s in sessions}
    if built is not None:
        built.update(made)
    if at is None and h.lazy and cache is not None and cache.meta().get("rows") != rows_key(h, table):
        cache.set_meta(rows=rows_key(h, table))
    rows = sort_rows([r for r in [*made.values(), *(r if raw else dict(r) for r in kept.values())] if listed(r)])
    out: dict[str, Any] = {"sessions": rows}
    notes = board_notes(h)
    if notes:
        out["notes"] = notes
    files = file_counts(h, {**kept, **made})
    if files:
        out["files"] = files  # per agent: files read into sessions, not sessions, not read (huddle doctor)
    return out
