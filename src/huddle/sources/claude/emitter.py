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
        # (its fields named, not a **kw: a dict made and spread again cost twice the event)
        e = Event(
            kind=kind,
            agent=self.agent,
            t=self.last_t,
            file=self.path,
            offset=off,
            length=ln,
            id=id,
            name=name,
            text=text,
            detail=detail,
            truncated=truncated,
            ok=ok,
            size=size,
            target=target,
            copied=copied,
        )
        self.out.append(e)
        return e
