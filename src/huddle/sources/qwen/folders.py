"""Where Qwen Code writes (its settings may move it), folder listings reused while a
folder stands still, and the account of every file the scan looked at and did not make a
session (with why), for `huddle doctor` and the file-accounting contract."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from huddle.io import safefile

if TYPE_CHECKING:
    from .live import Registry

# Files and folders of a Qwen home that hold no session, and what they are.
KNOWN = {
    "settings.json": "the CLI's settings",
    "usage_record.jsonl": "per-exit usage totals (they repeat the records and add side calls)",
    "output-language.md": "the CLI's output language",
    "tip_history.json": "the TUI's tips",
    "installation_id": "the CLI's installation id",
    "oauth_creds.json": "credentials (never read)",
    "mcp-oauth-tokens.json": "credentials (never read)",
    "tmp": "per-project scratch (typed prompts, shell history)",
    "extensions": "extensions",
    "extension-store": "extensions",
    "skills": "skills",
    "memories": "managed memory",
    "usage": "usage statistics",
    "debug": "debug logs",
    "ide": "IDE lock files",
    "bin": "bundled tools",
    "commands": "custom commands",
    "history": "shell history",
}
PROJECT_KNOWN = {
    "memory": "managed memory",
    "meta.json": "the memory extractor's state",
    "extract-cursor.json": "the memory extractor's cursor",
}


def runtime_dir(folder: str) -> tuple[str, str | None]:
    """Where the CLI writes projects/ and sessions/: `advanced.runtimeOutputDir` of its
    settings.json when set (as it resolves it: `~` expanded), else its folder; and a
    one-line note when the setting cannot be followed."""
    path = os.path.join(folder, "settings.json")
    conf = safefile.read_json(path)
    adv = conf.get("advanced") if isinstance(conf, dict) else None
    where = adv.get("runtimeOutputDir") if isinstance(adv, dict) else None
    if not isinstance(where, str) or not where.strip():
        return folder, None
    where = os.path.expanduser(where.strip())
    if not os.path.isabs(where):  # the CLI resolves it against each project's folder
        return folder, f"{path}: a relative runtimeOutputDir ({where}) is per project: not followed"
    return where, None


class Listings:
    """A folder's sub-folders and files, listed again only when its mtime or ctime moves."""

    def __init__(self) -> None:
        self._dirs: dict[str, tuple[tuple[int, int], list[str], list[str]]] = {}

    def get(self, folder: str) -> tuple[list[str], list[str]]:
        if not folder:
            return [], []
        try:
            st = os.stat(folder)
        except OSError:
            self._dirs.pop(folder, None)
            return [], []
        stamp = (st.st_mtime_ns, st.st_ctime_ns)  # ctime: a chmod, which no mtime shows
        cached = self._dirs.get(folder)
        if cached is not None and cached[0] == stamp:
            return cached[1], cached[2]
        dirs: list[str] = []
        files: list[str] = []
        for entry in safefile.listdir(folder):  # (an unreadable folder is remembered: a note)
            try:
                (dirs if entry.is_dir(follow_symlinks=False) else files).append(entry.name)
            except OSError:
                files.append(entry.name)
        self._dirs[folder] = (stamp, dirs, files)
        return dirs, files


class Accounts(dict[str, tuple[str, str]]):
    """path -> (verdict, reason): "not a session" (a side file, a lock, a registry entry),
    "not read yet" (a file still empty), rebuilt by every scan."""

    def start(self) -> None:
        self.clear()

    def add(self, path: str, verdict: str, reason: str) -> None:
        self[path] = (verdict, reason)

    def folder(self, root: str, listings: Listings, skip: tuple[str, ...]) -> None:
        dirs, files = listings.get(root)
        for name in dirs + files:
            if name in skip:
                continue
            why = KNOWN.get(name) or ("the CLI's state" if name.startswith(".") else "not a Qwen Code session file")
            self.add(os.path.join(root, name), "not a session", why)

    def project(self, pdir: str, dirs: list[str], files: list[str]) -> None:
        for name in dirs + files:
            if name in ("chats", "subagents"):
                continue
            why = PROJECT_KNOWN.get(name) or "not a Qwen Code session file"
            self.add(os.path.join(pdir, name), "not a session", why)

    def registry(self, registry: Registry) -> None:
        for name in registry.names:
            self.add(os.path.join(registry.folder, name), "not a session", "a running TUI's registry entry")
