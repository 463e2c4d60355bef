"""Every file under an agent's session folders, accounted for.

A source's scan says, of each file it meets, one of three things: read into a
session (its handles' `files()`), known as not a session (an empty file, a probe, a
lock: the reason), or not read (a format version huddle does not know, a damaged
header, too big, unreadable: the reason). Nothing it meets is left unsaid: a file
huddle cannot place is a line in `huddle doctor`, never a session that is simply
missing. `Files` is what one scan found; `huddle.views.doctor` counts and says it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import msgspec

# Known as not a session (a reason begins with one of these; words may follow).
EMPTY = "empty file"
PROBE = "a probe, not a conversation"
LOCK = "a lock"
SIDE = "a session's side file"
NOT_A_SESSION = (EMPTY, PROBE, LOCK, SIDE)

# Not read.
UNKNOWN_VERSION = "a format version huddle does not know"
DAMAGED = "damaged header"
TOO_BIG = "too big"
UNREADABLE = "unreadable"
UNKNOWN = "not a file huddle knows"
NOT_READ = (UNKNOWN_VERSION, DAMAGED, TOO_BIG, UNREADABLE, UNKNOWN)


class FileNote(msgspec.Struct, frozen=True):
    path: str
    reason: str


class Files(msgspec.Struct, kw_only=True):
    """What one scan of a source met: the folders it looked in, and every file it met
    that is not read into a session, with the reason."""

    folders: list[str] = []
    not_sessions: list[FileNote] = []
    not_read: list[FileNote] = []

    def looked_in(self, folder: str) -> None:
        if folder and folder not in self.folders:
            self.folders.append(folder)

    def not_session(self, path: str, reason: str) -> None:
        self.not_sessions.append(FileNote(path, reason))

    def unread(self, path: str, reason: str) -> None:
        self.not_read.append(FileNote(path, reason))

    @classmethod
    def of(cls, verdicts: Mapping[str, tuple[str, str]], folders: Iterable[str] = ()) -> Files:
        """From {path: (verdict, reason)}, the form some adapters keep as they scan
        ("not a session ..." or "not read ..." as the verdict)."""
        out = cls(folders=[f for f in folders if f])
        for path, (verdict, reason) in verdicts.items():
            (out.not_session if verdict.startswith("not a session") else out.unread)(path, reason)
        return out

    def placed(self) -> set[str]:
        """The files this says something of (the rest the scan met are sessions')."""
        return {n.path for n in self.not_sessions} | {n.path for n in self.not_read}
