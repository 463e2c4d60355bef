"""The overview's per-session summaries, kept between runs (`$HUDDLE_HOME/cache/overview.db`).

The overview (views/overview.py) takes its tokens and cost from the usage index; what
the usage index does not hold (what was said and done, and when: messages, tool calls
and their errors, the minutes a session was active) comes from here. The file is a
handle cache of its own (core.keeper, TextMode: a session sleeps while nothing it was
read from moved) whose row per session is its summary:

    b      {15-minute UTC bucket: [prompts, replies, tool calls, tool errors, minute mask]}
    tools  {UTC day: {tool: [calls, errors]}}

Buckets are 15 minutes so that any time zone's hours can be said from them (India's
+5:30, Nepal's +5:45); a bucket's minute mask (bit m: something happened in its minute
m) says active minutes whatever order the events came in, and OR-ing it is idempotent.

A first build reads every session in forked workers, which summarise each session
whole where they read it (FirstRead.pack); a session that comes back unpacked (it
shares responses with another, or its title is decided across its folder) is read
whole again here. Later runs read what moved: a session's new events (those past the
`seq` its row was made up to, in the same `epoch`) are added to its row; a session
read again from its start is summarised again.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from huddle.model import events as ev
from huddle.model.session import Session
from huddle.model.times import project_name

if TYPE_CHECKING:
    from huddle.core import FirstRead
    from huddle.sources import Handle
    from huddle.sources.settings import Settings

CACHE_NAME = "overview.db"
ROW_FORMAT = 1  # bump when what a row says changes: rows of another format are made again
BUCKET = 900  # seconds in a bucket
PROMPTS, REPLIES, CALLS, ERRORS, MINUTES = range(5)
SPAWN = "sub-agent"  # the tool an order (a lead starting a sub-agent) is counted under
OPEN_MAX = 500  # calls kept waiting for their results, per session (the oldest go first)
NAME_MAX = 120  # characters of a tool's name kept
TOOLS_MAX = 300  # tools named per session and day; past them, OTHER
OTHER = "(other tools)"
GAP = 300  # seconds: events this close are one stretch of work (the minutes between them were active)


def _day(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).date().isoformat()


def empty_row(s: Session) -> dict[str, Any]:
    return {
        "v": ROW_FORMAT,
        "epoch": s.epoch,
        "seq": 0,
        "last": None,
        "open": {},
        "b": {},
        "tools": {},
        "first": None,
        "end": None,
    }


def _named(row: dict[str, Any], s: Session) -> dict[str, Any]:
    """What a row says of its session beside its counts (it can move with no new event:
    a title decided across a folder)."""
    row.update(key=s.key, source=s.source, id=s.id, title=s.title, project=project_name(s.cwd))
    return row


def add_events(row: dict[str, Any], s: Session, upto: int | None = None) -> dict[str, Any]:
    """Add the session's events from the row's `seq` on (up to `upto`, exclusive) to the
    row; it then stands at `upto` (or the session's next seq)."""
    start = row["seq"]
    end = s.next_seq if upto is None else upto
    buckets: dict[int, list[int]] = row["b"]
    tools: dict[str, dict[str, list[int]]] = row["tools"]
    waiting: dict[str, str] = row["open"]
    last = row["last"]
    first, latest = row["first"], row["end"]
    days: dict[int, str] = {}
    for e in s.events:
        if e.seq < start or e.seq >= end or e.copied:
            continue
        k = e.kind
        if k == ev.USAGE or k == ev.TITLE:
            continue  # (usage comes from the usage index; a title is no activity)
        t = e.t if e.t is not None else last
        if t is None:
            continue  # (nothing timed yet: the bucket is not known)
        prev, last = last, t
        if first is None or t < first:
            first = t
        if latest is None or t > latest:
            latest = t
        n = int(t // BUCKET)
        cell = buckets.get(n)
        if cell is None:
            cell = buckets[n] = [0, 0, 0, 0, 0]
        if prev is not None and 60 <= t - prev <= GAP:  # (working on between them: a long call, a reply)
            _fill(buckets, prev, t)
        else:
            cell[MINUTES] |= 1 << int((t - n * BUCKET) // 60)
        if k == ev.PROMPT:
            cell[PROMPTS] += 1
        elif k == ev.SAY:
            cell[REPLIES] += 1
        elif k == ev.TOOL_CALL or k == ev.ORDER:
            name = (e.name[:NAME_MAX] or "?") if k == ev.TOOL_CALL else SPAWN
            cell[CALLS] += 1
            dn = n // 96  # (the day of a bucket: 96 buckets a day)
            day = days.get(dn) or days.setdefault(dn, _day(dn * 86400))
            per = tools.setdefault(day, {})
            if name not in per and len(per) >= TOOLS_MAX:
                name = OTHER  # (a file naming thousands of tools costs its row no more than this)
            got = per.get(name)
            if got is None:
                per[name] = [1, 0]
            else:
                got[0] += 1
            if e.id:
                waiting[e.id] = name
                if len(waiting) > OPEN_MAX:
                    del waiting[next(iter(waiting))]
        elif k == ev.TOOL_RESULT:
            called = waiting.pop(e.id, None) if e.id else None
            if e.ok is False:
                cell[ERRORS] += 1
                dn = n // 96
                day = days.get(dn) or days.setdefault(dn, _day(dn * 86400))
                per = tools.setdefault(day, {})
                called = called or "?"
                got = per.setdefault(called if called in per or len(per) < TOOLS_MAX else OTHER, [0, 0])
                got[1] += 1
    row.update(seq=end, last=last, first=first, end=latest)
    return row


def _fill(buckets: dict[int, list[int]], a: float, b: float) -> None:
    """Every minute from time `a` to time `b` marked active."""
    m, last = int(a // 60), int(b // 60)
    while m <= last:
        n = m * 60 // BUCKET
        cell = buckets.get(n)
        if cell is None:
            cell = buckets[n] = [0, 0, 0, 0, 0]
        cell[MINUTES] |= 1 << (m - n * (BUCKET // 60))
        m += 1


def summary(s: Session, upto: int | None = None) -> dict[str, Any]:
    """A session's row from its whole timeline."""
    return _named(add_events(empty_row(s), s, upto), s)


def _pack(h: Handle) -> tuple[dict[str, Any], dict[str, Any]]:
    """In a first build's worker, where the session is read whole: its row."""
    return summary(h.session), {}


def _current(row: Any) -> bool:
    return isinstance(row, dict) and row.get("v") == ROW_FORMAT


def _usable(old: Any, s: Session) -> bool:
    return (
        _current(old)
        and old.get("epoch") == s.epoch
        and isinstance(old.get("seq"), int)
        and old["seq"] <= s.next_seq  # (the events past it are all held: read since it was woken)
    )


def summaries(settings: Settings, first: FirstRead | None = None) -> tuple[dict[str, dict[str, Any]], list[str]]:
    """Every session's row, the sessions that moved read (their new bytes only) and
    their rows brought level; (rows by key, notes). `first`: how sessions read from
    their start are read (default: forked workers, each summarising what it read)."""
    from huddle.core import FirstRead, Huddle, Keeper, TextMode

    h = Huddle(settings, keep=Keeper(TextMode(), CACHE_NAME))
    if h.keeper is None or h.cache is None:  # no home folder: read everything, keep nothing
        h = Huddle(settings)
        h.refresh()
        return {k: summary(x.session) for k, x in h.handles.items()}, list(h.notes)
    h.keeper.autosave = False  # written once, below, with the rows
    h.refresh(first or FirstRead(pack=_pack))
    notes = list(h.notes)
    cache = h.cache
    kept = {k: d.row for k, d in h.dormant.items()}
    h.wake([k for k, row in kept.items() if not _current(row)])  # (another format's rows: made again)
    rows: dict[str, dict[str, Any]] = {}
    fresh: dict[str, dict[str, Any]] = {}
    whole: list[str] = []
    for key, handle in h.handles.items():
        s = handle.session
        if s.complete:
            fresh[key] = summary(s)
            continue
        old: Any = cache.row_of(key) if key in cache.heads else None
        if _usable(old, s):
            fresh[key] = _named(add_events(old, s), s)
        else:
            whole.append(key)
    held = {k: (h.handles[k].session.next_seq, h.handles[k].session.epoch) for k in whole}
    for s in h.read_whole(whole):
        upto, epoch = held[s.key]
        row = summary(s, upto)
        row["epoch"] = epoch
        fresh[s.key] = _named(row, h.handles[s.key].session)
    for key in h.dormant:
        got: Any = kept.get(key)
        if got is None:  # (packed by this run's workers: not in the store before it)
            got = h.dormant[key].row
        if _current(got):
            rows[key] = got
    rows.update(fresh)
    h.keeper.save(h, {k: (r, {}) for k, r in fresh.items()})
    return rows, notes
