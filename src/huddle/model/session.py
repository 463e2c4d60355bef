"""Sessions: a lead agent and its sub-agents, their merged timeline, tree and usage.

A source builds a Session by feeding it events (in the order its files were read)
and by filling in the agents it finds. The Session owns what is derived from the
events: sequence numbers, per-kind counts, per-agent usage, times, titles and the
per-agent activity that the attention states are computed from.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeVar

from msgspec import UNSET

from . import events as ev
from .activity import Activity
from .events import Event, Usage
from .rows import AgentRow, Summary, Tokens
from .signals import NOTHING, Live
from .times import iso, project_name

S = TypeVar("S", bound=Summary)


def tokens(u: Usage) -> Tokens:
    """A usage count as a row says it."""
    return Tokens(
        input=u.input,
        output=u.output,
        cache_read=u.cache_read,
        cache_write=u.cache_write,
        cache_write_1h=u.cache_write_1h,
    )


# What makes a session worth a row: someone said or did something.
CONVERSATION = (ev.PROMPT, ev.SAY, ev.THINK, ev.TOOL_CALL, ev.TOOL_RESULT, ev.ORDER, ev.REPORT, ev.USAGE, ev.WAITING)


_SAID = frozenset({ev.PROMPT, ev.TITLE, ev.REPORT})  # kinds that say something of the session itself


class Agent:
    """One participant of a session: the lead or a sub-agent."""

    def __init__(self, id: str, parent: str | None = None, name: str = "", file: str = ""):
        self.id = id
        self.parent = parent
        self.name = name or id
        self.kind = ""  # agent type: general-purpose, Explore, a custom type...
        self.description = ""  # the short task name the lead gave
        self.tool_use_id: str | None = None  # the lead's call that started it
        self.order = ""  # what it was asked
        self.report: str | None = None  # what its lead received back
        self.file = file
        self.model = ""
        self.usage = Usage()
        self.started_at: float | None = None
        self.updated_at: float | None = None
        self.background = False
        self.finished: bool | None = None  # the agent's own files say it is done
        self.quiet = False  # kept in the tree, hidden from lists (Codex guardian reviews)
        self.order_seq: int | None = None  # where its lead ordered it in the timeline
        self.activity = Activity()
        self.event_count = 0

    @property
    def label(self) -> str:
        """What a sub-agent is called on every surface (pages, CLI, notifications): its
        task, with its own name when that says more (a Codex nickname: "Bacon
        (/root/count_files)"). The lead is "Lead" (`Session.label_of`)."""
        name, task = self.name, self.description
        if task and name and name != self.id and task not in name:
            return f"{name} ({task})"
        return task or name or self.id

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "parent": self.parent,
            "name": self.name,
            "type": self.kind,
            "description": self.description,
            "tool_use_id": self.tool_use_id,
            "order": self.order,
            "report": self.report,
            "model": self.model,
            "usage": self.usage.to_dict(),
            "started_at": iso(self.started_at),
            "updated_at": iso(self.updated_at),
            "background": self.background,
            "quiet": self.quiet,
            "events": self.event_count,
        }


class Session:
    usage_unknown = False  # (class defaults: a session from an older cache has none)
    archived = False

    def __init__(self, source: str, id: str) -> None:
        self._start(source, id)

    def _start(self, source: str, id: str) -> None:
        self.source = source
        self.id = id
        self.key = f"{source}:{id}"
        self.cwd = ""
        self.custom_title = ""
        self.ai_title = ""
        self.first_prompt = ""
        self.last_prompt = ""
        self.lead_id = ""
        self.agents: dict[str, Agent] = {}
        self.events: list[Event] = []
        self.counts: dict[str, int] = {}
        self.usage = Usage()
        self.model_usage: dict[str, Usage] = {}  # per model, for cost
        self.skipped_lines = 0
        self.problems: list[str] = []  # one line each: file, where, what was wrong
        self.error: str | None = None  # the session could not be read
        self.started_at: float | None = None
        self.updated_at: float | None = None
        self.continues: str | None = None  # an earlier session this one carries on
        self.parent_session: str | None = None  # an orphan sub-agent: the session it names, absent here
        self.usage_note = ""  # what the files cannot tell about the usage (a count never made final)
        self.usage_unknown = False  # the files hold no count at all (not zero: unknown; usage_note says why)
        self.archived = False  # its agent put it away (Codex's archived_sessions/): off the default views
        self.live: Live = NOTHING  # what a source keeps of its live signals between reads (hosted runs)
        self.next_seq = 0
        self.complete = True  # False when loaded from the cache without its timeline
        self.version = 0  # bumps on every change, for caches and live pushes
        self.epoch = 0  # bumps when the timeline was rebuilt (a file was rewritten)
        self.time_estimated = False
        self.counted_elsewhere = 0  # usage events whose response counts in another session
        self.usage_epoch = 0  # bumps when usage already counted changed (raise_usage, recount_usage)
        self._bad_at: tuple[str, int] | None = None  # the record a bad count was last said of

    # -- building ------------------------------------------------------------------

    def agent(self, id: str, **kw: Any) -> Agent:
        a = self.agents.get(id)
        if a is None:
            a = self.agents[id] = Agent(id, **kw)
            if not self.lead_id and kw.get("parent") is None:
                self.lead_id = id
        return a

    def add(self, e: Event) -> None:
        self.add_all((e,))

    def add_all(self, events: Sequence[Event]) -> None:
        """Append events to the timeline and derive what they say. The hot path of
        every read: lookups are hoisted, most events touch only counters."""
        if not events:
            return
        seq = self.next_seq
        append = self.events.append
        counts = self.counts
        agents = self.agents
        a = None
        usage, said = ev.USAGE, _SAID
        counted: dict[tuple[Agent, str], Usage] = {}  # (agent, model) -> this batch's usage, added once after
        for e in events:
            e.seq = seq
            seq += 1
            append(e)
            k = e.kind
            counts[k] = counts.get(k, 0) + 1
            if a is None or a.id != e.agent:
                a = agents.get(e.agent) or self.agent(e.agent)
            a.event_count += 1
            t = e.t
            if t is not None:
                if a.started_at is None or t < a.started_at:
                    a.started_at = t
                if a.updated_at is None or t > a.updated_at:
                    a.updated_at = t
            if k == usage:
                self._batch_usage(e, a, counted)
                continue  # (an agent's activity takes nothing from a count)
            if k in said:
                self._said(e)
            a.activity.apply(e)
        for (a, model), u in counted.items():  # (three sums per agent and model, not per response)
            self._add_usage(a, model, u)
        self.next_seq = seq
        self._stretch(events)
        self.version += 1

    def _stretch(self, events: Sequence[Event]) -> None:
        """The session's first and last times, stretched to a batch's."""
        ts = [e.t for e in events if e.t is not None]
        if ts:
            lo, hi = min(ts), max(ts)
            self.started_at = lo if self.started_at is None else min(self.started_at, lo)
            self.updated_at = hi if self.updated_at is None else max(self.updated_at, hi)

    def _batch_usage(self, e: Event, a: Agent, counted: dict[tuple[Agent, str], Usage]) -> None:
        """A usage event into its batch's sums (counts that are not counts cost their
        line, never the totals; a copy or a response counted elsewhere adds nothing)."""
        u = e.usage
        if u is None:
            return
        bad = u.problem()
        if bad:
            self.bad_count(e.file, e.offset, bad)
            e.usage = None
        elif not e.copied and not e.counted_in:
            key = (a, e.name)
            sum_ = counted.get(key)
            if sum_ is None:
                counted[key] = Usage(u.input, u.output, u.cache_read, u.cache_write, u.cache_write_1h)
            else:
                sum_.add(u)
            if e.name:
                a.model = e.name

    def _said(self, e: Event) -> None:
        """What a prompt, a title or a sub-agent's report says of the session."""
        if e.kind == ev.PROMPT:
            if not self.first_prompt:
                self.first_prompt = e.text
            self.last_prompt = e.text
        elif e.kind == ev.TITLE:
            if e.detail == "ai":
                self.ai_title = e.text
            else:
                self.custom_title = e.text
        elif e.target:
            sub = self.agents.get(e.target)
            if sub is not None:
                sub.report = e.text

    def _count_usage(self, a: Agent, model: str, u: Usage) -> None:
        self._add_usage(a, model, u)
        if model:
            a.model = model

    def _add_usage(self, a: Agent, model: str, u: Usage) -> None:
        a.usage.add(u)
        self.usage.add(u)
        m = self.model_usage.get(model)
        if m is None:
            m = self.model_usage[model] = Usage()
        m.add(u)

    def raise_usage(self, e: Event, u: Usage) -> None:
        """A later record of the same response `e` counted: keep the largest of each
        field (Claude writes one record per content block while a response streams, and
        the early ones can carry a partial `output_tokens`). Works whether `e` is still
        waiting to be added or was counted already, in this read or an earlier one."""
        old = e.usage
        if old is None or u.problem():
            return
        new = old.largest(u)
        if new == old:
            return
        e.usage = new
        if e.seq < 0 or e.copied or e.counted_in:
            return  # not counted yet (or not here): add_all counts the new value
        delta = Usage(*new.to_tuple())
        delta.sub(old)
        a = self.agents.get(e.agent)
        if a is not None:
            a.usage.add(delta)
        self.usage.add(delta)
        m = self.model_usage.get(e.name)
        if m is not None:
            m.add(delta)
        self.usage_epoch += 1
        self.version += 1

    def recount_usage(self) -> None:
        """Sum the usage events again (which of them count moved: model/ledger.py)."""
        self.usage = Usage()
        self.model_usage = {}
        for a in self.agents.values():
            a.usage = Usage()
        for e in self.events:
            if e.kind == ev.USAGE and e.usage is not None and not e.copied and not e.counted_in:
                self._count_usage(self.agents.get(e.agent) or self.agent(e.agent), e.name, e.usage)
        self.usage_epoch += 1
        self.version += 1

    def problem(self, path: str, offset: int, what: str) -> None:
        """A bad line: counted, described in one line, never fatal."""
        self.skipped_lines += 1
        if len(self.problems) < 50:
            self.problems.append(f"{path}:{offset}: {what}")

    def bad_count(self, path: str, offset: int, what: str) -> None:
        """A usage record whose counts are no counts (negative, past COUNT_MAX): counted,
        and said once per file: a document of such records (or a line already said for
        another reason) is one line, which says this too."""
        if getattr(self, "_bad_at", None) == (path, offset):  # (a session from an older cache has none)
            return  # (one record's several usage events: one record skipped)
        self._bad_at = (path, offset)
        self.skipped_lines += 1
        prefix = f"{path}:"
        for i, line in enumerate(self.problems):
            if line.startswith(prefix):
                if "usage " not in line:
                    self.problems[i] = f"{line}; {what}"
                return
        if len(self.problems) < 50:
            self.problems.append(f"{path}:{offset}: {what}")

    def note(self, path: str, offset: int, what: str) -> None:
        """A line read, but with something dropped (a time that is no time): said, not skipped."""
        if len(self.problems) < 50:
            self.problems.append(f"{path}:{offset}: {what}")

    def reset(self) -> None:
        """Forget everything derived (a file was rewritten); the source reads again."""
        epoch = self.epoch + 1
        version = self.version + 1
        self._start(self.source, self.id)
        self.epoch = epoch
        self.version = version

    def __getstate__(self) -> dict[str, Any]:
        """What the cache keeps: everything derived, but of the timeline only the usage
        events (small, and what `huddle usage` needs). Views that need the whole
        timeline ask the core to read the session again (`complete` is False)."""
        d = self.__dict__.copy()
        d["events"] = [
            (e.seq, e.t, e.agent, e.name, e.id, e.file, e.offset, e.copied, *e.usage.to_tuple(), e.counted_in, e.origin)
            for e in self.events
            if e.kind == ev.USAGE and e.usage is not None
        ]
        d["complete"] = False
        return d

    def __setstate__(self, d: dict[str, Any]) -> None:
        rows = d.pop("events")
        self.__dict__.update(d)
        self.events = [
            Event(
                kind=ev.USAGE,
                seq=r[0],
                t=r[1],
                agent=r[2],
                name=r[3],
                id=r[4],
                file=r[5],
                offset=r[6],
                copied=r[7],
                usage=Usage(*r[8:13]),
                counted_in=r[13],
                origin=r[14],
            )
            for r in rows
        ]

    # -- reading -------------------------------------------------------------------

    @property
    def title(self) -> str:
        t = self.custom_title or self.ai_title or self.first_prompt or self.last_prompt
        return ev.one_line(t, 100) if t else ""

    @property
    def has_conversation(self) -> bool:
        """Anything said or done: a file holding only a summary, a snapshot or nothing
        at all has none (it stays readable by id, but off the board)."""
        counts = self.counts
        return any(counts.get(k) for k in CONVERSATION)

    @property
    def lead(self) -> Agent | None:
        return self.agents.get(self.lead_id)

    def label_of(self, a: Agent) -> str:
        return "Lead" if a.id == self.lead_id else a.label

    def tree_order(self) -> list[Agent]:
        """Agents lead first, then depth-first by start time."""
        children: dict[str | None, list[Agent]] = {}
        for a in self.agents.values():
            parent = a.parent if a.parent in self.agents else (None if a.id == self.lead_id else self.lead_id)
            if a.id == self.lead_id:
                parent = None
            children.setdefault(parent, []).append(a)
        out: list[Agent] = []
        seen: set[str] = set()

        def walk(pid: str | None) -> None:
            kids = children.get(pid, [])
            kids.sort(key=lambda x: (x.order_seq is None, x.order_seq or 0, x.started_at or 0, x.id))
            for a in kids:
                if a.id in seen:
                    continue
                seen.add(a.id)
                out.append(a)
                walk(a.id)

        walk(None)
        for a in self.agents.values():  # anything in a cycle still shows
            if a.id not in seen:
                out.append(a)
        return out

    def summary(self, row: type[S] = Summary, **more: Any) -> S:  # type: ignore[assignment]
        """The board entry (`huddle status --json`), without the attention state: a
        `Summary`, or `row` (a Summary's subclass: model.rows.Row) with `more` of its fields."""
        return row(
            id=self.id,
            source=self.source,
            title=self.title,
            cwd=self.cwd,
            project=project_name(self.cwd),
            started_at=iso(self.started_at),
            updated_at=iso(self.updated_at),
            usage=tokens(self.usage),
            models={m: tokens(u) for m, u in self.model_usage.items() if m},
            agents=[
                AgentRow(
                    id=a.id,
                    parent=None if a.id == self.lead_id else (a.parent or self.lead_id),
                    name=a.name,
                    label=self.label_of(a),
                    type=a.kind,
                    tool_use_id=a.tool_use_id,
                    usage=tokens(a.usage),
                    quiet=a.quiet,
                )
                for a in self.tree_order()
            ],
            events=dict(self.counts),
            skipped_lines=self.skipped_lines,
            continues=self.continues or UNSET,
            parent_session=self.parent_session or UNSET,
            usage_note=self.usage_note or UNSET,
            usage_unknown=True if self.usage_unknown else UNSET,
            archived=True if self.archived else UNSET,
            times_estimated=True if self.time_estimated else UNSET,
            error=self.error or UNSET,
            **more,
        )
