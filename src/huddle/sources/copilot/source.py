"""GitHub Copilot CLI sessions: `$COPILOT_HOME/session-state/<id>/events.jsonl`.

The CLI's own rule: its home is `$COPILOT_HOME`, else `~/.copilot` (huddle reads the same
variable). CLIs before 1.0 kept their state in `$XDG_STATE_HOME/.copilot` when that was
set (today's migrate it to `~/.copilot` at start): with `XDG_STATE_HOME` set and no
`COPILOT_HOME`, huddle reads that folder's sessions too, a session in both counting once
(the migrated copy). A session is one folder: `events.jsonl` (the lead and its
sub-agents), `workspace.yaml` (its folder, its name), `inuse.<pid>.lock` while a process
has it open. The TUI's `open-sessions-state.json` says which open session is working.

Finding sessions costs listings, each reused while its folder's stamp stands; reading
a live session reads its appended bytes. What the scan looked at and did not make a
session of is kept in `accounts`, with why.
"""

from __future__ import annotations

import os
import re
from typing import Any

import msgspec

from huddle.io import safefile
from huddle.io.folders import xdg
from huddle.io.proctable import ProcCache
from huddle.io.reader import GONE, RESET, SAME, LineReader
from huddle.model.files import Files
from huddle.model.signals import Live
from huddle.sources.base import Handle, Source, drain
from huddle.sources.registry import register
from huddle.sources.settings import Settings

from .live import OPEN_SESSIONS, OpenSessions, live_signals, lock_pid, lock_stamps
from .logs import SessionLogs, index
from .parser import EventsParser
from .workspace import Workspace

EVENTS = "events.jsonl"
VERSIONS = (1, None)  # the event log formats this reader knows (None: no session.start read yet)
# lines passed over undecoded: the system prompt, resent with every message; hooks
_SKIP = re.compile(rb'\{"type":"(?:system\.message|hook\.)"').match
NOT_SESSION, NOT_READ = "not a session", "not read"
Listing = tuple[tuple[int, int] | None, list[str], list[str]]  # (stamp, folders, files)


class CopilotHandle(Handle):
    def __init__(self, source: CopilotSource, sid: str, folder: str):
        super().__init__("copilot", sid)
        self.source = source
        self.sid = sid
        self.dir = folder
        self.path = os.path.join(folder, EVENTS)
        self.reader = LineReader(self.path)
        self.workspace = Workspace(os.path.join(folder, "workspace.yaml"))
        self.locks: dict[int, float | None] = {}  # pid -> when its inuse lock was made
        self.unknown = ""  # an event log format this reader does not know: not read
        self._fresh()

    def __setstate__(self, d: dict[str, Any]) -> None:
        self.__dict__.update(d)
        self.parser.responses.relink(self.session.events)

    @property
    def follows_logs(self) -> bool:
        return not self.source.settings.usage_only  # (counting tokens, no failed request matters)

    def _fresh(self) -> None:
        s = self.session
        a = s.agent(self.sid, parent=None, name="main")
        a.kind = "main"
        a.file = self.path
        self.parser = EventsParser(s, self.sid, self.path)
        self.logs = SessionLogs(self.sid)  # the process logs of its runs: the failed model requests
        self.workspace.stamp = None  # said again on the fresh session

    def files(self) -> list[str]:
        return [self.path, *self.logs.paths()]

    def shown_from(self) -> list[str]:
        return [self.workspace.path]  # the title and folder a row shows

    def refresh(self) -> bool:
        s = self.session
        before = s.version
        status = self.reader.check()
        if status == RESET:
            s.reset()
            self.unknown = ""
            self._fresh()
        if self.follows_logs:
            self.logs.refresh()
            for pid in self.locks:  # the running process's own log
                self.logs.follow(self.source.log_index(), pid=pid)
        if status not in (GONE, SAME) and not self.unknown:
            self._drain()
        s.add_all(self.logs.due(None, self.sid))  # failures after the last line: now
        if self.workspace.refresh() or before != s.version:
            self._apply_workspace()
        return s.version != before

    def _drain(self) -> None:
        p = self.parser
        s = self.session

        def flush() -> None:  # in batches: the session's bookkeeping is per call
            s.add_all(p.out)
            p.out.clear()
            s.usage_note = p.responses.note()
            for cid, order in p.agents.orders.items():
                sub = s.agents.get(cid)
                if sub is not None and sub.order_seq is None and order.seq >= 0:
                    sub.order_seq = order.seq

        drain(self.reader, s, self._feed, p.out, flush, every=256, skip=_SKIP)

    def _feed(self, off: int, line: bytes) -> None:
        if self.unknown:
            return  # (a format it does not know: nothing after its header is read)
        p = self.parser
        marks, mark = len(p.marks), len(p.out)
        p.feed(off, line)
        if len(p.marks) > marks and self.follows_logs:  # a run began: its process's log
            self.logs.follow(self.source.log_index(), at=p.marks[-1][0])
        if self.logs.pending:  # failed requests in their place, before what came after them
            p.out[mark:mark] = self.logs.due(p.last_t, self.sid)
        if p.version not in VERSIONS:
            self.unknown = f"events.jsonl format version {p.version!r} (huddle reads version 1): not read"
            self.session.error = f"{self.path}: {self.unknown}"
            del p.out[:]

    def _apply_workspace(self) -> None:
        s, w = self.session, self.workspace
        custom, ai = w.titles(s.first_prompt)
        if (custom, ai) != (s.custom_title, s.ai_title):
            s.custom_title, s.ai_title = custom, ai
            s.version += 1
        if not s.cwd and w.text("cwd"):
            s.cwd = w.text("cwd")
            s.version += 1

    def read_record(self, path: str, offset: int, length: int) -> bytes:
        # a prompt's line without `transformedContent`, the same words with the harness's
        # date before them: what a search snippet or an export shows is what was typed
        raw = super().read_record(path, offset, length)
        if b'"transformedContent"' not in raw:
            return raw
        try:
            rec = msgspec.json.decode(raw)
            rec["data"].pop("transformedContent", None)
        except (msgspec.DecodeError, KeyError, TypeError, AttributeError):
            return raw
        return msgspec.json.encode(rec)

    def live(self, at: float | None = None) -> Live:
        return live_signals(self, at)


@register
class CopilotSource(Source):
    name = "copilot"
    label = "GitHub Copilot CLI"
    short = "Copilot"
    colour = "#6e40c9"
    folder_env = "COPILOT_HOME"
    default_folder = "~/.copilot"
    resume = "copilot --resume {id}"
    rows_from_files = True  # its locks and the TUI's state file (a row with a live pid is looked at anew)

    def __init__(self, settings: Settings):
        super().__init__(settings)
        self.legacy = legacy_folder(settings, os.environ)
        self.states = [f for f in (self.under("session-state"), _sub(self.legacy, "session-state")) if f]
        self.open = OpenSessions(self.under(OPEN_SESSIONS))
        self.system = ProcCache()  # only its `recorded` table (a test's processes) is read here
        self._listings: dict[str, Listing] = {}
        self._moved: set[str] = set()
        self._logs: tuple[list[str] | None, list[tuple[float, int, str]]] = (None, [])
        # what the last scan looked at and made no session of: path -> (verdict, why)
        self.accounts: dict[str, tuple[str, str]] = {}

    def roots(self) -> list[str]:
        return [f for f in (self.folder, self.legacy) if f]

    def exists(self) -> bool:
        return any(os.path.isdir(f) for f in self.states)

    def watch_dirs(self) -> list[str]:
        return list(self.states)

    def log_index(self) -> list[tuple[float, int, str]]:
        """The process logs (start time, pid, path), oldest first; listed again when the folder moves."""
        folder = self.under("logs")
        _, names = self._listing(folder)
        if self._logs[0] is not names:
            self._logs = (names, index(folder, names))
        return self._logs[1]

    def live_inputs(self) -> list[str]:
        return [self.open.path] if self.open.path else []

    def live_changed(self) -> set[str]:
        return self._moved

    def between_scans(self, known: dict[str, Handle]) -> set[str] | None:
        # no session came or went: the TUI's state file is the one live signal left to look at
        self._moved = {f"copilot:{sid}" for sid in self.open.refresh()}
        return self._moved

    def scan(self, known: dict[str, Handle]) -> dict[str, Handle]:
        self._moved = {f"copilot:{sid}" for sid in self.open.refresh()}
        found: dict[str, Handle] = {}
        accounts: dict[str, tuple[str, str]] = {}
        for state in self.states:
            folders, files = self._listing(state)
            for name in files:
                accounts[os.path.join(state, name)] = (NOT_SESSION, "not a session folder")
            for name in folders:
                folder = os.path.join(state, name)
                if name.startswith("."):
                    accounts[folder] = (NOT_SESSION, "the CLI's operation locks")
                    continue
                key = f"copilot:{name}"
                if key in found:
                    accounts[folder] = (NOT_READ, f"a copy of session {name}, read from {self.states[0]}")
                    continue
                h = self._session(name, folder, known.get(key), accounts)
                if h is not None:
                    found[key] = h
        self._older_sessions(accounts)
        if self.open.path and os.path.exists(self.open.path):
            accounts[self.open.path] = (NOT_SESSION, "the TUI's open sessions (a live signal)")
        self.accounts = accounts
        self.files = Files.of(accounts, self.roots())  # (huddle doctor reads these)
        return found

    def settle(self, handles: dict[str, Handle]) -> set[str]:
        for h in handles.values():  # (known once read)
            if isinstance(h, CopilotHandle) and h.unknown:
                self.accounts[h.path] = (NOT_READ, h.unknown)
        self.files = Files.of(self.accounts, self.roots())
        return set()

    def _session(
        self, sid: str, folder: str, old: Handle | None, accounts: dict[str, tuple[str, str]]
    ) -> CopilotHandle | None:
        _, files = self._listing(folder)
        if EVENTS not in files:
            why = "no events.jsonl (the CLI prunes old transcripts; a CLI before 0.0.380 wrote none)"
            accounts[folder] = (NOT_READ, why)
            return None
        for n in files:
            if lock_pid(n) is not None or n.endswith(".hold"):
                accounts[os.path.join(folder, n)] = (NOT_SESSION, "a lock (live signal)")
        if isinstance(old, CopilotHandle) and old.dir == folder:
            h = old
            h.source = self
        else:
            h = CopilotHandle(self, sid, folder)
        h.locks = lock_stamps(folder, files)
        return h

    def _older_sessions(self, accounts: dict[str, tuple[str, str]]) -> None:
        """An older CLI's `history-session-state/` (one JSON document per session, before
        events.jsonl): known, not read yet, said."""
        for root in self.roots():
            older = os.path.join(root, "history-session-state")
            _, files = self._listing(older)
            for n in files:
                accounts[os.path.join(older, n)] = (NOT_READ, "an older Copilot CLI's session document (not read yet)")

    def _listing(self, folder: str) -> tuple[list[str], list[str]]:
        """(folders, files) of a folder, listed again only when its stamp moves."""
        try:
            st = os.stat(folder)
            stamp = (st.st_mtime_ns, st.st_ctime_ns)  # ctime: a chmod, which no mtime shows
        except OSError:
            self._listings.pop(folder, None)
            return [], []
        got = self._listings.get(folder)
        if got is not None and got[0] == stamp:
            return got[1], got[2]
        folders, files = [], []
        for e in safefile.listdir(folder):  # (one that cannot be listed is remembered: a note)
            if e.is_dir(follow_symlinks=False):
                folders.append(e.name)
            else:
                files.append(e.name)
        folders.sort()
        files.sort()
        self._listings[folder] = (stamp, folders, files)
        return folders, files


def legacy_folder(settings: Settings, env: Any) -> str:
    """Where CLIs before 1.0 kept their state: `$XDG_STATE_HOME/.copilot`, when that was set
    (and no `COPILOT_HOME`, which wins in every version)."""
    if "copilot" in settings.explicit or not settings.folder("copilot"):
        return ""
    base = env.get("XDG_STATE_HOME", "")
    if not base or not os.path.isabs(base) or env.get("COPILOT_HOME"):
        return ""
    folder = os.path.join(xdg(env, "XDG_STATE_HOME"), ".copilot")
    return "" if os.path.normpath(folder) == os.path.normpath(settings.folder("copilot")) else folder


def _sub(folder: str, name: str) -> str:
    return os.path.join(folder, name) if folder else ""
