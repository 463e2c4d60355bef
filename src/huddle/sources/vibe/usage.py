"""Model usage of one unified store, each call counted once.

Per call from the journal's `completion_succeeded` results. Older segments are
deleted with their generations; what they held is covered by the projection's
cumulative `tokenUsage` at the oldest snapshot still on disk: the totals minus what
was counted, never below zero (Vibe's totals leave out calls that produced no
text, so the journal can be ahead of them). Vibe's `input_tokens` include the cached
ones (`total_tokens` = input + output): `input` is reported net of `cache_read`.
"""

from __future__ import annotations

from huddle.model.events import Usage

from . import records as vr


class UsageLedger:
    def __init__(self) -> None:
        self.covered = -1  # highest journal sequence whose usage is accounted for
        self.total = Usage()
        self.ids: set[str] = set()  # completion action ids counted

    def call(self, action_id: str, u: vr.CallUsage | None, seq: int) -> Usage | None:
        """One model call's usage, or None if it has no usage or was counted."""
        self.covered = max(self.covered, seq)
        if u is None or action_id in self.ids:
            return None
        self.ids.add(action_id)
        cached = u.cached_input_tokens or 0
        usage = Usage(
            input=max(0, (u.input_tokens or 0) - cached),
            output=u.output_tokens or 0,
            cache_read=cached,
            cache_write=u.cache_write_tokens or 0,
        )
        if not usage.problem():  # (counts that are no counts cost their line, said there: not the totals' gap too)
            self.total.add(usage)
        return usage

    def catch_up(self, tu: vr.TokenUsage | None, seq: int) -> Usage | None:
        """What the cumulative totals at `seq` hold beyond what was counted."""
        self.covered = max(self.covered, seq)
        if tu is None:
            return None
        cached = tu.cachedInputTokens or 0
        have = self.total
        gap = Usage(
            input=max(0, (tu.inputTokens or 0) - cached - have.input),
            output=max(0, (tu.outputTokens or 0) - have.output),
            cache_read=max(0, cached - have.cache_read),
        )
        if gap.total == 0:
            return None
        self.total.add(gap)
        return gap
