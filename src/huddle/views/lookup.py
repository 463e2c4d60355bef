"""What every route does first: check its parameters, find the session (whole), and
say its events as JSON for a page (refs instead of paths, the phrase, the state)."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, overload

import msgspec

from huddle.errors import BadRequest
from huddle.model import events as ev
from huddle.model.attention.trail import state_changes, target_changes
from huddle.model.doing import doing
from huddle.model.session import Session
from huddle.model.tools import QUESTION_TOOLS

if TYPE_CHECKING:
    from huddle.core import Huddle
    from huddle.sources.base import Handle

JSON = dict[str, Any]

SESSION_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,199}$")
AGENT_ID = SESSION_ID
# file index - offset - length [- which event of that record, when it holds several]
REF = re.compile(r"^(\d{1,4})-(\d{1,15})-(\d{1,10})(?:-(\d{1,3}))?$")

# -- validation -----------------------------------------------------------------------


def check_id(value: object, what: str = "session id", pattern: re.Pattern[str] = SESSION_ID) -> str:
    if not isinstance(value, str) or not pattern.match(value):
        raise BadRequest(f"bad {what}: {str(value)[:60]!r}")
    return value


@overload
def check_int(value: object, what: str, lo: int = ..., hi: int = ..., *, default: int) -> int: ...
@overload
def check_int(value: object, what: str, lo: int = ..., hi: int = ..., default: None = None) -> int | None: ...
def check_int(value: object, what: str, lo: int = 0, hi: int = 1 << 53, default: int | None = None) -> int | None:
    """A non-negative integer parameter given as text or int; None/'' gives the default."""
    if value is None or value == "":
        return default
    if isinstance(value, bool):
        raise BadRequest(f"bad {what}: {value!r}")
    if isinstance(value, str):
        if not value.isascii() or not value.isdigit() or len(value) > 16:
            raise BadRequest(f"bad {what}: {value[:40]!r} (want a whole number)")
        value = int(value)
    if not isinstance(value, int) or value < lo or value > hi:
        raise BadRequest(f"bad {what}: {value!r} (want {lo} to {hi})")
    return value


def session_handle(h: Huddle, sid: str) -> Handle:
    """The session's handle with its whole timeline: one the core loaded from its cache
    holds only usage events, so the core reads it again, once (`Huddle.complete`)."""
    check_id(sid)
    handle = h.find(sid)  # a unique start of an id names it too
    if not handle.session.complete:
        h.complete(handle.key)
        handle = h.handle(handle.key) or handle
    return handle


# -- events as JSON ---------------------------------------------------------------------


def files_index(handle: Handle) -> dict[str, int]:
    try:
        files = handle.files()
    except Exception:  # an adapter's bug costs the refs, not the route
        files = []
    return {f: i for i, f in enumerate(files)}


def _same_span(a: ev.Event, b: ev.Event) -> bool:
    return a.offset == b.offset and a.length == b.length and a.file == b.file


def nth_of_record(e: ev.Event, evs: list[ev.Event] | None) -> int:
    """Which event of its record `e` is: they sit next to each other, count those before it."""
    n, i = 0, e.seq - 1
    while evs is not None and 0 <= i < len(evs) and e.seq - i <= 64 and _same_span(evs[i], e):
        n, i = n + 1, i - 1
    return n


def event_json(e: ev.Event, files: dict[str, int], evs: list[ev.Event] | None = None) -> JSON:
    """An event for a page: its content is named by a ref, never by a path."""
    d: JSON = msgspec.to_builtins(e)
    d.pop("file", None)
    d.pop("offset", None)
    d.pop("length", None)
    if e.file and e.offset >= 0 and e.length > 0:
        fi = files.get(e.file)
        if fi is not None:
            d["ref"] = f"{fi}-{e.offset}-{e.length}"
            n = nth_of_record(e, evs)
            if n:
                d["ref"] += f"-{n}"
    if e.kind == ev.TOOL_CALL:
        d["doing"] = doing(e.name, e.detail)
    elif e.kind == ev.WAITING:
        d["wait"] = "answer" if e.name in QUESTION_TOOLS else "approval"  # what the person is asked for
    return d


def timeline_json(s: Session, files: dict[str, int], start: int, end: int) -> list[JSON]:
    """Events `start`..`end` of a session for a page. An event that moved its agent's
    state carries it (`state`, by the one rule table): the pages replay a timeline with
    these, never with rules of their own."""
    evs = s.events
    changes = state_changes(s)
    targets = target_changes(s)
    out = []
    for e in evs[start:end]:
        d = event_json(e, files, evs)
        st = changes.get(e.seq)
        if st is not None:
            d["state"] = st
        sub = targets.get(e.seq)
        if sub is not None:
            d["target_state"] = sub  # the sub-agent this order starts (or report ends)
        out.append(d)
    return out
