"""Answer a session by its id: the one function `huddle answer` and
POST /api/sessions/{id}/answer call (the CLI's --json prints what the route returns).

Only a run huddle hosts can be answered, and only through its host, which holds the one
truth of what is pending: this finds the run, passes the answer on, and says plainly
why not when it cannot (a session huddle only reads, a run whose host is gone, a
request already settled).
"""

from __future__ import annotations

import contextlib
import os
from typing import TYPE_CHECKING, Any

from .asks import AnswerRefused, NotAnswerable, parse_answer

if TYPE_CHECKING:
    from huddle.core import Huddle


def run_dir(h: Huddle, sid: str) -> tuple[str, str]:
    """(the session's full id, its hosted run's folder), or NotAnswerable saying why."""
    from huddle.views.lookup import check_id

    check_id(sid)
    handle = h.find(sid)
    s = handle.session
    if s.source != "hosted":
        raise NotAnswerable(
            f"huddle only reads this {s.source} session: answer it where it runs. "
            "To answer from huddle, start the agent with `huddle run`"
        )
    path = getattr(handle, "path", "")
    return s.id, os.path.dirname(path)


def pending(d: str) -> dict[str, Any]:
    """What the run's host says is pending now ({"protocol", "asks"})."""
    from huddle.host.client import HostError, call

    try:
        reply = call(d, {"op": "asks"})
    except HostError as exc:
        raise AnswerRefused(f"nothing can be answered: {exc} (its agent and requests went with its host)") from None
    return {"protocol": reply.get("protocol") or "", "asks": reply.get("asks") or []}


def answer(h: Huddle, sid: str, body: object, by: str = "api", lock: Any = None) -> dict[str, Any]:
    """Pass one answer to the run's host: {"session", "request", "choice", "seq"} when
    it took it; AnswerRefused / NotAnswerable (one line) when not. `lock`: the core's,
    held for the lookup only (not while the host answers)."""
    from huddle.host.client import HostError, call

    a = parse_answer(body, by)
    with lock if lock is not None else contextlib.nullcontext():
        full, d = run_dir(h, sid)
    msg: dict[str, Any] = {"op": "answer", **a.logged()}
    try:
        reply = call(d, msg)
    except HostError as exc:
        raise AnswerRefused(f"request {a.request} cannot be answered: {exc} (the request went with its host)") from None
    if not reply.get("ok"):
        raise AnswerRefused(str(reply.get("error") or "refused"))
    return {
        "ok": True,
        "session": full,
        "request": reply.get("request"),
        "choice": reply.get("choice"),
        "by": a.by,
        "seq": reply.get("seq"),
    }


def only_pending(asks: list[dict[str, Any]], choice: str) -> int:
    """The request a bare `huddle answer ID CHOICE` means: the one pending ask that takes
    it (a permission or a question for allow/deny; a question, else the turn, for reply)."""
    if choice == "reply":
        fits = [a for a in asks if a.get("type") == "question"] or [a for a in asks if a.get("type") == "turn"]
        fits = fits or [a for a in asks if "reply" in (a.get("offers") or ())]
    else:
        fits = [a for a in asks if a.get("type") in ("permission", "question")]
    if len(fits) == 1:
        return int(fits[0]["request"])
    if not fits:
        what = ", ".join(f"{a['request']} ({a.get('type')})" for a in asks) or "nothing"
        raise AnswerRefused(f"nothing pending takes {choice} (pending: {what})")
    names = ", ".join(f"{a['request']} ({a.get('summary')})" for a in fits)
    raise AnswerRefused(f"more than one request is pending: name one with --request ({names})")
