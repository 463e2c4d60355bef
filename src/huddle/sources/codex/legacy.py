"""Rollouts from before session_meta (codex-rs, May to September 2025): after the
`{"id","timestamp",...}` head (records.LegacyHead) each model-visible item is written
bare, one per line (`{"type":"message","role":"user",...}`, `function_call`,
`function_call_output`, `reasoning`, `local_shell_call`), with `{"record_type":"state"}`
lines between turns; no envelope, no event, no time per line and no token count
(codex-rs/core/src/rollout.rs of then: `RolloutRecorder::record_items` wrote each
`ResponseItem` as it is, `record_state` the state line).

So a person's prompt is the user message itself (there is no user_message event), the
times are the head's (the CLI's local time, written with a `Z`) and said estimated, and
the usage is unknown: nothing was counted, which is not zero. A base of ThreadParser
(thread.py), beside ForkCopy.
"""

from __future__ import annotations

import re

import msgspec

from huddle.model.events import Event
from huddle.model.session import Session

from . import records as rec
from .text import harness_tag

UNKNOWN_USAGE = "this Codex version (before session_meta, summer 2025) wrote no token counts: usage unknown"
_CWD = re.compile(r"<cwd>([^<\n]{1,4096})</cwd>")


class LegacyLines:
    session: Session
    info: rec.ThreadInfo
    path: str
    is_lead: bool
    lines: int
    out: list[Event]
    _ts: object

    def _item(self, it: rec.Payload, off: int, n: int) -> None: ...

    def order(self, text: str, off: int, n: int) -> None: ...

    def feed_legacy(self, off: int, line: bytes) -> None:
        """One line of a rollout from before session_meta: a bare item or a state line."""
        try:
            it = rec.decode_payload(line)
        except msgspec.ValidationError as exc:  # (a subclass of DecodeError: first)
            self.session.problem(self.path, off, f"unexpected item shape ({exc})")
            return
        except msgspec.DecodeError as exc:
            self.session.problem(self.path, off, f"not JSON ({exc})")
            return
        if not it.type:  # `{"record_type":"state"}` (and what else names no type): nothing to show
            return
        self.lines += 1
        if self._ts is None:
            self._ts = self.info.started or None  # every event at the one time the file gives
        mark = len(self.out)
        n = len(line)
        try:
            if it.type == "message" and it.role == "user":
                text = rec.parts_text(it.content)
                tag = harness_tag(text)
                if tag == "environment_context" and not self.session.cwd:
                    m = _CWD.search(text)
                    self.session.cwd = m.group(1).strip() if m else ""
                if not tag and text.strip():
                    self.order(text, off, n)  # no user_message event then: the item is the prompt
                    return
            self._item(it, off, n)
        except Exception as exc:  # a line that decoded but holds what the code did not expect
            del self.out[mark:]
            self.session.problem(self.path, off, f"unexpected {it.type} item: {type(exc).__name__}: {exc}")
