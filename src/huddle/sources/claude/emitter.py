"""How FileParser and its parts (users.py, responses.py) make an event: at the record's
agent and time, where its line lies."""

from __future__ import annotations

from huddle.model.events import Event


class Emitter:
    """What makes an event: the agent and time of the record being read, its file."""

    agent: str
    last_t: float | None
    path: str
    out: list[Event]

    def emit(
        self,
        kind: str,
        off: int,
        ln: int,
        *,
        id: str = "",
        name: str = "",
        text: str = "",
        detail: str = "",
        truncated: bool = False,
        ok: bool | None = None,
        size: int = 0,
        target: str = "",
        copied: bool = False,
    ) -> Event:
        # (its fields named, not a **kw: a dict made and spread cost twice the event;
        # and only those given set: each keyword the struct parses costs as much)
        e = Event(kind=kind, agent=self.agent, t=self.last_t, file=self.path, offset=off, length=ln)
        if id:
            e.id = id
        if name:
            e.name = name
        if text:
            e.text = text
        if detail:
            e.detail = detail
        if truncated:
            e.truncated = truncated
        if ok is not None:
            e.ok = ok
        if size:
            e.size = size
        if target:
            e.target = target
        if copied:
            e.copied = copied
        self.out.append(e)
        return e
