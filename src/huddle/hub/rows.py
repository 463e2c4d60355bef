"""A session as hub rows: its board row, its agents, its model responses.

Without --with-content no prompt or output text leaves the machine: the title is the
session's own name (custom or generated) and never its first prompt, and the words a
state carries (the command being run, the question asked) are left out.
"""

from __future__ import annotations

from typing import Any

from huddle.cost.pricing import model_name
from huddle.model import events as ev
from huddle.model.identity import Occurrences
from huddle.model.rows import Row, plain
from huddle.model.session import Session
from huddle.redact.redactor import Redactor
from huddle.usage.report import agent_label


def plain_title(s: Session) -> str:
    t = s.custom_title or s.ai_title
    return ev.one_line(t, 100) if t else ""


def hub_row(row: Row, s: Session, machine: str, with_content: bool, redactor: Redactor | None = None) -> dict:
    """The board row as the hub keeps it (its plain values, stored as jsonb): with the
    machine, and without text unless asked (then with its secrets redacted, as the
    exports do)."""
    d = plain(row)
    d["machine"] = machine
    if with_content:
        v = (redactor or Redactor()).value(d)
        return v if isinstance(v, dict) else d
    d["title"] = plain_title(s)
    d.pop("doing", None)
    if d.get("state") == "needs_you":
        d["waiting_for"] = "your answer"
    agents = []
    for a in d.get("agents") or []:
        a = dict(a)
        a.pop("doing", None)
        if a.get("state") == "needs_you":
            a["waiting_for"] = "your answer"
        agents.append(a)
    d["agents"] = agents
    return d


def agent_rows(s: Session, with_content: bool, redactor: Redactor | None = None) -> list[tuple]:
    out = []
    for a in s.agents.values():
        u = a.usage
        out.append(
            (
                s.key,
                a.id,
                None if a.id == s.lead_id else (a.parent or s.lead_id),
                a.name,
                a.kind,
                a.tool_use_id,
                a.model,
                a.started_at,
                a.updated_at,
                u.input,
                u.output,
                u.cache_read,
                u.cache_write,
                u.cache_write_1h,
                (redactor or Redactor()).text(a.description) if with_content else None,
            )
        )
    return out


def response_rows(s: Session, start: int = 0) -> tuple[list[tuple], int]:
    """The session's model responses from its `start`-th usage event on (copied history
    left out: it is the other session's), and how many usage events it has. Keys come
    from all of them, so the n-th occurrence of an id keeps its key between pushes."""
    names = Occurrences()
    out = []
    n = 0
    for e in s.events:
        if e.kind != ev.USAGE or e.usage is None:
            continue
        key = names.key("r", e.agent, e.id)
        n += 1
        if n <= start or e.copied:
            continue
        u = e.usage
        out.append(
            (
                s.key,
                key,
                s.source,
                e.id,
                e.agent,
                agent_label(s, e.agent),
                model_name(e.name),
                e.t,
                u.input,
                u.output,
                u.cache_read,
                u.cache_write,
                u.cache_write_1h,
            )
        )
    return out, n


def session_values(s: Session, row: dict, machine: str, pushed_at: float) -> dict[str, Any]:
    return {
        "key": s.key,
        "source": s.source,
        "id": s.id,
        "machine": machine,
        "title": row.get("title") or "",
        "cwd": s.cwd,
        "project": row.get("project") or "",
        "state": row.get("state") or "",
        "started_at": s.started_at,
        "updated_at": s.updated_at,
        "pushed_at": pushed_at,
    }
