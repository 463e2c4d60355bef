"""The web app's JSON API as plain library functions, one per route.

Each takes the core object (already refreshed by its caller) and the route's
parameters, validates them strictly, and returns a JSON-able dict. The server
and the CLI's `--json` twins both call these, so they always agree. Nothing here
writes anywhere; the only file read is the content read-back, checked first.
"""

from __future__ import annotations

import os
import weakref
from typing import TYPE_CHECKING, Any

from huddle.errors import BadRequest, Forbidden, NotFound
from huddle.model import events as ev
from huddle.model.attention.session import waiting_on
from huddle.model.rows import Row, plain
from huddle.model.session import Session

from .lookup import (
    AGENT_ID,
    JSON,
    REF,
    check_id,
    event_json,
    files_index,
    nth_of_record,
    session_handle,
    timeline_json,
)
from .operations import EVENTS_LIMIT, TRANSCRIPT_LIMIT
from .states import live_json

if TYPE_CHECKING:
    from huddle.core import Huddle
    from huddle.cost.pricing import Table
    from huddle.sources.base import Handle


# Kinds that are bookkeeping, not something said or done: left out of the chat flow.
_NOT_MESSAGES = frozenset({ev.USAGE, ev.TITLE, ev.TURN_END})


# -- the board and one session ----------------------------------------------------------


def agents() -> JSON:
    """GET /api/agents: each agent's display name, short name and colour (one table:
    sources.registry), for the pages."""
    from huddle.sources.registry import displays

    return {"agents": displays()}


def sessions(h: Huddle, at: float | None = None) -> JSON:
    """GET /api/sessions: the board, exactly what `huddle status --json` prints."""
    from .board import board_json

    return board_json(h, at=at)


def _board_entry(h: Huddle, s: Session, at: float | None = None) -> Row:
    from . import board

    return board.session_entry(h, s, at=at, table=pricing_table(h))


def pricing_table(h: Huddle) -> Table | None:
    """The board's pricing table (the board module loads it once per board)."""
    from .board import pricing_table as load

    return load(h)


def _jsonable(value: object, depth: int = 0) -> Any:
    """A source's liveness signals as plain JSON values (whatever an adapter put there)."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if depth > 6:
        return str(value)
    if isinstance(value, dict):
        return {str(k): _jsonable(v, depth + 1) for k, v in value.items()}
    if isinstance(value, (list, tuple, set)):
        return [_jsonable(v, depth + 1) for v in value]
    return str(value)


def session_detail(h: Huddle, sid: str, at: float | None = None) -> JSON:
    """GET /api/sessions/{id}: the board entry plus the agent tree with each agent's
    order, report, usage, state and what it is in the middle of."""
    handle = session_handle(h, sid)
    s = handle.session
    entry = plain(_board_entry(h, s, at))
    states = {a["id"]: a for a in entry["agents"]}
    files = files_index(handle)
    depth: dict[str, int] = {}
    tree: list[JSON] = []
    for a in s.tree_order():
        d = a.to_dict()
        d["label"] = s.label_of(a)
        if a.id == s.lead_id:
            d["parent"] = None
        elif d["parent"] not in s.agents:
            d["parent"] = s.lead_id
        depth[a.id] = 0 if d["parent"] is None else depth.get(d["parent"], 0) + 1
        d["depth"] = depth[a.id]
        d["children"] = []
        b = states.get(a.id, {})
        for key in ("state", "state_since", "waiting_for"):
            if key in b:
                d[key] = b[key]
        act = a.activity
        if d.get("state") == "needs_you" and (on := waiting_on(act)) is not None:
            d["waiting_call"], d["waiting_kind"] = on  # the call to mark "waiting for your approval"
        d["open_calls"] = [event_json(e, files, s.events) for e in act.open_calls.values()]
        d["waits"] = [event_json(e, files, s.events) for e in act.waits.values()]
        d["background_work"] = [event_json(e, files, s.events) for e in act.background.values()]
        d["turn_open"] = act.turn_open
        d["finished"] = a.finished
        tree.append(d)
    by_id = {d["id"]: d for d in tree}
    for d in tree:
        if d["parent"] in by_id:
            by_id[d["parent"]]["children"].append(d["id"])
    try:
        live = _jsonable(live_json(handle.live(at)))
    except Exception as exc:  # liveness is a hint; its failure is shown, not raised
        live = {"error": f"{type(exc).__name__}: {exc}"}
    _agents_states(live, states)
    entry.update(
        key=s.key,
        lead=s.lead_id,
        tree=tree,
        live=live,
        problems=list(s.problems),
        epoch=s.epoch,
        last_seq=len(s.events) - 1,
        time_estimated=bool(s.time_estimated),
    )
    return entry


def _agents_states(live: Any, states: dict[Any, Any]) -> None:
    """Beside each agent's own signals in `live.agents`, its state as the rules decided
    it, under the names (state, since as unix seconds, waiting_for) the sources gave it
    before they reported signals only: scripts read them."""
    from huddle.model.times import parse_time

    agents = live.get("agents") if isinstance(live, dict) else None
    for aid, said in (agents or {}).items() if isinstance(agents, dict) else ():
        b = states.get(aid)
        if isinstance(said, dict) and b:
            said.setdefault("state", b.get("state"))
            said.setdefault("since", parse_time(b.get("state_since")))
            said.setdefault("waiting_for", b.get("waiting_for"))


def events(h: Huddle, sid: str, after: int = -1, limit: int = EVENTS_LIMIT) -> JSON:
    """GET /api/sessions/{id}/events?after=SEQ&limit=N: the timeline in read order
    (`seq`), for live follow (after the last seq seen) and replay. (The parameters as
    views/operations.py reads them.)"""
    handle = session_handle(h, sid)
    s = handle.session
    evs = s.events
    start = max(0, after + 1)
    end = min(len(evs), start + limit)
    out = timeline_json(s, files_index(handle), start, end)
    return {
        "session": s.id,
        "epoch": s.epoch,
        "events": out,
        "total": len(evs),
        "next_after": end - 1 if out else after,
        "has_more": end < len(evs),
    }


# -- transcripts (chat flow per agent) --------------------------------------------------


class _Lanes:
    """Per session, each agent's chat-flow messages (as seqs), kept up to date
    incrementally: a request costs the events added since the last one."""

    def __init__(self, epoch: int) -> None:
        self.epoch = epoch
        self.done = 0
        self.by_agent: dict[str, list[int]] = {}
        self.orders: list[int] = []  # ORDER events from a lead to a sub-agent
        self.results: dict[tuple[str, str], int] = {}  # (agent, call id) -> its result

    def update(self, s: Session) -> None:
        evs = s.events
        for i in range(self.done, len(evs)):
            e = evs[i]
            if e.kind in _NOT_MESSAGES:
                continue
            self.by_agent.setdefault(e.agent, []).append(i)
            if e.kind == ev.ORDER and e.agent != e.target:
                self.orders.append(i)
            elif e.kind == ev.TOOL_RESULT and e.id:
                self.results[(e.agent, e.id)] = i
        self.done = len(evs)

    def messages(self, s: Session, agent: str) -> list[int]:
        own = self.by_agent.get(agent, [])
        if agent == s.lead_id:
            return own
        # A sub-agent's transcript opens with the order that started it.
        start = [i for i in self.orders if s.events[i].target == agent and s.events[i].agent != agent]
        return start[:1] + own if start else own


_lanes: weakref.WeakKeyDictionary[Session, _Lanes] = weakref.WeakKeyDictionary()


def _lanes_of(s: Session) -> _Lanes:
    lanes = _lanes.get(s)
    if lanes is None or lanes.epoch != s.epoch or lanes.done > len(s.events):
        lanes = _lanes[s] = _Lanes(s.epoch)
    lanes.update(s)
    return lanes


def _lane(kind: str) -> str:
    if kind == ev.PROMPT:
        return "human"
    if kind == ev.CONTEXT:
        return "context"  # harness text: its own quiet lane, never the human's words
    if kind in (ev.ORDER, ev.REPORT):
        return "delegation"
    if kind in (ev.ERROR, ev.INTERRUPT, ev.COMPACTION, ev.WAITING, ev.RESOLVED):
        return "system"
    return "agent"


def transcripts(h: Huddle, sid: str) -> JSON:
    """GET /api/sessions/{id}/transcripts: the main agent and each sub-agent with
    how many chat-flow messages each has."""
    handle = session_handle(h, sid)
    s = handle.session
    lanes = _lanes_of(s)
    out = []
    for a in s.tree_order():
        out.append(
            {
                "id": a.id,
                "name": a.name,
                "label": s.label_of(a),
                "type": a.kind,
                "parent": None if a.id == s.lead_id else (a.parent or s.lead_id),
                "description": a.description,
                "quiet": a.quiet,
                "messages": len(lanes.messages(s, a.id)),
            }
        )
    return {"session": s.id, "lead": s.lead_id, "epoch": s.epoch, "agents": out}


def _ref_parts(handle: Handle, ref: object, what: str = "ref") -> tuple[int, str | None, int, int, int]:
    """A ref taken apart: (file index, that file or None, offset, length, which event of the record)."""
    m = REF.match(ref) if isinstance(ref, str) else None
    if m is None:
        raise BadRequest(f"bad {what}: {str(ref)[:60]!r}")
    fi, off, ln = (int(x) for x in m.groups()[:3])
    try:
        files = handle.files()
    except Exception:  # an adapter's bug costs the read-back, not the route
        files = []
    return fi, files[fi] if fi < len(files) else None, off, ln, int(m.group(4) or 0)


def _line_at(handle: Handle, s: Session, seqs: list[int], ref: object) -> int | None:
    """The line of the message an event's ref names (a tool result's: its call's)."""
    _fi, path, off, ln, which = _ref_parts(handle, ref)
    if path is None:
        return None
    evs = s.events
    for line, seq in enumerate(seqs):
        e = evs[seq]
        if e.offset == off and e.length == ln and e.file == path and nth_of_record(e, evs) == which:
            if e.kind == ev.TOOL_RESULT and e.id:  # shown on its call
                for back in range(line, -1, -1):
                    c = evs[seqs[back]]
                    if c.kind in (ev.TOOL_CALL, ev.ORDER) and c.id == e.id:
                        return back
            return line
    return None


def transcript(
    h: Huddle,
    sid: str,
    agent: str | None = None,
    limit: int = TRANSCRIPT_LIMIT,
    after: int | None = None,
    before: int | None = None,
    around: str | None = None,
) -> JSON:
    """GET /api/sessions/{id}/transcript: one agent's messages, paged by line (the
    message's position in that agent's flow). Default: the latest `limit`; `after=N`
    the ones after line N (new messages); `before=M` the ones before line M (history);
    `around=REF` the page around the message an event's ref names (a search result),
    its line as `focus_line`. `has_more` says whether more lie in the paging
    direction (earlier ones, for `around`; `has_after` says whether later ones do)."""
    handle = session_handle(h, sid)
    s = handle.session
    who = s.lead_id if agent in (None, "") else check_id(agent, "agent id", AGENT_ID)
    count, after_line, before_line = limit, after, before
    if sum(x not in (None, "") for x in (after_line, before_line, around)) > 1:
        raise BadRequest("give one of after, before or around")
    lanes = _lanes_of(s)
    seqs = lanes.messages(s, who) if who in s.agents else []
    total = len(seqs)
    focus = _line_at(handle, s, seqs, around) if around not in (None, "") else None
    if around not in (None, "") and focus is None:
        raise NotFound(f"no message at {str(around)[:60]} in the flow of agent {who}")
    if focus is not None:
        start = max(0, min(focus - count // 2, total - count))
        end = min(total, start + count)
        has_more = start > 0
    elif after_line is not None:
        start = min(total, after_line + 1)
        end = min(total, start + count)
        has_more = end < total
    else:
        end = total if before_line is None else min(before_line, total)
        start = max(0, end - count)
        has_more = start > 0
    files = files_index(handle)
    msgs = []
    for line in range(start, end):
        e = s.events[seqs[line]]
        d = event_json(e, files, s.events)
        d["line"] = line
        d["lane"] = _lane(e.kind)
        if e.kind in (ev.TOOL_CALL, ev.ORDER) and e.id and e.agent != e.target:
            r = lanes.results.get((e.agent, e.id))
            if r is not None:
                d["result"] = event_json(s.events[r], files, s.events)
        msgs.append(d)
    return {
        "session": s.id,
        "agent": who,
        "epoch": s.epoch,
        "messages": msgs,
        "total": total,
        "has_more": has_more,
        "first_line": start if msgs else None,
        "last_line": end - 1 if msgs else None,
        **({"focus_line": focus, "has_after": end < total} if focus is not None else {}),
    }


# -- content read-back ------------------------------------------------------------------


def _inside(path: str, roots: list[str]) -> bool:
    real = os.path.realpath(path)
    return any(r and (real == r or real.startswith(r.rstrip(os.sep) + os.sep)) for r in roots)


def content(h: Huddle, sid: str, ref: object) -> JSON:
    """GET /api/sessions/{id}/content/{ref}: one heavy piece (a full tool input or
    output, a long text, an image) read back from the agent's file on demand.
    The ref must name the exact span of one of the session's events, in one of its
    files, and that file must resolve inside the agent folders."""
    handle = session_handle(h, sid)
    s = handle.session
    fi, path, off, ln, which = _ref_parts(handle, ref, "content ref")
    if path is None:
        raise NotFound(f"no file {fi} in session {s.id}")
    here = [e for e in s.events if e.offset == off and e.length == ln and e.file == path]
    here_nth = [e for e in here if nth_of_record(e, s.events) == which]
    if not here_nth:
        raise NotFound(f"no event at {ref} in session {s.id}")
    if not _inside(path, h.agent_roots()):
        raise Forbidden(f"{ref}: the file lies outside the agent folders")
    real = os.path.realpath(path)
    try:
        raw = handle.read_record(real, off, ln)
    except OSError as exc:
        raise NotFound(f"{ref}: cannot read {os.path.basename(path)} ({exc.strerror or exc})") from None
    main = here_nth[0]
    from huddle.model.pieces import piece

    out = piece(raw, main)
    out.update(session=s.id, ref=ref, kinds=[e.kind for e in here], event=event_json(main, {path: fi}, s.events))
    return out


# -- usage ------------------------------------------------------------------------------


def usage(
    h: Huddle,
    by: str = "day",
    since: float | None = None,
    until: float | None = None,
    agent: str | None = None,
    project: str | None = None,
) -> JSON:
    """GET /api/usage?by=day|session|project|model|agent&since=DATE&until=DATE&agent=&project=:
    what `huddle usage --json` prints (both are `usage.aggregate` over the counted rows).
    (The parameters as views/operations.py reads them.)"""
    from huddle.usage import report as u

    return u.report(h, by, since, until=until, agent=agent, project=project)
