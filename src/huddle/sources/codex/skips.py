"""What a Codex read passes over undecoded, judged by a line's first bytes where it lies
in the read buffer (LineReader.lines's `skip`), and the judge a thread's parser hands the
reader (its `judge`): a compiled pattern's match once a usage-only read's thread made its
first event, so a passed-over line costs the reader no Python call. A full read passes
over nothing in the buffer: what it does not need it knows by the record's type once
decoded (records.SKIP_RECORDS), which costs less than a look at every line's head (500 ns
a line, where decoding a 5 kB snapshot to skip it costs a few µs, for one line in 90)."""

from __future__ import annotations

import re
from typing import Any

from huddle.io.reader import Skip

from .records import SKIP_RECORDS

# Records never needed, recognised in the first bytes before any decoding: a line longer
# than a read passed over by its head (`skips_head`), and a usage-only read's start.
SKIP_LINE = re.compile(
    rb'"type":"(?:%s)"' % b"|".join(t.encode() for t in sorted(SKIP_RECORDS | {"thread_settings_applied"}))
)
# What a usage-only read passes over, judged by a line's head as Codex writes it
# (`{"timestamp":"…",` then `"ordinal":N,` from 0.160, then `"type":"…","payload":{"type":"…"`):
# tool calls, their outputs and results, reasoning, what the model and the harness said
# (messages, agent_message events) and what a full read passes over too. None of them
# holds a count, a title, a prompt or a link between agents. A line with another head (a
# tool's rewrite, a key order Codex never wrote) is kept: read whole, it says the same.
# (`[^"]` may stop at an escaped quote inside the time: what follows it then cannot be
# `,"type":"` in valid JSON. The time and the ordinal are matched possessively: a shorter
# run would be followed by neither a quote nor a comma, and a kept line's match gives up
# without trying each.)
_USAGE_SKIP = (
    rb'\{"timestamp":"[^"]{0,64}+","(?:ordinal":\d{1,20}+,"type|type)":"(?:'
    rb'(?:world_state|inter_agent_communication_metadata|compacted)"'
    rb'|response_item","payload":\{"type":"(?:(?:function_call_output|function_call|custom_tool_call_output'
    rb"|custom_tool_call|reasoning|web_search_call|local_shell_call|tool_search_call|tool_search_output"
    rb'|ghost_snapshot|message)")'
    rb'|event_msg","payload":\{"type":"(?:(?:agent_message|agent_reasoning|exec_command_end|patch_apply_end'
    rb"|mcp_tool_call_end|web_search_end|thread_settings_applied|context_compacted%s)\""
    rb'|item_completed"[^{]{0,200}"item":\{"type":"(?:CommandExecution|FileChange|McpToolCall|Reasoning'
    rb'|AgentMessage|WebSearch|ContextCompaction)"))'
)
# Inside a fork's copy of its parent's history (0.144 writes no ordinals) the turn markers
# say where the copy ends; anywhere else they hold nothing `huddle usage` shows.
USAGE_SKIP_HEAD = re.compile(_USAGE_SKIP % b"|task_started|task_complete|turn_aborted")
USAGE_SKIP_HEAD_IN_COPY = re.compile(_USAGE_SKIP % b"")


def meta_skips(buf: bytes, i: int, end: int) -> bool:
    """Whether a full read passes over the line buf[i:end], judged where it lies in the
    read buffer (LineReader.lines's `skip`)."""
    return SKIP_LINE.search(buf, i, i + 160 if i + 160 < end else end) is not None


def usage_skips(buf: bytes, i: int, end: int, copying: bool = False) -> bool:
    """Whether a usage-only read passes over the line buf[i:end] once its thread made an
    event (before it, as a full read: `meta_skips`, so that a session's start is the
    same). `copying`: inside a copy of another thread's history."""
    return (USAGE_SKIP_HEAD_IN_COPY if copying else USAGE_SKIP_HEAD).match(buf, i, end) is not None


_usage_head = USAGE_SKIP_HEAD.match
_usage_head_in_copy = USAGE_SKIP_HEAD_IN_COPY.match


class Judged:
    """A thread parser's judge of its lines (the base of ThreadParser): `skip` is what
    `feed` and the reader pass over, said again by `_judge` when what it depends on
    moves (the reader reads it after each line kept)."""

    usage_only: bool
    out_seen: bool
    copying: bool
    skip: Skip | None

    def _judge(self) -> None:
        """A usage-only read past the thread's first event judges a line by its head (a
        pattern's match); before that event, as a full read (nothing passed over in the
        buffer): a session starts where it did."""
        if self.usage_only and self.out_seen:
            self.skip = _usage_head_in_copy if self.copying else _usage_head
        else:
            self.skip = None

    def skips_head(self, head: bytes) -> bool:
        """Whether a line longer than a read is passed over by its first bytes
        (LineReader.lines's `cut`): by `skip`, else by the records no read needs, so a
        snapshot of megabytes is never kept to be decoded for nothing."""
        return bool((self.skip or meta_skips)(head, 0, len(head)))

    def __getstate__(self) -> dict[str, Any]:
        d = self.__dict__.copy()
        d.pop("skip", None)  # (a pattern's match would pickle its pattern: said again on load)
        return d

    def __setstate__(self, d: dict[str, Any]) -> None:
        self.__dict__.update(d)
        self._judge()
