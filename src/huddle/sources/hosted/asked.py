"""What a hosted agent asks a person, from the run's log (`ask`, `answer`, `gone`
entries, written by the host: huddle.host.asking).

A permission or a question is a `waiting` event on the tool call it holds up (the
attention rules make it "needs you") until its answer or its end `resolved` it; the
choice, the surface and the time are said as context. What is pending, as shown,
goes to the board row and the session page (`HostedHandle.live()["answer"]`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import msgspec

from huddle.model import events as ev
from huddle.model.events import cap, one_line
from huddle.model.times import iso

from .lines import Entry

if TYPE_CHECKING:
    from .stream import Mapper

PENDING_MAX = 64  # asks one run keeps as pending (a runaway agent cannot grow the row)
SHOWN_MAX = 64 << 10  # bytes of one ask's input kept for the pages (the log keeps it whole)


class Asked:
    def __init__(self) -> None:
        self.pending: dict[int, dict[str, Any]] = {}
        self.settled: list[dict[str, Any]] = []  # the last few settled, for "answered elsewhere"

    def feed(self, m: Mapper, e: Entry, raw: bytes) -> None:
        req = e.request
        if not isinstance(req, int):
            m.s.problem(m.path, m.off, f"{e.kind} entry without a request number")
            return
        if e.kind == "ask":
            self._ask(m, e, req, raw)
            return
        ask = self.pending.pop(req, None)
        if ask is not None and ask.get("type") != "turn":
            m.emit(ev.RESOLVED, id=ask["wait"], name=ask.get("tool") or "", detail=e.choice or "gone")
        done: dict[str, Any] = {"request": req, "at": iso(m.t)}
        done.update({"choice": e.choice, "by": e.by} if e.kind == "answer" else {"why": e.why or "ended"})
        self.settled = (self.settled + [done])[-3:]
        if e.kind == "answer":
            words = f"{e.choice} from {e.by or 'huddle'}"
            extra = e.message or ""
            m.emit(
                ev.CONTEXT,
                name="answer",
                text=one_line(f"answered request {req}: {words}" + (f": {extra}" if extra else ""), 400),
            )
        else:
            m.emit(ev.CONTEXT, name="gone", text=one_line(f"request {req} is gone: {e.why or 'ended'}", 400))

    def _ask(self, m: Mapper, e: Entry, req: int, raw: bytes) -> None:
        try:
            d = msgspec.json.decode(raw)
        except msgspec.DecodeError:
            d = {}
        if not isinstance(d, dict):
            d = {}
        shown = _shown(d, req, e.t)
        shown["wait"] = str(d.get("call") or f"ask:{req}")
        self.pending[req] = shown
        while len(self.pending) > PENDING_MAX:
            self.pending.pop(next(iter(self.pending)))
        if shown.get("type") in ("permission", "question"):
            text, _ = cap(str(shown.get("summary") or ""))
            m.emit(ev.WAITING, id=shown["wait"], name=str(shown.get("tool") or ""), detail=one_line(text, 300))

    def clear(self, m: Mapper) -> None:
        """A new agent process, or its exit: what was pending cannot be answered now."""
        for ask in self.pending.values():
            if ask.get("type") != "turn":
                m.emit(ev.RESOLVED, id=ask["wait"], name=ask.get("tool") or "", detail="gone")
        self.pending = {}

    def live(self) -> dict[str, Any]:
        asks = [{k: v for k, v in a.items() if k != "wait"} for a in self.pending.values()]
        return {"pending": asks, "settled": list(self.settled)}

    def waiting_for(self) -> str | None:
        for a in reversed(self.pending.values()):
            if a.get("type") in ("permission", "question"):
                return str(a.get("summary") or a.get("tool") or "your answer")
        return None


def _shown(d: dict[str, Any], req: int, t: float | None) -> dict[str, Any]:
    """What an ask says, as a card shows it: the fields the host writes, of the types it
    writes them in (a hand-made log may say anything); an input too big to edit on a
    card is allowed or denied as it is."""
    shown: dict[str, Any] = {"request": req, "at": iso(t)}
    for k in ("type", "tool", "summary", "call"):
        if isinstance(d.get(k), str):
            shown[k] = d[k]
    for k in ("offers", "questions", "options"):
        v = d.get(k)
        if isinstance(v, list):
            shown[k] = [x for x in v if isinstance(x, str if k == "offers" else dict)]
    inp = d.get("input")
    if inp is not None:
        if len(msgspec.json.encode(inp)) <= SHOWN_MAX:
            shown["input"] = inp
        else:
            shown["input_cut"] = True
            shown["offers"] = [o for o in shown.get("offers") or [] if o != "allow_edit"]
    return shown
