"""Cline CLI sessions (the standalone CLI of `@cline/core`, 3.x): `<data>/sessions/<id>/`
holding the session record `<id>.json`, the lead's `<id>.messages.json` and one
`agent_<agent id>.messages.json` per sub-agent, each a JSON document Cline rewrites in place.

Where, by the CLI's own rules (`@cline/shared` storage paths): the data folder is
`$CLINE_DATA_DIR`, else `$CLINE_DIR/data`, else `~/.cline/data` (`HUDDLE_CLINE_DIR` points
huddle at another); the sessions folder `$CLINE_SESSION_DATA_DIR`, else `<data>/sessions`.
`<data>/db/sessions.db` repeats the records (a row per sub-agent too); the files say all
huddle shows, so the database is left alone.

Finding sessions costs listings: the sessions folder, and a session's folder again only
when its mtime moved (a sub-agent's document appearing).
"""

from __future__ import annotations

import os
from typing import Any

from huddle.io import safefile
from huddle.io.proctable import ProcCache
from huddle.model.files import Files
from huddle.sources.base import Handle, Source
from huddle.sources.registry import register
from huddle.sources.settings import Settings

from .handle import ClineHandle

RECORD, MESSAGES, AGENT = ".json", ".messages.json", "agent_"
NOT_MINE = ("not a session", "not one of Cline's session files")


@register
class ClineSource(Source):
    name = "cline"
    label = "Cline CLI"
    short = "Cline"
    colour = "#0ea5e9"
    folder_env = "HUDDLE_CLINE_DIR"
    default_folder = "$CLINE_DATA_DIR|$CLINE_DIR/data|~/.cline/data"
    resume = "cline --id {id}"  # the TUI's resume (`--id` with a prompt is refused)

    def __init__(self, settings: Settings):
        super().__init__(settings)
        env = os.environ.get("CLINE_SESSION_DATA_DIR", "").strip()
        self.sessions_dir = env if env and os.path.isabs(env) else self.under("sessions")
        self.system = ProcCache()  # the process table, for liveness (a recorded one in tests)
        self._dirs: dict[str, tuple[int, tuple[list[str], list[str]]]] = {}  # folder -> (mtime, (folders, files))
        self._sessions: dict[
            str, tuple[Any, list[str] | None, dict[str, tuple[str, str]]]
        ] = {}  # session folder -> (its listing, sub-agent files, other entries)
        # every entry looked at and not read as a session: path -> (verdict, why)
        self.accounts: dict[str, tuple[str, str]] = {}

    def roots(self) -> list[str]:
        return [self.sessions_dir] if self.sessions_dir else []

    def exists(self) -> bool:
        return bool(self.sessions_dir) and os.path.isdir(self.sessions_dir)

    def between_scans(self, known: dict[str, Handle]) -> set[str] | None:
        return set()  # no session came or went; liveness is each row's own (its record, its pid)

    def scan(self, known: dict[str, Handle]) -> dict[str, Handle]:
        found: dict[str, Handle] = {}
        accounts: dict[str, tuple[str, str]] = {}
        subdirs, files = self._listing(self.sessions_dir)
        for name in files:
            accounts[os.path.join(self.sessions_dir, name)] = ("not a session", "a file beside the session folders")
        for sid in subdirs:
            folder = os.path.join(self.sessions_dir, sid)
            agents, others = self._session_files(sid, folder)
            accounts.update(others)
            if agents is None:
                continue
            key = "cline:" + sid
            old = known.get(key)
            if isinstance(old, ClineHandle) and old.folder == folder:
                old.source = self
                if len(agents) != len(old.docs) - 1:
                    old.set_agents(agents)
                found[key] = old
            else:
                found[key] = ClineHandle(self, sid, folder, agents)
        self.accounts = accounts
        self.files = Files.of(accounts, self.roots())  # (huddle doctor reads these)
        return found

    def _session_files(self, sid: str, folder: str) -> tuple[list[str] | None, dict[str, tuple[str, str]]]:
        """A session folder's sub-agent documents (None: no session in it) and the entries
        that are none of its files; worked out again only when the folder's listing moved."""
        listing = self._listing(folder)
        cached = self._sessions.get(folder)
        if cached is not None and cached[0] is listing:
            return cached[1], cached[2]
        inner, names = listing
        agents: list[str] | None = sorted(n for n in names if n.startswith(AGENT) and n.endswith(MESSAGES))
        mine = {sid + RECORD, sid + MESSAGES, *(agents or ())}
        others = {os.path.join(folder, n): NOT_MINE for n in [*inner, *(n for n in names if n not in mine)]}
        if sid + RECORD not in names and sid + MESSAGES not in names:
            others[folder] = ("not a session", "no session record or messages in it")
            agents = None
        self._sessions[folder] = (listing, agents, others)
        return agents, others

    def _listing(self, folder: str) -> tuple[list[str], list[str]]:
        """A folder's subfolders and other entries, listed again only when its mtime moved
        (the same tuple while it stands)."""
        try:
            mtime = os.stat(folder).st_mtime_ns
        except OSError as exc:
            safefile.remember(folder, exc)
            self._dirs.pop(folder, None)
            return [], []
        cached = self._dirs.get(folder)
        if cached is not None and cached[0] == mtime:
            return cached[1]
        dirs: list[str] = []
        files: list[str] = []
        for e in safefile.listdir(folder):  # what a file named as Cline's is, its reader says
            (dirs if e.is_dir(follow_symlinks=False) else files).append(e.name)
        out = (sorted(dirs), sorted(files))
        self._dirs[folder] = (mtime, out)
        return out
