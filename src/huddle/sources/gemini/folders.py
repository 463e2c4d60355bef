"""Where Gemini CLI's chat files are, and which session each belongs to, in every layout a
version of the CLI wrote (packages/core/src/services/chatRecordingService.ts over time):

- `chats/session-<time>-<id8>.json`, one JSON document per chat, rewritten in place
  (2025-08 to 2026-04); `.jsonl` logs from 2026-04-09 on (f744913584).
- Sub-agent runs: until 2026-03-27 a sub-agent's chat was a top-level document like any
  other, recorded under the **lead's** `sessionId` (its GeminiChat took the config's),
  with `kind: "subagent"` from 2026-02-21 on (d2d345f41a); since then (104587bae8)
  `chats/<lead session id>/<sub-agent id>.json`, `.jsonl` from 2026-04-09.
- Several top-level files carrying one `sessionId`: such sub-agents, and the chat /clear
  started before 2026-03-11 (b804fe9662: a fresh recording under the old id). Gemini's
  own resume list keeps one entry per session id (cli sessionUtils `uniqueSessionsMap`):
  here they are one session too, the lead's parts read in their order. Without a kind,
  a part begun while an earlier one was still being written (its startTime before that
  one's lastUpdated) ran beside the lead: a sub-agent; one begun after them carries on.

Files are grouped by the lead's session id: a top-level file by its `sessionId` (a lead
part, or a sub-agent of that lead when its kind says so), a folder's files by the
folder's name (a sub-agent of that id, at any depth). A listing is reused while its
folder's mtime stands; a file's head is read once (again while it grows from empty).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import NamedTuple

import msgspec

from huddle.io import safefile
from huddle.model.files import EMPTY, UNREADABLE, Files

HEAD_MAX = 1 << 16  # a header line is small; a first line longer than this is not one

File = tuple[str, str | None, str]  # (agent id, its parent's id or None for the lead, path)


ROOT_MAX = 4096  # .project_root holds one path


class Head(NamedTuple):
    sid: str | None  # the session id the file carries (None: none, or not yet written)
    why: str  # why it is no chat file ("" when it may still become one)
    kind: str  # "subagent", "main" or "" (older CLIs)
    start: str = ""  # its startTime and lastUpdated (ISO times as the CLI writes them: comparable)
    last: str = ""


class ChatFolders:
    def __init__(self) -> None:
        self._dirs: dict[str, tuple[tuple[int, int], list[str], list[str]]] = {}  # folder -> (times, subdirs, files)
        self._heads: dict[str, tuple[int, Head]] = {}  # top-level chat file -> (size, its head)
        self._roots: dict[str, str] = {}  # project folder -> its project path

    def groups(
        self, chats: str, plain: Callable[[str], bool], account: Files
    ) -> tuple[dict[str, list[File]], list[tuple[str, str]], set[str]]:
        """One project's chats folder: {lead session id: its files}, the top-level files
        that are no chat (path, why), and the session ids that have a lead file; what
        else it holds, accounted for in `account` (huddle.model.files)."""
        dirs, files = self.listing(chats)
        if dirs or files:
            account.looked_in(chats)
        leads: dict[str, list[str]] = {}
        subs: list[tuple[str, str]] = []  # (lead id, path) of top-level sub-agent chats
        broken: list[tuple[str, str]] = []
        for name in sorted(files):
            path = os.path.join(chats, name)
            if not plain(path):
                account.unread(path, f"{UNREADABLE}: not a regular file in its folder")
                continue
            h = self.head(path)
            if h.sid is None:
                if h.why:
                    broken.append((path, h.why))
                else:
                    account.not_session(path, f"{EMPTY}: no first line yet")
                continue
            if h.kind == "subagent":
                subs.append((h.sid, path))
            else:
                leads.setdefault(h.sid, []).append(path)
        parent_of: dict[str, str] = {}
        child_files: dict[str, str] = {}
        for d in dirs:  # sub-agent folders are named after their lead's id
            _, kids = self.listing(os.path.join(chats, d))
            for k in sorted(kids):
                path = os.path.join(chats, d, k)
                if k.endswith((".jsonl", ".json")) and plain(path):
                    cid = k.rsplit(".", 1)[0]
                    parent_of.setdefault(cid, d)
                    child_files.setdefault(cid, path)
        out: dict[str, list[File]] = {}
        for sid, paths in leads.items():
            # Parts in their order. Before kinds were written, a sub-agent's chat was a part
            # too: one that began while an earlier part was still being written ran beside
            # the lead, a sub-agent; one begun after them all (a /clear) carries it on.
            end = ""
            for i, p in enumerate(sorted(paths, key=lambda p: (self.head(p).start, p))):
                h = self.head(p)
                if i and not h.kind and h.start and h.start < end:
                    subs.append((sid, p))
                    continue
                out.setdefault(sid, []).append((sid, None, p))
                end = max(end, h.last, h.start)
        for sid, path in subs:  # its sessionId is its lead's: it is named by its file
            out.setdefault(sid, []).append((os.path.basename(path).rsplit(".", 1)[0], sid, path))
        for cid, path in child_files.items():
            out.setdefault(_root(cid, parent_of), []).append((cid, parent_of[cid], path))
        return out, broken, set(leads)

    def head(self, path: str) -> Head:
        """A top-level file's head, from its first line (a document: whole)."""
        cached = self._heads.get(path)
        if cached is not None and cached[1].sid is not None:
            return cached[1]
        try:
            size = os.stat(path).st_size
        except OSError:
            return Head(None, "", "")
        if cached is not None and cached[0] == size:
            return cached[1]
        h = _read_head(path)
        self._heads[path] = (size, h)
        return h

    def project_root(self, pdir: str) -> str:
        got = self._roots.get(pdir)
        if got is None:
            path = os.path.join(pdir, ".project_root")
            try:  # (a FIFO in its place must not block the scan; one past a path's size is no path)
                got = safefile.read_small(path, ROOT_MAX).decode("utf-8", "replace").strip()
            except OSError as exc:
                safefile.remember(path, exc)  # said on the board until it can be read
                got = ""
            if got:
                self._roots[pdir] = got
        return got

    def listing(self, folder: str) -> tuple[list[str], list[str]]:
        if not folder:
            return [], []
        try:
            st = os.stat(folder)
            mtime = (st.st_mtime_ns, st.st_ctime_ns)  # ctime: a chmod, which no mtime shows
        except OSError:
            self._dirs.pop(folder, None)
            return [], []
        cached = self._dirs.get(folder)
        if cached is not None and cached[0] == mtime:
            return cached[1], cached[2]
        subdirs, files = [], []
        leads_only = os.path.basename(folder) == "chats"  # beside sub-agent folders: session-*.json(l)
        try:
            with os.scandir(folder) as it:
                for entry in it:
                    name = entry.name
                    if entry.is_dir(follow_symlinks=False):
                        subdirs.append(name)
                    elif name.endswith((".jsonl", ".json")) and (name.startswith("session-") or not leads_only):
                        files.append(name)  # a plain file? asked when it is read (scan)
        except OSError as exc:
            safefile.remember(folder, exc)
            return [], []
        safefile.forget(folder)
        self._dirs[folder] = (mtime, subdirs, files)
        return subdirs, files


def _read_head(path: str) -> Head:
    from . import records as rec

    try:
        with safefile.open_regular(path) as f:
            head = f.read(HEAD_MAX)
    except OSError as exc:
        safefile.remember(path, exc)  # mode 000: a note until it reads (a missing file is none)
        return Head(None, "", "")
    safefile.forget(path)
    if path.endswith(".json"):
        if not head:
            return Head(None, "", "")
        try:
            doc = rec.decode_legacy(safefile.read_small(path, safefile.DOC_MAX))
        except (OSError, msgspec.DecodeError, RecursionError) as exc:
            return Head(None, f"not a chat document ({exc})", "")
        if not doc.sessionId:
            return Head(None, "a chat document without a sessionId", "")
        return Head(doc.sessionId, "", doc.kind or "", _text(doc.startTime), _text(doc.lastUpdated))
    nl = head.find(b"\n")
    if nl < 0:
        return Head(None, "", "")  # still being written
    try:
        r = rec.decode_record(head[:nl])
    except (msgspec.DecodeError, RecursionError) as exc:
        return Head(None, f"first line is not a session header ({exc})", "")
    if not r.sessionId:
        return Head(None, "first line is not a session header (no sessionId)", "")
    return Head(r.sessionId, "", r.kind or "", _text(r.startTime))


def _text(v: object) -> str:
    return v if isinstance(v, str) else ""


def _root(cid: str, parent_of: dict[str, str]) -> str:
    seen = {cid}
    cur = cid
    while cur in parent_of:
        nxt = parent_of[cur]
        if nxt in seen:
            break
        seen.add(nxt)
        cur = nxt
    return cur
