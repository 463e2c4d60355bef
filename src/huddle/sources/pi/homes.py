"""Where Pi keeps its sessions, and where the tools built on Pi keep theirs.

Pi's agent folder is `$PI_CODING_AGENT_DIR`, else `~/.pi/agent` (the source's folder).
A run writes its sessions to `--session-dir` when given (a run's own choice, which no
file records), else `$PI_CODING_AGENT_SESSION_DIR`, else `sessionDir` in
`<agent folder>/settings.json`, else `<agent folder>/sessions`; by default one folder per
working directory (`--<cwd>--/`), in a folder named by the user directly in it. A user
who moved them once has sessions in both places: every one of these that exists is read.

A tool that embeds Pi under its own name sets `piConfig: {name, configDir}` in its
package.json (Pi's config.ts): its agent folder is then `~/<configDir>/agent`, named by
`<NAME>_CODING_AGENT_DIR`, with the same layout. Those known to keep it: GSD
(`~/.gsd/agent/sessions/--<cwd>--/<time>_<id>.jsonl`, as its own runs report).
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from huddle.io import safefile

SESSION_ENV = "PI_CODING_AGENT_SESSION_DIR"
# (its name, the variable naming its agent folder, that folder under the home)
SIBLINGS: tuple[tuple[str, str, str], ...] = (("gsd", "GSD_CODING_AGENT_DIR", os.path.join(".gsd", "agent")),)


class Home:
    """One agent folder (Pi's or a sibling's) and the session folders it may use."""

    __slots__ = ("agent_dir", "name", "session_env")

    def __init__(self, name: str, agent_dir: str, session_env: str = "") -> None:
        self.name = name
        self.agent_dir = agent_dir
        self.session_env = session_env  # Pi's own: its session folder's variable

    @property
    def settings(self) -> str:
        return os.path.join(self.agent_dir, "settings.json")


def homes(folder: str, env: Mapping[str, str]) -> list[Home]:
    """Pi's agent folder (`folder`, as the settings resolved it) and the siblings' ones."""
    out = [Home("pi", folder, SESSION_ENV)] if folder else []
    home = env.get("HOME") or os.path.expanduser("~")
    for name, var, default in SIBLINGS:
        d = env.get(var) or os.path.join(home, default)
        if d and all(os.path.normpath(d) != os.path.normpath(h.agent_dir) for h in out):
            out.append(Home(name, expand(d, env)))
    return out


def expand(path: str, env: Mapping[str, str]) -> str:
    """`~` and `~/x` under the user's home, as Pi expands them."""
    if path == "~" or path.startswith("~/"):
        return os.path.join(env.get("HOME") or os.path.expanduser("~"), path[2:])
    return path


class Settings:
    """`sessionDir` of one agent folder's settings.json, read again when the file changes."""

    def __init__(self) -> None:
        self._seen: dict[str, tuple[tuple[int, int, int, int] | None, str, str]] = {}

    def session_dir(self, path: str, env: Mapping[str, str]) -> tuple[str, str]:
        """(the folder settings.json names, "" if none; a note when it cannot be used)."""
        st = safefile.stamp(path)
        got = self._seen.get(path)
        if got is not None and got[0] == st:
            return got[1], got[2]
        folder, note = "", ""
        if st is not None:
            doc = safefile.read_json(path)
            val = doc.get("sessionDir") if isinstance(doc, dict) else None
            if isinstance(val, str) and val.strip():
                val = expand(val.strip(), env)
                if os.path.isabs(val):
                    folder = val
                else:
                    note = f"{path}: sessionDir {val!r} is relative to where pi runs: not read"
        self._seen[path] = (st, folder, note)
        return folder, note


def session_dirs(hs: list[Home], env: Mapping[str, str], settings: Settings) -> tuple[list[str], list[str]]:
    """Every session folder of these homes (existing or not, each once), and notes."""
    out: list[str] = []
    notes: list[str] = []
    for h in hs:
        cands = []
        if h.session_env and env.get(h.session_env):
            d = expand(env[h.session_env], env)
            if os.path.isabs(d):
                cands.append(d)
            else:
                notes.append(f"{h.session_env}={d!r} is relative to where pi runs: not read")
        named, note = settings.session_dir(h.settings, env)
        if note:
            notes.append(note)
        if named:
            cands.append(named)
        cands.append(os.path.join(h.agent_dir, "sessions"))
        for d in cands:
            d = os.path.normpath(d)
            if d not in out:
                out.append(d)
    return out, notes
