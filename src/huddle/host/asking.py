"""The host's pending asks: what its agent waits on a person for, and their answers.

The channel (huddle.answer) reads the agent's protocol; this keeps the one truth of
what is pending. Every ask, answer and withdrawal is a numbered entry of the run's log,
written before anything goes to the agent:

    {"seq":41,"kind":"ask","request":41,"type":"permission","tool":"Bash","summary":...,"input":{...},"offers":[...]}
    {"seq":44,"kind":"answer","request":41,"choice":"allow","by":"web","input":{...}}
    {"seq":45,"kind":"stdin","json":{"type":"control_response",...}}
    {"seq":52,"kind":"gone","request":47,"why":"the agent exited"}

A request is its ask's seq: unique in the run, across restarts of the host, so a stale
answer can never reach a newer request. The first answer wins (one event loop); any
later one is refused, saying how and when the request was settled.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

import msgspec

from huddle.answer.asks import TURN, Answer, AnswerRefused, Ask, check_offered
from huddle.answer.channel import Channel, Step, Withdrawn, Write

from .log import read_entries

if TYPE_CHECKING:
    from .server import Host

SETTLED_KEPT = 1000  # settled requests remembered in memory, to say why an answer comes too late


class Asking:
    def __init__(self, host: Host, channel: Channel | None):
        self.host = host
        self.channel = channel
        self.pending: dict[int, Ask] = {}
        self.by_key: dict[object, int] = {}  # the protocol's id -> request (this agent process)
        self.settled: dict[int, str] = {}  # request -> how it was settled, in words

    @property
    def protocol(self) -> str:
        return self.channel.name if self.channel is not None else ""

    def listing(self) -> list[dict[str, Any]]:
        return [{"request": r, **a.shown()} for r, a in self.pending.items()]

    # -- a host starting again in the same folder -------------------------------------

    def restore(self) -> None:
        """Asks a former host left pending died with its agent: say so in the log."""
        asks: dict[int, dict] = {}
        for _, raw in read_entries(self.host.log.path):
            if b'"kind":"ask"' not in raw and b'"kind":"answer"' not in raw and b'"kind":"gone"' not in raw:
                continue
            try:
                e = msgspec.json.decode(raw)
            except msgspec.DecodeError:
                continue
            if not isinstance(e, dict) or not isinstance(e.get("request"), int):
                continue
            if e.get("kind") == "ask":
                asks[e["request"]] = e
            else:
                asks.pop(e["request"], None)
                self._remember(e["request"], _settled_words(e))
        for req in asks:
            self._gone(req, "its host ended before it was answered; the agent that asked is gone")

    # -- from the agent ----------------------------------------------------------------

    def wants(self, raw: bytes) -> bool:
        if self.channel is None:
            return False
        if self.channel.name == "claude":  # most of Claude's lines are the stream: skip their decoding
            return b'"control_' in raw or b'"type":"result"' in raw
        return True

    def output(self, raw: bytes) -> None:
        assert self.channel is not None
        try:
            value = msgspec.json.decode(raw)
        except msgspec.DecodeError:
            return
        self.apply(self.channel.feed(value))

    def apply(self, steps: list[Step]) -> None:
        for step in steps:
            if isinstance(step, Ask):
                self._open(step)
            elif isinstance(step, Withdrawn):
                req = self.by_key.pop(step.key, None)
                if req is not None and req in self.pending:
                    self._gone(req, step.why)
            elif isinstance(step, Write):
                self.host.to_agent(step.line)

    def _open(self, ask: Ask) -> None:
        if ask.type == TURN:  # one next message at a time: a newer turn replaces an older one
            for req in [r for r, a in self.pending.items() if a.type == TURN]:
                self._gone(req, "a newer turn took its place")
        req = self.host.log.last_seq + 1
        if self.host.record("ask", {"request": req, **ask.shown()}, sync=True) != req:
            return  # unlogged: never offered
        self.pending[req] = ask
        if ask.key is not None:
            self.by_key[ask.key] = req

    def _gone(self, req: int, why: str) -> None:
        ask = self.pending.pop(req, None)
        if ask is not None and ask.key is not None:
            self.by_key.pop(ask.key, None)
        seq = self.host.record("gone", {"request": req, "why": why}, sync=True)
        self._remember(req, f"gone ({why}; log seq {seq})")

    def _remember(self, req: int, words: str) -> None:
        self.settled[req] = words
        while len(self.settled) > SETTLED_KEPT:
            self.settled.pop(next(iter(self.settled)))

    def end(self, why: str) -> None:
        """The agent exited (or is being stopped): nothing it asked can be answered now."""
        for req in list(self.pending):
            self._gone(req, why)
        self.by_key.clear()

    # -- from a person -----------------------------------------------------------------

    def answer(self, a: Answer) -> dict[str, Any]:
        """Pass one answer on, or refuse it (AnswerRefused) saying why."""
        ask = self.pending.get(a.request)
        if ask is None:
            said = self.settled.get(a.request)
            if said is not None:
                raise AnswerRefused(f"request {a.request} was already settled: {said}")
            raise AnswerRefused(f"no request {a.request} is pending in this run (pending: {self._names()})")
        if self.host.stop_task is not None or not self.host.agent.running or not self.host.agent.stdin_open:
            raise AnswerRefused(f"request {a.request} cannot be answered: the agent is stopping")
        check_offered(ask, a)
        assert self.channel is not None
        lines = self.channel.prompt(a.text) if ask.type == TURN else self.channel.respond(ask, a)
        seq = self.host.record("answer", a.logged(), sync=True)
        if seq is None:
            raise AnswerRefused(f"not answered: the run's log cannot be written ({self.host.broken})")
        del self.pending[a.request]
        if ask.key is not None:
            self.by_key.pop(ask.key, None)
        self._remember(a.request, f"{a.choice} from {a.by} at {time.strftime('%H:%M:%S')} (log seq {seq})")
        for ln in lines:
            self.host.to_agent(ln)
        return {"request": a.request, "choice": a.choice, "seq": seq}

    def written(self, value: Any) -> None:
        """A line written by hand (`huddle send`): a user message answers the open turn."""
        if self.channel is None or not self.channel.is_prompt(value):
            return
        for req in [r for r, a in self.pending.items() if a.type == TURN]:
            del self.pending[req]
            seq = self.host.record("answer", {"request": req, "choice": "reply", "by": "send"}, sync=True)
            self._remember(req, f"reply from send (log seq {seq})")

    def _names(self) -> str:
        return ", ".join(str(r) for r in self.pending) or "none"


def _settled_words(e: dict) -> str:
    if e.get("kind") == "answer":
        return f"{e.get('choice')} from {e.get('by')} (log seq {e.get('seq')})"
    return f"gone ({e.get('why')}; log seq {e.get('seq')})"
