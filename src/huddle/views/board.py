"""The board: every session with its attention state, needs-you first.

`board_json` is what `huddle status --json` prints and `GET /api/sessions` returns.
"""

from __future__ import annotations

import time
import weakref
from typing import TYPE_CHECKING, Any, TypeVar

import msgspec
from msgspec import UNSET

from huddle.cost import pricing
from huddle.io.boardfile import write_board
from huddle.model.attention import YOUR_TURN, settled, urgency
from huddle.model.rows import Cost, Kept, Row, as_row, plain
from huddle.model.session import Session
from huddle.model.signals import NOTHING, Live
from huddle.model.times import parse_time
from huddle.sources.registry import resume_command

from .files import file_counts
from .states import Debouncer, State, classify, said_state

if TYPE_CHECKING:
    from huddle.core import Huddle


R = TypeVar("R", bound=Row | Kept)


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


def session_cost(s: Session, table: pricing.Table | None = None) -> Cost:
    if table is None:
        return Cost(usd=None, unpriced=sorted(m for m in s.model_usage if m))
    return Cost(**pricing.session_cost(s, table))


RECHECK = 5.0  # seconds: time alone can move a state (idle after a threshold)
# Session -> (what the row was built from, the row, the session's state). A row is built
# again only when the session, its live signals, the pricing or the clock moved: with
# nothing changed, a board of 1,000 sessions is a few milliseconds.
_built: weakref.WeakKeyDictionary[Session, tuple[tuple[Any, ...], Row, State]] = weakref.WeakKeyDictionary()


def _build(
    h: Huddle, s: Session, live: Live, problem: str | None, at: float | None, table: pricing.Table | None
) -> tuple[Row, State]:
    error = s.error or problem
    try:
        st, per = classify(s, live, at=at, idle_after=getattr(h, "idle_after", 30 * 60.0))
    except Exception as exc:  # a bug in the rules costs this row its state, not the board
        st, per = State(YOUR_TURN), {}
        error = error or f"state: {type(exc).__name__}: {exc}"
    empty = not s.has_conversation and s.started_at is None and not error and not live.alive
    # (counted_only: a telemetry twin, counted in usage; its session is shown from its own files)
    empty = empty or getattr(s, "counted_only", False)
    answer = live.facts.get("answer")  # a run huddle hosts and can answer (huddle.answer): what is pending
    row = s.summary(
        Row,
        tokens=s.usage.total,
        cost=session_cost(s, table),
        resume=resume_command(s.source, s.id) or UNSET,
        background=st.background,
        pid=UNSET if live.pid is None else live.pid,
        answer=UNSET if answer is None else answer,
        empty=True if empty else UNSET,  # nothing said or done, ever (a 0-byte or summary-only file): off the board
    )
    row.error = error or UNSET
    said_state(row, st)
    for a in row.agents:
        ast = per.get(a.id)
        if ast is not None:
            said_state(a, ast)
    return row, st


def listed(row: Row | Kept) -> bool:
    """Whether a board row is shown: a session with no conversation is not (`huddle show
    ID` still reads it)."""
    return not row.empty


def session_entry(
    h: Huddle,
    s: Session,
    at: float | None = None,
    debounce: Debouncer | None = None,
    table: pricing.Table | None = None,
    fresh: bool = False,
) -> Row:
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
    row, st = msgspec.structs.replace(hit[1]), hit[2]  # (a copy: the one built is kept)
    if debounce is not None and at is None:
        shown = debounce(s.key, st, signal=live.word())
        if shown is not st:
            said_state(row, shown)
            row.background = shown.background
    return row


def _first(row: Row | Kept) -> tuple[int, str]:
    return (-urgency(row.state), row.updated_at or "")  # (sorted down)


def _then(row: Row | Kept) -> tuple[str, str]:
    return (row.source, row.id)  # (sorted up)


def order_key(row: Row | Kept) -> list[Any]:
    """What a row sorts by: urgency and time (both down), then source and id (up). The
    one order of the board (`sort_rows`; stored.patching splices rows into it)."""
    return [*_first(row), *_then(row)]


def sort_rows(rows: list[R]) -> list[R]:
    """Most urgent first (needs you, then waiting...), most recently updated first within,
    then by source and id (`order_key`): rows read afresh and rows kept in the cache come
    in no set order, and the same board must come out the same whichever were which."""
    rows.sort(key=_then)
    # (urgency up and the time down in one stable sort: reversed, equal keys keep their order)
    rows.sort(key=_first, reverse=True)
    return rows


def _before(a: tuple[Any, Any], b: tuple[Any, Any]) -> bool:
    """Whether a row sorted by (`_first`, `_then`) `a` comes before one by `b`."""
    return a[0] > b[0] or (a[0] == b[0] and a[1] < b[1])


# The listed sleeping rows in board order and their sort keys, while the same rows sleep:
# a server says the board many times between changes (sorting 3,000 rows: 3-4 ms each).
_asleep_order: tuple[tuple[Any, ...], list[Any], list[tuple[Any, Any]]] | None = None
# The last board `with_asleep` gave, those rows in order, and where each other row stands
# among them: views.said.RowTexts cuts the sleeping rows' text there (`placement`).
_placed: tuple[list[Any], list[Any], list[tuple[int, Any]]] | None = None


def placement(rows: list[Any]) -> tuple[list[Any], list[tuple[int, Any]]] | None:
    """(the sleeping rows in board order, the same list while they sleep; each other
    row with the index of the sleeping row it stands before) if `rows` is the board
    `with_asleep` gave last, else None."""
    placed = _placed
    return (placed[1], placed[2]) if placed is not None and placed[0] is rows else None


def with_asleep(made: list[R], asleep: list[Any]) -> list[R]:
    """`sort_rows(made + asleep)`, the sleeping rows' order kept from the last call
    while they are the same objects (model.rows.Kept: core.cache.Dormant.kept), the few
    others placed in it by halving."""
    global _asleep_order, _placed
    key = tuple(asleep)
    last = _asleep_order
    if last is None or last[0] != key:
        ordered = sort_rows(list(asleep))
        last = _asleep_order = (key, ordered, [(_first(r), _then(r)) for r in ordered])
    _key, ordered, keys = last
    out: list[Any] = []
    cuts: list[tuple[int, Any]] = []
    at = 0
    for r in sort_rows(made):
        k = (_first(r), _then(r))
        lo, hi = at, len(keys)
        while (
            lo < hi
        ):  # (the first sleeping row that does not come before it: a tie goes to `made`, as a stable sort put it)
            mid = (lo + hi) // 2
            if _before(keys[mid], k):
                lo = mid + 1
            else:
                hi = mid
        out += ordered[at:lo]
        out.append(r)
        cuts.append((lo, r))
        at = lo
    out += ordered[at:]
    _placed = (out, ordered, cuts)
    return out


def still(row: Row) -> bool:
    """Whether time alone cannot move this row: its state is settled (model.attention:
    idle, ended), or there is nothing in it (off the board until a line or a process)."""
    return settled(row.state) or bool(row.empty)


def brief_of(row: Row) -> dict[str, Any]:
    """A row's brief as the keeper keeps it (model.rows.Brief's fields, what sorts and
    lists it and what the status line's board file shows: only a flag of what is tested
    as one, of the cost its sum in dollars), and the keeper's `still` and `process`
    (whether it names one, which may go)."""
    out = {
        "state": row.state,
        "background": bool(row.background),
        "id": row.id,
        "source": row.source,
        "title": row.title,
        "project": row.project,
        "state_since": row.state_since,
        "waiting_for": row.waiting_for,
        "tokens": row.tokens,
        "cost": {"usd": row.cost.usd},
        "updated_at": row.updated_at,
        "still": still(row),
        "process": row.pid is not UNSET,
    }
    if row.empty:
        out["empty"] = True
    if row.pid is not UNSET:
        out["pid"] = row.pid
    return out


def kept_rows(rows: dict[str, Row]) -> dict[str, tuple[Row, dict[str, Any]]]:
    """Board rows as the keeper keeps them: each with its brief."""
    return {k: (r, brief_of(r)) for k, r in rows.items()}


def leave_board(h: Huddle, board: dict[str, Any], built: dict[str, Row] | None = None) -> None:
    """The board left where the standard-library status line reads it, and its rows with
    the keeper (what a sleeping session shows next time). `built`: every row the board
    was built with, listed or not (board_json's)."""
    if not h.settings.huddle_home:
        return
    with h.lock:
        if h.keeper is not None and h.lazy:
            made = built or {r.key: r for r in board.get("sessions", ()) if isinstance(r, Row)}
            h.keeper.save(h, kept_rows(made))
        files = h.board_files()
    plain_board = {**board, "sessions": [plain(r) for r in board.get("sessions", ())]}
    write_board(h.settings.huddle_home, plain_board, files, h.watch_dirs(), h.settings.folders)


def rows_key(h: Huddle, table: pricing.Table | None) -> list[Any]:
    """What a kept row was built with besides its session: the prices and the idle time."""
    return [repr(sorted(table.describe().items())) if table is not None else None, getattr(h, "idle_after", None)]


# The last rows typed and what they were typed from: the keeper gives a server the same
# dict while the same sessions sleep (core.keeper.Keeper.kept_rows).
_typed: tuple[dict[str, Any], dict[str, Row | Kept]] | None = None


def typed(kept: dict[str, Any]) -> dict[str, Row | Kept] | None:
    """Rows as a store gave them, typed (a kept brief stays one); None if one is not a
    row (a store from another build: its sessions are read again). The same dict given
    again gives the same (not to be changed)."""
    global _typed
    last = _typed
    if last is not None and last[0] is kept:
        return last[1]
    try:
        out = {k: v if isinstance(v, (Row, Kept)) else as_row(v) for k, v in kept.items()}
    except (msgspec.ValidationError, TypeError):
        return None
    _typed = (kept, out)
    return out


def cached_rows(h: Huddle) -> dict[str, Row] | None:
    """The listed rows of the cached sessions as the cache last saw them, if built with
    the prices and idle time in force; None if not (the first read builds them)."""
    if h.cache is None or h.cache.meta().get("rows") != rows_key(h, pricing_table(h)):
        return None
    rows = typed({k: row for k, row in h.cache.rows() if isinstance(row, dict)})
    return None if rows is None else {k: r for k, r in rows.items() if isinstance(r, Row) and listed(r)}


def board_json(
    h: Huddle,
    at: float | None = None,
    debounce: Debouncer | None = None,
    raw: bool = False,
    built: dict[str, Row] | None = None,
) -> dict[str, Any]:
    """The board. `raw`: a sleeping session's row may be given as kept (model.rows.Kept:
    its brief, with its JSON beside it), for a board said as JSON (`said_json`). `built`:
    given every row built, listed or not (what the keeper keeps: `leave_board`)."""
    table = pricing_table(h)
    kept: dict[str, Row | Kept] = {}
    keeper = h.keeper
    cache = h.cache
    if h.dormant and keeper is not None:
        # sessions left unread (huddle's cache): their rows as last built, if built alike
        if at is not None or cache is None or cache.meta().get("rows") != rows_key(h, table):
            h.wake_all()
        got = typed(keeper.kept_rows() if raw and at is None else keeper.rows())
        if got is None:
            h.wake_all()
        kept = got or {}
    sessions = h.loaded_sessions()
    made = {s.key: session_entry(h, s, at=at, debounce=debounce, table=table) for s in sessions}
    if built is not None:
        built.update(made)
    if at is None and h.lazy and cache is not None and cache.meta().get("rows") != rows_key(h, table):
        cache.set_meta(rows=rows_key(h, table))
    rows = with_asleep([r for r in made.values() if listed(r)], [r for r in kept.values() if listed(r)])
    out: dict[str, Any] = {"sessions": rows}
    notes = board_notes(h)
    if notes:
        out["notes"] = notes
    files = file_counts(h, {**kept, **made})
    if files:
        out["files"] = files  # per agent: files read into sessions, not sessions, not read (huddle doctor)
    return out
