"""`$HUDDLE_HOME/telemetry/<agent>/<session id>.jsonl`: sessions the agents' telemetry
tells of (written by `huddle serve --otlp`, huddle.otel.telemetry).

A session no transcript on this machine holds (the agent ran elsewhere, in a
container, on a machine without huddle) is a session like any other: its model
responses (usage), its prompts (turns), its tool calls and results, its errors.

A session whose agent's own files are here too is read from them, by its own source:
the telemetry then adds only the responses those files do not hold, by the request id
both carry (Claude Code's side calls: titles, summaries); such a twin is counted in
`huddle usage`, never listed on the board (it has no conversation and no time of its
own). Codex's telemetry names no response, so a Codex session with a rollout here
adds nothing.
"""

from __future__ import annotations

import os
import re

import msgspec

from huddle.io.reader import GONE, RESET, LineReader
from huddle.io.safefile import listdir
from huddle.model import events as ev
from huddle.model.events import Event, Usage
from huddle.sources.base import Handle, Source, drain
from huddle.sources.registry import register
from huddle.sources.settings import Settings

FOLDER = "telemetry"
AGENTS = {"claude": "Claude Code", "codex": "Codex"}
_RID = re.compile(rb'"requestId":"([^"\\]{1,200})"')


class Line(msgspec.Struct):
    k: str = ""
    t: float | None = None
    agent: str = ""
    model: str = ""
    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_write: int = 0
    cache_write_1h: int = 0
    rid: str = ""
    src: str = ""
    key: str = ""
    id: str = ""
    name: str = ""
    text: str | None = None
    ok: bool = True
    decision: str = ""
    type: str = ""
    value: int = 0


_decode = msgspec.json.Decoder(Line).decode
MAIN = frozenset({"", "sdk", "repl_main_thread", "main"})  # query sources of the session's own turns


class TelemetryHandle(Handle):
    def __init__(self, path: str, agent: str, sid: str, covered: list[str] | None = None) -> None:
        super().__init__("telemetry", sid)
        self.path = path
        self.agent = agent
        self.covered = covered  # the agent's own files of this session, when they are here
        self._fresh()

    def _fresh(self) -> None:
        s = self.session
        lead = s.agent(s.id, parent=None, name=AGENTS.get(self.agent, self.agent), file=self.path)
        lead.kind = self.agent
        self.reader = LineReader(self.path)
        self.lines: list[tuple[int, int, Line]] = []  # (offset, length, line): a twin is worked out again from them
        self.own: dict[str, LineReader] = {p: LineReader(p) for p in self.covered or ()}
        self.rids: set[str] = set()
        self.metrics: dict[tuple[str, str], tuple[float | None, int]] = {}
        self.has_usage = False
        self.titled = False

    def files(self) -> list[str]:
        return [self.path, *(self.covered or ())]

    def shown_from(self) -> list[str]:
        return list(self.covered or ())

    def refresh(self) -> bool:
        s = self.session
        before = s.version
        status = self.reader.check()
        if status == GONE:
            return False
        if status == RESET:
            s.reset()
            self._fresh()
            self.reader.check()
        new: list[tuple[int, int, Line]] = []

        def feed(off: int, raw: bytes) -> None:
            new.append((off, len(raw), _decode(raw)))

        drain(self.reader, s, feed)
        if self.covered is None:
            self._emit(new)
        else:
            grew = self._read_own()
            self.lines += new
            if new or grew:
                self._twin()
        return s.version != before

    def _read_own(self) -> bool:
        """The request ids the agent's own files hold (read from where they were left)."""
        grew = False
        for path, reader in self.own.items():
            try:
                if reader.check() == GONE:
                    continue
            except OSError:
                continue

            def feed(off: int, raw: bytes) -> None:
                found = _RID.findall(raw[-600:])  # (Claude Code writes requestId after the message)
                if found:
                    self.rids.add(found[-1].decode())

            n = len(self.rids)
            drain(reader, self.session, feed)
            grew = grew or len(self.rids) != n
            del path
        return grew

    def _twin(self) -> None:
        """A session read from its own files: only the responses they do not hold."""
        s = self.session
        s.reset()
        s.agent(s.id, parent=None, name=AGENTS.get(self.agent, self.agent), file=self.path).kind = self.agent
        if self.agent != "claude":
            return  # (nothing names Codex's responses: its rollout has them all)
        out = []
        for off, n, line in self.lines:
            if line.k == "usage" and line.rid and line.rid not in self.rids:
                out.append(self._usage(line, off, n))
        for e in out:
            s.add(e)
        s.counted_only = True  # type: ignore[attr-defined]  # (counted, never listed: the board shows the session itself)

    def _usage(self, line: Line, off: int, n: int) -> Event:
        u = Usage(
            line.input, line.output, line.cache_read, line.cache_write, min(line.cache_write_1h, line.cache_write)
        )
        return Event(
            kind=ev.USAGE,
            agent=self._agent(line),
            t=line.t,
            file=self.path,
            offset=off,
            length=n,
            id=line.rid or line.key,
            name=line.model,
            usage=u,
        )

    def _agent(self, line: Line) -> str:
        s = self.session
        if not line.agent or line.agent == s.id:
            return s.id
        if line.agent not in s.agents:
            a = s.agent(line.agent, parent=s.id, name=line.agent, file=self.path)
            a.kind = "sub-agent"
        return line.agent

    def _event(self, kind: str, line: Line, off: int, n: int, **kw: str | bool | None) -> Event:
        return Event(kind=kind, agent=self._agent(line), t=line.t, file=self.path, offset=off, length=n, **kw)  # type: ignore[arg-type]

    def _emit(self, new: list[tuple[int, int, Line]]) -> None:
        s = self.session
        for off, n, line in new:
            for e in self._events_of(line, off, n):
                s.add(e)
        if self.metrics and not self.has_usage:
            self._from_metrics()

    def _events_of(self, line: Line, off: int, n: int) -> list[Event]:
        """What one line of telemetry says, as events (a metric is kept, for `_from_metrics`)."""
        k, at = line.k, (line, off, n)
        if k == "usage":
            self.has_usage = True
            return [self._usage(line, off, n)]
        if k == "prompt":
            return self._prompt(line, off, n)
        if k == "tool_call":
            call = self._event(ev.TOOL_CALL, *at, id=line.id, name=line.name)
            if line.decision in ("reject", "denied", "abort"):
                return [call, self._event(ev.TOOL_RESULT, *at, id=line.id, name=line.name, ok=False)]
            return [call]
        if k == "tool_result":
            return [self._event(ev.TOOL_RESULT, *at, id=line.id, name=line.name, ok=line.ok)]
        if k == "say" and line.src in MAIN and self._agent(line) == self.session.id:
            # the model answered: the turn is over unless a tool call follows (which opens it again)
            return [self._event(ev.TURN_END, *at, id=line.rid)]
        if k == "error":
            return [self._event(ev.ERROR, *at, text=line.text or "")]
        if k == "compaction":
            return [self._event(ev.COMPACTION, *at, text="")]
        if k == "metric":
            self.metrics[(line.model, line.type)] = (line.t, line.value)
        return []

    def _prompt(self, line: Line, off: int, n: int) -> list[Event]:
        """A prompt (the first one titles a session whose prompts' words were not sent:
        they are not, unless the user allows it)."""
        out = []
        if not self.titled:
            self.titled = True
            if not line.text:
                out.append(
                    self._event(ev.TITLE, line, off, n, text=f"{AGENTS.get(self.agent, self.agent)} (telemetry)")
                )
        out.append(self._event(ev.PROMPT, line, off, n, text=line.text or "", id=line.id))
        return out

    def _from_metrics(self) -> None:
        """A session whose logs were not sent: its usage from the cumulative counts, one
        response per model (what the metrics can say)."""
        s = self.session
        got: dict[str, dict[str, tuple[float | None, int]]] = {}
        for (model, kind), v in self.metrics.items():
            got.setdefault(model, {})[kind] = v
        kept = [e for e in s.events if e.kind == ev.USAGE]
        if kept:
            return  # (worked out once: the counts only grow, and a later read of the whole file says them all)
        for model, kinds in sorted(got.items()):
            t = max((v[0] for v in kinds.values() if v[0] is not None), default=None)
            u = Usage(
                kinds.get("input", (None, 0))[1],
                kinds.get("output", (None, 0))[1],
                kinds.get("cacheRead", (None, 0))[1],
                kinds.get("cacheCreation", (None, 0))[1],
            )
            s.add(Event(kind=ev.USAGE, agent=s.id, t=t, file=self.path, id=f"metrics:{model}", name=model, usage=u))


@register
class TelemetrySource(Source):
    name = FOLDER

    def __init__(self, settings: Settings) -> None:
        super().__init__(settings)
        self.root = os.path.join(settings.huddle_home, FOLDER) if settings.huddle_home else ""

    def roots(self) -> list[str]:
        return [self.root] if self.root else []

    def _own_files(self, agent: str, wanted: set[str]) -> dict[str, list[str]]:
        """The agent's own files of these sessions, when this machine has them."""
        out: dict[str, list[str]] = {}
        base = self.settings.folder(agent)
        if not base or not wanted:
            return out
        if agent == "claude":
            return _claude_files(base, wanted)
        if agent == "codex":
            return _codex_files(base, wanted)
        return out

    def scan(self, known: dict[str, Handle]) -> dict[str, Handle]:
        found: dict[str, Handle] = {}
        for agent in AGENTS:
            files = {f.name[:-6]: f.path for f in listdir(os.path.join(self.root, agent)) if f.name.endswith(".jsonl")}
            own = self._own_files(agent, set(files))
            for sid, path in files.items():
                key = f"{FOLDER}:{sid}"
                h = known.get(key)
                covered = own.get(sid)
                if not isinstance(h, TelemetryHandle) or h.path != path or h.covered != covered:
                    h = TelemetryHandle(path, agent, sid, covered)
                found[key] = h
        return found


def _claude_files(base: str, wanted: set[str]) -> dict[str, list[str]]:
    """Claude Code's transcripts of these sessions, each with its sub-agents' files."""
    out: dict[str, list[str]] = {}
    for proj in listdir(os.path.join(base, "projects")):
        if not proj.is_dir(follow_symlinks=False):
            continue
        for f in listdir(proj.path):
            sid = f.name[:-6] if f.name.endswith(".jsonl") else ""
            if sid in wanted:
                subs = os.path.join(proj.path, sid, "subagents")
                extra = [x.path for x in listdir(subs) if x.name.endswith(".jsonl")]
                out[sid] = [f.path, *sorted(extra)]
    return out


def _codex_files(base: str, wanted: set[str]) -> dict[str, list[str]]:
    """Codex's rollouts of these sessions (their ids end the file names)."""
    out: dict[str, list[str]] = {}
    for dirpath, _dirs, names in os.walk(os.path.join(base, "sessions")):
        for name in names:
            if name.startswith("rollout-") and name.endswith(".jsonl") and name[-42:-6] in wanted:
                out[name[-42:-6]] = [os.path.join(dirpath, name)]
    return out
