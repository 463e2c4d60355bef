"""The usage index: what `huddle usage` counted, kept between runs.

`$HUDDLE_HOME/cache/usage.db` is a handle cache (huddle.core.cache) of handles that
read token counts only. Beside each session's reading state (its files' read
positions, the usage events) it keeps the session's counted usage summed per UTC
day, agent and model, cost included. A run reads the appended bytes of the files that
moved, sums those sessions again, and adds up the sums of the rest: a few hundred
rows, not every response. When no session folder moved, the sources are not even
scanned. A `--since`/`--until` inside a day, or prices that changed, need the
responses themselves: every session's are read back from its handle (still not from
its files). A damaged, truncated or older index is said in one line and built again.
"""

from __future__ import annotations

import functools
import os
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import msgspec

from huddle.core.cache import USAGE_INDEX
from huddle.cost.pricing import USER_FILE, Table

from .report import _day, collect, exact_partials, session_info

if TYPE_CHECKING:
    from huddle.sources import Handle
    from huddle.sources.settings import Settings

CACHE_NAME = USAGE_INDEX
LEGACY = "usage-index.json"  # the index before usage.db: one JSON of every counted row


def pricing_key(table: Table) -> str:
    return repr(sorted(table.describe().items()))


def day_aligned(t: float | None) -> bool:
    """Whether a --since/--until falls on a UTC midnight (the sums are per UTC day)."""
    return t is None or datetime.fromtimestamp(t, UTC).time() == datetime.min.time()


def group_rows(rows: list[list[Any]], table: Table) -> list[list[Any]]:
    """Counted rows ([t, agent, model, input, output, cache read, cache write, 1-hour])
    summed per (day, agent, model): [day, agent, model, input, output, cache read,
    cache write, 1-hour, responses, cost (its exact partials: usage.add_exact) or None
    when unpriced, first t]. (The first write of the index sums every response: the
    day of a time is worked out once per day, not per response, and each group's
    columns are summed in C.)"""
    by_key: dict[tuple[str, str, str], list[list[Any]]] = {}
    days: dict[float, str] = {}
    for r in rows:
        t = r[0]
        if t is None:
            day = _day(t)
        else:
            k = t // 86400
            inside = 0.001 < t - k * 86400 < 86399.999  # far from midnight: no rounding crosses it
            day = (days.get(k) or days.setdefault(k, _day(t))) if inside else _day(t)
        key = (day, r[1], r[2])
        got = by_key.get(key)
        if got is None:
            by_key[key] = [r]
        else:
            got.append(r)
    out: list[list[Any]] = []
    prices: dict[str, Any] = {}  # model -> its Price, or None when unpriced
    for (day, agent, model), group in by_key.items():
        ts, _, _, i, o, cr, cw, c1 = zip(*group, strict=True)
        p = prices[model] if model in prices else prices.setdefault(model, table.price(model))
        cost = None if p is None else exact_partials(list(map(p.request_cost_of, i, o, cr, cw, c1)))
        known = [t for t in ts if t is not None]
        first = min(known) if known else None
        out.append([day, agent, model, sum(i), sum(o), sum(cr), sum(cw), sum(c1), len(group), cost, first])
    return out


def _entry(s: dict[str, Any], table: Table) -> dict[str, Any]:
    info = {k: s[k] for k in ("key", "source", "id", "title", "project", "started_at")}
    return {**info, "groups": group_rows(s["rows"], table), "duplicates": s.get("duplicates", 0)}


def _own_entry(h: Handle, table: Table) -> tuple[dict[str, Any], dict[str, Any]]:
    """A session's entry as if no other session shared its responses (in a worker), as
    the keeper keeps it (no brief: any unmoved session sleeps, counting tokens)."""
    s = h.session
    got = collect([s], per_session=True)["sessions"]
    return _entry(got[0] if got else {**session_info(s), "rows": []}, table), {}


def _kept(h: Any, rows: dict[str, dict[str, Any]]) -> None:
    """The index written with these entries (what a session left unread counts next time)."""
    if h.keeper is not None:
        h.keeper.save(h, {k: (r, {}) for k, r in rows.items()})


def counted_from_index(
    settings: Settings,
    table: Table,
    since: float | None = None,
    until: float | None = None,
    keep: list[Any] | None = None,
    summed: bool = False,
    first: Any = None,
) -> tuple[dict[str, Any], list[str]]:
    """The counted usage for `huddle usage`: per-session sums (`groups`) from the index,
    the sessions whose files moved read again (their new bytes only); or, when the
    sums cannot answer (a bound inside a day, other prices), every counted row.
    Returns (counted, notes), for `usage.aggregate`. `keep`, a list, is given what the
    count hangs on (core.answering.conditions: the heads as this run left them) when
    no other process wrote the index meanwhile and no note was said for this run
    alone: a report from it may be stored (huddle.io.answers). `summed`: the report
    is by day over all time, said from the kept sums when there are any: the sessions'
    own sums are then left out (not decoded: they are the most of what the index holds).
    `first` (core.FirstRead): how sessions read from their start are read (by default in
    forked workers; a process with threads, the server, reads them itself)."""
    from huddle.core import FirstRead, Huddle, Keeper, UsageMode
    from huddle.core.answering import conditions

    notes = _drop_legacy(settings.huddle_home)
    # Only token counts are needed: the sources may pass over everything else unread.
    h = Huddle(msgspec.structs.replace(settings, usage_only=True), keep=Keeper(UsageMode(), CACHE_NAME))
    if h.keeper is not None:
        h.keeper.autosave = False  # written once, below, with the sums (_kept)
    want_rows = not (day_aligned(since) and day_aligned(until))
    # a first read in workers: each sums its sessions, and those no other session has a
    # say in are never unpickled here (Huddle._leave_packed)
    h.refresh(first or FirstRead(pack=None if want_rows else functools.partial(_own_entry, table=table)))
    notes += h.notes
    cache = h.cache
    priced = cache is not None and cache.meta().get("pricing") == pricing_key(table)
    if want_rows or (not priced and not h.packed) or cache is None:
        h.wake_all()  # every session's responses, from its handle
    loaded = h.loaded_sessions()
    counted = collect(loaded, per_session=True)
    fresh = {s["key"]: _entry(s, table) for s in counted["sessions"]}
    for s in loaded:  # a session with nothing counted is kept too (as nothing)
        if s.key not in fresh:
            fresh[s.key] = _entry({**session_info(s), "rows": []}, table)
    sums = _store(h, fresh, table, notes, want_rows, priced) if cache is not None else None
    if want_rows:
        return counted, notes
    # a run that read and kept what it read (a first read too) is kept on the heads it
    # wrote (core.answering: no other process writing between); not a note said this run only
    if keep is not None and settings.huddle_home and len(notes) == len(h.notes):
        cond = conditions(h, also=[os.path.join(settings.huddle_home, USER_FILE)])
        if cond is not None:
            keep.append(cond)
    if sums is not None and summed:
        return {"sums": sums}, notes  # the report by day, kept summed (usage_sums.report)
    kept = [d.row for d in h.dormant.values()]
    sessions = [s for s in (*kept, *fresh.values()) if s["groups"]]
    out = {"sessions": sessions, "duplicates": sum(s.get("duplicates", 0) for s in sessions)}
    if sums is not None:
        out["sums"] = sums
    return out, notes


def _drop_legacy(huddle_home: str) -> list[str]:
    """An older version's usage cache goes (said, once)."""
    legacy = os.path.join(huddle_home, "cache", LEGACY)
    if os.path.exists(legacy):
        try:
            os.unlink(legacy)
            return [f"{legacy}: from an older version; counted again from the session files"]
        except OSError:
            pass
    return []


def _store(
    h: Any, fresh: dict[str, dict[str, Any]], table: Table, notes: list[str], want_rows: bool, priced: bool
) -> dict[str, Any] | None:
    """The rows read this run kept (with the report's sums, unless rows are wanted: then
    the kept sums are added up again next time), and the prices they were priced at."""
    sums = None
    if want_rows:
        _kept(h, fresh)
    else:
        sums = _summed(h, fresh, table, notes)
    if not priced:
        h.cache.set_meta(pricing=pricing_key(table))
    return sums


def _summed(h: Any, fresh: dict[str, dict[str, Any]], table: Table, notes: list[str]) -> dict[str, Any] | None:
    """Write the rows, and the report's sums kept beside them (usage.sums): the
    sums kept, less the rows replaced or gone, plus their new ones; added up from every
    row when they cannot be trusted. None when they could not be kept."""
    from . import sums as usage_sums

    cache = h.cache
    store = cache.store
    before = {k: store.crcs.get(k) for k in cache.heads}
    sums, problem = usage_sums.loaded(store.meta.get(usage_sums.KEY), before, pricing_key(table))
    if problem:
        notes.append(f"{cache.path}: {problem}")
    # the rows this save replaces or drops, as they stand (cache.heads is what was read)
    packed = {k: d.row for k, d in h.dormant.items() if d.blob is not None}
    moved = [*fresh, *packed, *(k for k in cache.heads if k not in h.dormant and k not in h.handles)]
    if sums is not None:
        try:
            for k in moved:
                if k in cache.heads:
                    usage_sums.apply(sums, cache.row_of(k), -1)
            for row in (*fresh.values(), *packed.values()):
                usage_sums.apply(sums, row, 1)
        except (KeyError, IndexError, TypeError, ValueError):  # (ValueError: not the rows' sums)
            sums = None
    rebuilt = sums is None
    _kept(h, fresh)
    if rebuilt:
        try:
            sums = usage_sums.total_of([*(d.row for d in h.dormant.values()), *fresh.values()])
        except (KeyError, IndexError, TypeError, ValueError):
            return None
    after = {k: store.crcs.get(k) for k in cache.heads}
    if (rebuilt or after != before) and sums is not None:
        cache.set_meta(**{usage_sums.KEY: usage_sums.dumped(sums, after, pricing_key(table))})
    return sums
