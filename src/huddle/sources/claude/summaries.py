"""Summary titles of Claude Code 1.0.x and early 2.0.x, placed by `leafUuid`.

Those versions write `summary` records (`{"type":"summary","summary":...,"leafUuid":...}`)
at the top of a *new* file that describe the conversations already in the project
folder: the leaf is a record of another file (a `-p --resume` run even leaves a file
holding nothing else). A summary names the session holding its leaf, never the file it
sits in. A copied history (a fork, a resume into a new file) holds the leaf too: it
goes to the session where the fewest bytes follow it (the one whose conversation it
ends). A session's title is the summary of the latest leaf it got.

Only folders that hold summaries pay anything: their session files are searched for
the leaves' uuids once, then only in the bytes appended since.
"""

from __future__ import annotations

import os
import re
from typing import Protocol

from huddle.io.safefile import open_regular

UUID_KEY = re.compile(rb'"uuid":"([^"\\]{1,100})"')
CHUNK = 8 << 20


class _Summarised(Protocol):
    path: str
    summary_search: SummarySearch

    @property
    def key(self) -> str: ...

    def summaries(self) -> dict[str, str]: ...

    def set_summary_title(self, title: str) -> bool: ...


class SummarySearch:
    """Where the leaves of a folder's summaries sit in one session file."""

    def __init__(self) -> None:
        self.leaves: frozenset[str] = frozenset()  # the leaves searched for
        self.done = 0  # bytes searched (whole lines)
        self.found: dict[str, int] = {}  # leaf -> offset of its record (the last one if repeated)
        self.size = 0

    def update(self, path: str, leaves: frozenset[str]) -> None:
        if not leaves <= self.leaves:  # new leaves: search the whole file again
            self.leaves, self.done, self.found = leaves, 0, {}
        try:
            with open_regular(path) as f:  # never a FIFO put in its place
                f.seek(self.done)
                while True:
                    data = f.read(CHUNK)
                    if not data:
                        break
                    end = data.rfind(b"\n") + 1
                    if end == 0:  # no whole line in this chunk
                        if len(data) < CHUNK:
                            break
                        end = len(data)  # a line longer than a chunk: search it in pieces
                    for m in UUID_KEY.finditer(data, 0, end):
                        u = m.group(1).decode("utf-8", "replace")
                        if u in leaves:
                            self.found[u] = self.done + m.start()
                    self.done += end
                    f.seek(self.done)
                self.size = os.fstat(f.fileno()).st_size
        except OSError:
            pass


def settle(handles: list[_Summarised]) -> set[str]:
    """Give each session of these (all of one Claude Code source) the summary title its
    leaves earn. Returns the keys whose title changed."""
    by_folder: dict[str, list[_Summarised]] = {}
    for h in handles:
        by_folder.setdefault(os.path.dirname(h.path), []).append(h)
    changed: set[str] = set()
    for group in by_folder.values():
        texts: dict[str, str] = {}
        for h in group:
            texts.update(h.summaries())
        if not texts:
            continue
        leaves = frozenset(texts)
        holder: dict[str, tuple[int, str]] = {}  # leaf -> (bytes after it, session key)
        for h in group:
            h.summary_search.update(h.path, leaves)
            sr = h.summary_search
            for leaf, off in sr.found.items():
                cand = (sr.size - off, h.key)
                if leaf not in holder or cand < holder[leaf]:
                    holder[leaf] = cand
        for h in group:
            mine = [(h.summary_search.found[leaf], leaf) for leaf, (_, key) in holder.items() if key == h.key]
            title = texts[max(mine)[1]] if mine else ""
            if h.set_summary_title(title):
                changed.add(h.key)
    return changed
