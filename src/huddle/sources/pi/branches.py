"""The tree of one Pi session file: where the conversation went back and what it left.

Pi appends every entry as a child of the current leaf, and `/tree` (or a re-edit of an
earlier message) moves the leaf back: the next entry's `parentId` is then an earlier
entry, and what came after that point stays in the file as another branch. The branch
in use is the path from the file's last entry to its root (what Pi shows when the file
is opened again). Both branches happened and were paid for, so the timeline keeps them
in file order; a jump is said where it happens, with how much it set aside.

Kept per entry: its parent (8 hex each) and, for the human's prompts, a few words, so a
jump can say what it set aside without reading the file again.
"""

from __future__ import annotations

from huddle.model.events import one_line

PROMPT_WORDS = 60


class Jump:
    """The conversation went back to `point` (None: before the first entry)."""

    __slots__ = ("aside", "point", "prompts", "where")

    def __init__(self, point: str | None, aside: int, prompts: list[str], where: str):
        self.point = point
        self.aside = aside  # entries of the branch left behind, from the point to the old leaf
        self.prompts = prompts  # the human's prompts among them, oldest first
        self.where = where  # the prompt of the turn the point is in ("" at the start)

    def words(self) -> str:
        at = f"the turn of “{self.where}”" if self.where else "the start of the conversation"
        left = f"{self.aside} entr{'y' if self.aside == 1 else 'ies'}"
        said = ""
        if self.prompts:
            more = f" and {len(self.prompts) - 1} more prompt{'s' if len(self.prompts) > 2 else ''}"
            said = f", from “{self.prompts[0]}”" + (more if len(self.prompts) > 1 else "")
        return f"Back to an earlier point ({at}): {left} after it stay in the file on another branch{said}."


class Tree:
    def __init__(self) -> None:
        self.parent: dict[str, str | None] = {}
        self.prompts: dict[str, str] = {}
        self.last: str | None = None

    def add(self, eid: str | None, pid: str | None) -> Jump | None:
        """Record an entry; the jump it makes, if its parent is not the entry before it."""
        if eid is None or eid in self.parent:
            return None  # a version 1 file (no ids), or an id already seen
        jump = None
        if self.last is not None and pid != self.last:
            jump = self._jump(pid)
        self.parent[eid] = pid
        self.last = eid
        return jump

    def prompt(self, eid: str | None, text: str) -> None:
        if eid is not None and text:
            self.prompts[eid] = one_line(text, PROMPT_WORDS)

    def _up(self, start: str | None) -> list[str]:
        """`start` and its ancestors, nearest first (a cycle or a broken link ends it)."""
        out: list[str] = []
        seen: set[str] = set()
        cur = start
        while cur is not None and cur not in seen:
            seen.add(cur)
            out.append(cur)
            cur = self.parent.get(cur)
        return out

    def _jump(self, point: str | None) -> Jump:
        keep = set(self._up(point))
        aside: list[str] = []
        for eid in self._up(self.last):
            if eid in keep:
                break
            aside.append(eid)
        prompts = [self.prompts[e] for e in reversed(aside) if e in self.prompts]
        where = next((self.prompts[e] for e in self._up(point) if e in self.prompts), "")
        return Jump(point, len(aside), prompts, where)
