"""Desktop notifications: one per wait, saying which session, which agent and why.

A `Notifier` is told each board row as it changes (the watcher's `on_rows`). A row that
rises into "needs you" shows one notification; the same wait never shows twice; a new
wait of the same session replaces it; the notification is closed when the wait ends
(answered, interrupted, the session gone). Waits already there when huddle starts are
on the board, not notified: a restart does not ring again for what you have seen. A wait
that began after the start is news even when the first read is what finds it (a server
shows its cached rows at once and reads for seconds after).

A run huddle hosts gets Allow / Deny buttons on its notification where the backend
has actions (D-Bus): a press answers that exact request (`on_answer`, the server's
huddle.answer call), and the host refuses it if it was settled meanwhile.

How a notification reaches the desktop is `desktop.py`'s business.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable
from typing import Protocol

from huddle.model.attention import NEEDS_YOU
from huddle.model.rows import AgentRow, Row
from huddle.model.times import parse_time
from huddle.sources.registry import display


class Backend(Protocol):
    name: str

    def show(self, summary: str, body: str, url: str | None, replaces: object = None) -> object:
        """Show a notification; returns a handle for `close` (or None)."""
        ...

    def close(self, handle: object) -> None: ...


def row_key(row: Row) -> str:
    return row.key


def agent_label(a: AgentRow) -> str:
    """How an agent is called: the lead is the lead; a sub-agent by its label (its task,
    with its own name when that says more: model.session.Agent.label), its name."""
    if not a.parent:
        return "the lead"
    return a.label or a.name or a.id or "a sub-agent"


def notice(row: Row) -> tuple[str, str]:
    """(summary, body) for a row that needs you: the session, then who and why."""
    title = row.title or row.id or "a session"
    if len(title) > 70:
        title = title[:69] + "…"
    who = [agent_label(a) for a in row.agents if a.state == NEEDS_YOU and not a.quiet]
    source = display(row.source)["label"] if row.source else ""  # (the one table)
    where = " · ".join(p for p in (source, row.project) if p)
    why = row.waiting_for or "it waits for your answer"
    if len(why) > 300:
        why = why[:299] + "…"
    agent = who[-1] if who else "the lead"
    agent = agent[:1].upper() + agent[1:]
    return f"{title} needs you", f"{agent} ({where})\n{why}" if where else f"{agent}\n{why}"


def wait_id(row: Row) -> object:
    """What tells one wait from the next: when it began (its text may be refined while
    it lasts), or its text when no time is known."""
    return row.state_since or row.waiting_for


def answer_actions(row: Row) -> list[tuple[str, str]]:
    """Allow / Deny for the permission a hosted run waits on (its request in the key)."""
    answer = row.answer if isinstance(row.answer, dict) else {}  # (huddle.answer's, as JSON says it)
    for ask in answer.get("pending") or ():
        offers = ask.get("offers") or ()
        if ask.get("type") == "permission" and "allow" in offers and "deny" in offers:
            return [(f"allow:{ask['request']}", "Allow"), (f"deny:{ask['request']}", "Deny")]
    return []


class Notifier:
    def __init__(
        self, backend: Backend, url: str | None = None, on_error=None, since: float | None = None, on_answer=None
    ) -> None:
        self.backend = backend
        self.since = time.time() if since is None else since  # waits begun before this are not news
        self.url = url  # the web app's address, for click-to-open: url + "session/<id>"
        self.shown: dict[str, tuple[object, object]] = {}  # row key -> (wait id, backend handle)
        self.seen: dict[str, object] = {}  # row key -> wait id known before we started
        self.sent = 0
        self.on_error = on_error
        self.failing = False  # said once that they are off; said again only after one worked
        self.lock = threading.Lock()
        self.on_answer = on_answer  # (session id, request, choice) -> the answer's result
        self.rows_of: dict[object, str] = {}  # backend handle -> the session id it is about
        if on_answer is not None and getattr(backend, "actions", False):
            backend.listen(self._invoked)  # type: ignore[attr-defined]

    def prime(self, rows: Iterable[Row]) -> None:
        """The board as it stood at start: its waits are not news, unless they began after
        huddle started (found by the first read)."""
        with self.lock:
            news = []
            for r in rows:
                if r.state != NEEDS_YOU:
                    continue
                began = parse_time(r.state_since)
                if began is not None and began >= self.since:
                    news.append(r)
                else:
                    self.seen[row_key(r)] = wait_id(r)
            self._changed(news)

    def rows(self, changed: list[Row], removed: list[str]) -> None:
        with self.lock:
            self._changed(changed)
            for key in removed:
                self.seen.pop(key, None)
                self._close(key)

    def _changed(self, changed: list[Row]) -> None:
        """(the lock held)"""
        for r in changed:
            key = row_key(r)
            if r.state != NEEDS_YOU:
                self.seen.pop(key, None)
                self._close(key)
                continue
            wid = wait_id(r)
            if self.seen.get(key) == wid:
                continue  # already waiting when we started
            self.seen.pop(key, None)
            held = self.shown.get(key)
            if held is not None and held[0] == wid:
                continue  # the same wait: never twice
            summary, body = notice(r)
            url = f"{self.url}session/{r.id}" if self.url else None
            acts = answer_actions(r) if self.on_answer is not None and getattr(self.backend, "actions", False) else []
            if acts:
                handle = self._call(self.backend.show, summary, body, url, held[1] if held else None, acts)
            else:
                handle = self._call(self.backend.show, summary, body, url, held[1] if held else None)
            if handle is not None:
                self.rows_of[handle] = r.id
            if held is not None and handle != held[1]:
                self._call(self.backend.close, held[1])
            self.shown[key] = (wid, handle)
            self.sent += 1

    def close_all(self) -> None:
        with self.lock:
            for key in list(self.shown):
                self._close(key)

    def _invoked(self, handle: object, key: str) -> None:
        """A button on a notification: answer that request of that session."""
        choice, _, req = key.partition(":")
        sid = self.rows_of.get(handle)
        if sid is None or choice not in ("allow", "deny") or not req.isdigit() or self.on_answer is None:
            return
        threading.Thread(target=self._call, args=(self.on_answer, sid, int(req), choice), daemon=True).start()

    def _close(self, key: str) -> None:
        held = self.shown.pop(key, None)
        if held is not None:
            self.rows_of.pop(held[1], None)
        if held is not None and held[1] is not None:
            self._call(self.backend.close, held[1])

    def _call(self, fn, *args):
        try:
            out = fn(*args)
        except Exception as exc:  # a desktop that will not listen must not stop the board
            if self.on_error is not None and not self.failing:
                why = " ".join(str(exc).split())[:200] or type(exc).__name__
                self.on_error(f"desktop notifications are off: {self.backend.name} failed ({why})")
            self.failing = True
            return None
        self.failing = False
        return out
