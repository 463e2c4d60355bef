"""A session made into one file to send: its data (`--format json`), Markdown, or a
self-contained HTML page (export_html.py). Every source, through the event model.

What goes in: the session, its agents (the tree), every event with its whole text
(long ones read back), tool inputs and outputs read back from the agent's files,
and the tokens and cost of each turn. Heavy pieces are cut to a readable size with
their full size stated; images are kept or left out. Then, before anything is
written, every string in the data (titles, cwd, prompts, replies, thinking, tool
inputs and outputs, agent names) goes through the redaction: secrets are replaced
in the data itself, never merely hidden by the page that shows it.
"""

from __future__ import annotations

import bisect
import re
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import msgspec

from huddle import __version__
from huddle.cost import pricing
from huddle.errors import BadRequest
from huddle.io.safefile import open_regular
from huddle.model import events as ev
from huddle.model.attention.trail import state_changes
from huddle.model.doing import doing
from huddle.model.events import Event, Usage
from huddle.model.pieces import piece
from huddle.model.session import Session
from huddle.model.times import iso, project_name
from huddle.model.tools import QUESTION_TOOLS
from huddle.redact.redactor import Redactor
from huddle.sources.base import Handle

if TYPE_CHECKING:
    from huddle.core import Huddle

FORMAT = "huddle-export/1"
MAX_OUTPUT = 8_000  # characters of one tool output (or input string) kept; the rest is counted
MARGIN = 8_192  # characters redacted beyond a cut, so no secret is cut in half unredacted
FORMATS = ("html", "md", "json")


@dataclass
class Options:
    redact: bool = True
    patterns: list[re.Pattern[str]] = field(default_factory=list)
    images: bool = True
    max_output: int = MAX_OUTPUT


@dataclass
class Stats:
    trimmed: int = 0
    trimmed_chars: int = 0
    images_kept: int = 0
    images_dropped: int = 0


def _cut(text: str, limit: int) -> tuple[str, str, int] | None:
    """(head, tail, characters left out) of a text over `limit`, or None when it fits."""
    if len(text) <= limit:
        return None
    head_n = limit * 3 // 4
    tail_n = limit - head_n
    return text[:head_n], text[len(text) - tail_n :], len(text) - limit


def _lines(text: str) -> int:
    return text.count("\n") + 1 if text else 0


class _Cutter:
    """Cuts heavy strings after redacting them with a margin: redaction sees each cut
    part and MARGIN characters beyond it, then the margins go."""

    def __init__(self, redactor: Redactor | None, limit: int, stats: Stats):
        self.redactor = redactor
        self.limit = limit
        self.stats = stats

    def __call__(self, text: str, what: str = "output") -> tuple[str, dict | None]:
        got = _cut(text, self.limit)
        if got is None:
            return text, None
        head_n, tail_n = len(got[0]), len(got[1])
        head = text[: head_n + MARGIN]
        tail = text[max(head_n, len(text) - tail_n - MARGIN) :]
        if self.redactor is not None:
            head = self.redactor.text(head)
            tail = self.redactor.text(tail)
        head = head[:head_n]
        tail = tail[len(tail) - tail_n :] if tail_n else ""
        self.stats.trimmed += 1
        self.stats.trimmed_chars += got[2]
        size = len(text.encode("utf-8", "replace"))
        note = f"\n\n… [{what} trimmed: {_size(size)} and {_lines(text):,} lines in all; {got[2]:,} characters left out] …\n\n"
        return head + note + tail, {"chars": len(text), "bytes": size, "lines": _lines(text), "left_out": got[2]}


def _size(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:,.0f} {unit}" if unit == "B" else f"{n:,.1f} {unit}"
        n /= 1024
    return f"{n} B"


def _cut_value(v: Any, cut: _Cutter) -> Any:
    """A tool input with its long strings cut."""
    if isinstance(v, str):
        return cut(v, "input")[0]
    if isinstance(v, dict):
        return {k: _cut_value(x, cut) for k, x in v.items()}
    if isinstance(v, list):
        return [_cut_value(x, cut) for x in v]
    return v


# -- turns: tokens and cost -----------------------------------------------------------------


def _turns(s: Session, table: pricing.Table) -> list[dict]:
    """One turn per human prompt of the lead (and one before the first, if work came
    before it): the usage of every agent in it, sub-agents included, priced per response."""
    lead = s.lead_id
    starts = [e for e in s.events if e.kind == ev.PROMPT and e.agent == lead and not e.copied]
    turns: list[dict] = []
    bounds = [(e.seq, e.t) for e in starts]
    if not bounds or (s.events and bounds[0][0] > 0):
        bounds.insert(0, (0, s.events[0].t if s.events else None))

    # each turn's start time, never before the one before it (so a bisection finds the turn)
    starts_t: list[float] = []
    for _seq, t in bounds:
        prev = starts_t[-1] if starts_t else float("-inf")
        starts_t.append(prev if t is None else max(prev, t))

    def turn_of(e: Event, i_hint: int) -> int:
        # by time when it has one (sub-agents' lines are read after the lead's), else by order
        if e.t is not None:
            return max(0, bisect.bisect_right(starts_t, e.t) - 1)
        return i_hint

    sums = [Usage() for _ in bounds]
    costs = [0.0 for _ in bounds]
    unpriced: list[set[str]] = [set() for _ in bounds]
    responses = [0 for _ in bounds]
    hint = 0
    for e in s.events:
        while hint + 1 < len(bounds) and e.seq >= bounds[hint + 1][0]:
            hint += 1
        if e.kind != ev.USAGE or e.usage is None or e.copied or e.counted_in:  # counted in another session
            continue
        i = turn_of(e, hint)
        sums[i].add(e.usage)
        responses[i] += 1
        c = table.cost(e.name, e.usage)
        if c is None:
            unpriced[i].add(pricing.model_name(e.name))
        else:
            costs[i] += c
    for i, (seq, t) in enumerate(bounds):
        end = bounds[i + 1][0] - 1 if i + 1 < len(bounds) else len(s.events) - 1
        turns.append(
            {
                "n": i + 1,
                "start_seq": seq,
                "end_seq": end,
                "t": iso(t),
                "usage": sums[i].to_dict(),
                "tokens": sums[i].total,
                "cost_usd": round(costs[i], 6),
                "unpriced": sorted(unpriced[i]),
                "responses": responses[i],
            }
        )
    return turns


# -- the data -----------------------------------------------------------------------------


def _event(e: Event, raw: bytes | None, opts: Options, cut: _Cutter, stats: Stats) -> dict:
    d = msgspec.to_builtins(e)
    for k in ("file", "offset", "length"):
        d.pop(k, None)
    if e.kind == ev.TOOL_CALL:
        d["doing"] = doing(e.name, e.detail)
    elif e.kind == ev.WAITING:
        d["wait"] = "answer" if e.name in QUESTION_TOOLS else "approval"  # as the pages' events say it
    if raw is None:
        return d
    try:
        p = piece(raw, e)
    except Exception:  # a surprising record keeps the event's own fields
        return d
    if e.kind in (ev.TOOL_CALL, ev.ORDER, ev.WAITING) and "input" in p:
        d["input"] = _cut_value(p["input"], cut)
    if e.kind in (ev.TOOL_RESULT, ev.REPORT):
        _answer(d, e, p, cut)
    elif e.truncated and isinstance(p.get("text"), str):
        d["text"], info = cut(p["text"], "text") if len(p["text"]) > 20 * opts.max_output else (p["text"], None)
        d["truncated"] = bool(info)
    imgs = p.get("images") or []
    if imgs:
        _images(d, imgs, opts, stats)
    return d


def _images(d: dict, imgs: list[Any], opts: Options, stats: Stats) -> None:
    """A record's images, kept or counted as dropped, as the options say."""
    if opts.images:
        d["images"] = imgs
        stats.images_kept += len(imgs)
    else:
        d["images_dropped"] = len(imgs)
        stats.images_dropped += len(imgs)


def _answer(d: dict, e: Event, p: dict, cut: _Cutter) -> None:
    """A result's output as its record holds it (trimmed), a report's whole text."""
    text = p.get("text") or ""
    if e.kind == ev.TOOL_RESULT:
        d["output"], info = cut(text)
        if info:
            d["output_trimmed"] = info
    elif isinstance(text, str) and len(text) > len(e.text):
        d["text"] = text
        d["truncated"] = False
    if p.get("is_error") is not None:
        d["is_error"] = p["is_error"]


def _needs_record(e: Event) -> bool:
    return (
        e.kind in (ev.TOOL_CALL, ev.TOOL_RESULT, ev.ORDER, ev.REPORT, ev.WAITING)
        or e.truncated
        or (e.kind in (ev.PROMPT, ev.CONTEXT))
    )


def _read(handle: Handle, path: str, evs: list[Event]) -> dict[tuple[int, int], bytes]:
    """The records of these events, one open per file (a source whose records are not
    byte spans, database rows, gives each back itself)."""
    out: dict[tuple[int, int], bytes] = {}
    if type(handle).read_record is not Handle.read_record:
        for e in evs:
            if (e.offset, e.length) not in out:
                try:
                    out[(e.offset, e.length)] = handle.read_record(path, e.offset, e.length)
                except OSError:
                    pass
        return out
    try:
        with open_regular(path) as f:  # an agent's file: never a FIFO's wait, never a symlink out
            for e in evs:
                if (e.offset, e.length) in out:
                    continue
                f.seek(e.offset)
                out[(e.offset, e.length)] = f.read(min(e.length, 64 << 20))
    except OSError:
        pass
    return out


def export_data(h: Huddle, sid: str, opts: Options | None = None) -> tuple[dict, Redactor | None]:
    """The export of one session as plain data (what `--format json` writes), redacted
    unless `opts.redact` is off. Returns (data, the redactor with its counts)."""
    opts = opts or Options()
    with h.lock:  # a consistent picture of the session; the reading and redacting happen after
        handle = h.find(sid)  # an id, or a unique start of one
        s = h.complete(handle.key) or handle.session
        all_events = list(s.events)
        tree = s.tree_order()
        agents = []
        depth: dict[str, int] = {}
        for a in tree:
            d = a.to_dict()
            d["label"] = s.label_of(a)
            d["parent"] = None if a.id == s.lead_id else (d["parent"] if d["parent"] in s.agents else s.lead_id)
            depth[a.id] = 0 if d["parent"] is None else depth.get(d["parent"], 0) + 1
            d["depth"] = depth[a.id]
            d["children"] = [c.id for c in tree if c.parent == a.id and c.id != a.id]
            agents.append(d)
        table = pricing.current(h.settings.huddle_home)
        cost = pricing.session_cost(s, table)
        turns = _turns(s, table)
        changes = dict(state_changes(s))  # the state each event left its agent in: the replay draws these
    redactor = Redactor(opts.patterns) if opts.redact else None
    stats = Stats()
    cut = _Cutter(redactor, opts.max_output, stats)
    by_file: dict[str, list[Event]] = {}
    for e in all_events:
        if e.file and e.offset >= 0 and e.length > 0 and _needs_record(e):
            by_file.setdefault(e.file, []).append(e)
    records = {path: _read(handle, path, evs) for path, evs in by_file.items()}
    events = []
    for e in all_events:
        raw = records.get(e.file, {}).get((e.offset, e.length)) if _needs_record(e) else None
        d = _event(e, raw, opts, cut, stats)
        st = changes.get(e.seq)
        if st is not None:
            d["state"] = st
        events.append(d)
    data: dict[str, Any] = {
        "format": FORMAT,
        "exported_at": iso(time.time()),
        "huddle": __version__,
        "session": {
            "id": s.id,
            "key": s.key,
            "source": s.source,
            "title": s.title,
            "cwd": s.cwd,
            "project": project_name(s.cwd),
            "lead": s.lead_id,
            "started_at": iso(s.started_at),
            "updated_at": iso(s.updated_at),
            "usage": s.usage.to_dict(),
            "tokens": s.usage.total,
            "models": {m: u.to_dict() for m, u in s.model_usage.items() if m},
            "cost": cost,
            "time_estimated": bool(s.time_estimated),
        },
        "agents": agents,
        "events": events,
        "turns": turns,
        "pricing": table.describe(),
    }
    if redactor is not None:
        clean = redactor.value(data, in_place=True)  # the data was just built: changed where it stands
        assert isinstance(clean, dict)
        data = clean
    data["redaction"] = (
        {"enabled": True, "user_patterns": len(opts.patterns), **redactor.summary()}
        if redactor is not None
        else {"enabled": False, "replaced": 0, "by_rule": {}}
    )
    data["trimmed"] = {"pieces": stats.trimmed, "characters_left_out": stats.trimmed_chars, "limit": opts.max_output}
    data["images"] = {"kept": stats.images_kept, "dropped": stats.images_dropped}
    return data, redactor


def summary_line(data: dict) -> str:
    """What an export did, in one line (the command prints it; the web app's header says it)."""
    r = data["redaction"]
    parts = []
    if r["enabled"]:
        n = r["replaced"]
        rules = ", ".join(f"{k} {v}" for k, v in r["by_rule"].items())
        parts.append(f"{n} secret{'s' if n != 1 else ''} replaced" + (f" ({rules})" if rules else ""))
    else:
        parts.append("not redacted")
    t = data["trimmed"]
    if t["pieces"]:
        parts.append(f"{t['pieces']} heavy piece{'s' if t['pieces'] != 1 else ''} trimmed")
    im = data["images"]
    if im["kept"]:
        parts.append(
            f"{im['kept']} image{'s' if im['kept'] != 1 else ''} kept (not redacted: check them, or --no-images)"
        )
    if im["dropped"]:
        parts.append(f"{im['dropped']} image{'s' if im['dropped'] != 1 else ''} left out")
    return "; ".join(parts)


MEDIA = {"html": "text/html; charset=utf-8", "md": "text/markdown; charset=utf-8", "json": "application/json"}


def render(data: dict, fmt: str) -> bytes:
    """An export's data as the file of a format."""
    if fmt == "json":
        return msgspec.json.format(msgspec.json.encode(data), indent=1) + b"\n"
    if fmt == "md":
        from .export_md import markdown

        return markdown(data).encode("utf-8")
    if fmt == "html":
        from .export_html import page

        return page(data)
    raise ValueError(f"format must be one of {', '.join(FORMATS)}")


def file_name(data: dict, fmt: str) -> str:
    """`huddle-<a few words of the title>-<id>.<ext>`, safe on every file system."""
    s = data["session"]
    words = re.sub(r"[^A-Za-z0-9]+", "-", (s.get("title") or "")[:40]).strip("-").lower()
    sid = re.sub(r"[^A-Za-z0-9]+", "", s["id"])[:12]
    return f"huddle-{words + '-' if words else ''}{sid}.{fmt}"


def _flag(value: object, default: bool) -> bool:
    if value in (None, ""):
        return default
    if value in ("1", "true", "yes", "on", True):
        return True
    if value in ("0", "false", "no", "off", False):
        return False
    raise BadRequest(f"bad flag: {str(value)[:20]!r} (want 1 or 0)")


def export_file(
    h: Huddle, sid: str, fmt: object = None, redact: object = None, images: object = None
) -> tuple[bytes, str, str, str]:
    """GET /api/sessions/{id}/export?format=html|md|json&redact=1&images=1: the file,
    its media type, a file name and what the export did in one line."""
    kind = fmt if fmt not in (None, "") else "html"
    if kind not in FORMATS:
        raise BadRequest(f"bad format: {str(fmt)[:20]!r} (want {', '.join(FORMATS)})")
    data, _ = export_data(h, sid, Options(redact=_flag(redact, True), images=_flag(images, True)))
    return render(data, str(kind)), MEDIA[str(kind)], file_name(data, str(kind)), summary_line(data)
