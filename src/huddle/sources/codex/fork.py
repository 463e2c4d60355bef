"""A forked sub-agent's rollout begins with a copy of its parent's history (already
counted in the parent's file): where that copy ends, and the one note it leaves. A base of
ThreadParser (thread.py), beside the judge of its lines it extends (skips.Judged)."""

from __future__ import annotations

from huddle.model import events as ev

from . import records as rec
from .results import Emit
from .skips import Judged
from .usage import Ledger


class ForkCopy(Judged):
    ledger: Ledger
    info: rec.ThreadInfo
    agent: str
    seen_meta: bool
    copy_turn_open: bool
    copied_lines: int
    emit: Emit

    def _meta(self, p: rec.Payload) -> None:
        if not self.seen_meta:
            self.seen_meta = True  # our own: the source read it already
            return
        if p.id and p.id != self.agent:
            self.copying = True  # a forked child: the parent's history follows
            self._judge()

    def _copied(self, t: str, ordinal: int | None, p: rec.Payload) -> bool:
        start = self.info.history_start
        if start is not None and ordinal is not None:
            return ordinal < start
        if not self.copying:
            return False
        # No ordinals (0.144): the copy ends at the child's own first turn, which starts
        # while the copied parent turn is still open, or names a parent turn.
        kind = p.type if t == "event_msg" else ""
        if kind == "task_started":
            own = (p.turn_attribution is not None and p.turn_attribution.parent_turn_id) or self.copy_turn_open
            if own:
                self.copying = False
                self._judge()
                return False
            self.copy_turn_open = True
        elif kind in ("task_complete", "turn_aborted"):
            self.copy_turn_open = False
        return True

    def _copied_line(self, off: int, n: int, t: str = "", p: rec.Payload | None = None) -> None:
        """History copied from the parent: already counted there. One note, nothing else;
        of its counts, the last total is what this thread starts from: its own first
        count repeats it (and the parent's last response) before it has answered."""
        if t == "event_msg" and p is not None and p.type == "token_count" and p.info is not None:
            self.ledger.inherit(p.info.total_token_usage)
        self.copied_lines += 1
        if self.copied_lines == 1:
            parent = self.info.forked_from or self.info.parent
            text = f"Started with a copy of {parent}'s conversation"
            self.emit(ev.CONTEXT, off, n, name="inherited", copied=True, text=text)
