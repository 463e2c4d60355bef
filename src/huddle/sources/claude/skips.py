"""Which lines of a Claude Code transcript a read passes over, judged from their bytes where
they lie in the reader's buffer (LineReader.lines's `skip`), never decoded.

A full read passes over metadata records only (meta_skips). `huddle usage` needs model
responses (usage) and what names a session and its agents (prompts, titles, the Agent calls
and their results, inline sub-agents' records): UsageFilter. User records say early on
(within their first bytes) whether they hold a prompt or tool results, the bulk of a
transcript's bytes: those are passed over without scanning them, but for the result of an
Agent call (it names the agent started). Any other record is kept if it is a response.

The checks read Claude Code's own hand, compact JSON (`{"key":value`), and pass a line over
only on what they recognise: a line they cannot judge (re-written with spaces by another
tool, its keys in another order) is kept, and read whole.
"""

from __future__ import annotations

import re
from typing import Any, Protocol

from .records import ATTACHMENT_KEY, SKIP_PREFIXES

_TITLE_PREFIXES = (b'{"type":"custom-title"', b'{"type":"ai-title"', b'{"type":"summary"', b'{"type":"last-prompt"')
_USER_CONTENT = b'user","content":'  # after a message's '"role":"'
_AFTER_USER_CONTENT = len(_USER_CONTENT)
_RESULTS = (b'[{"tool_use_id":"', b'[{"type":"tool_result"')  # a user record's content: tool results
_CALL_ID = b'"tool_use_id":"'
_AFTER_CALL_ID = len(_CALL_ID)
_SIDECHAIN = b'"isSidechain"'
_AFTER_SIDECHAIN = len(_SIDECHAIN)


class HasCalls(Protocol):
    agent_calls: dict[str, str]  # Agent call id -> the agent calling (state.SessionState)


def _sidechain(buf: bytes, i: int, head: int, end: int) -> bool:
    """Whether the record buf[i:end] is a sidechain's (1.0.x inline sub-agents), by its head."""
    s = buf.find(_SIDECHAIN, i, head)
    return s >= 0 and not buf.startswith(b":false", s + _AFTER_SIDECHAIN, end)


class UsageFilter:
    """What the usage-only filter of one file has learnt from the lines read before."""

    __slots__ = ("prompted", "shared", "sidechains", "whole")

    def __init__(self, shared: HasCalls | None = None) -> None:
        self.shared = shared  # the session's Agent calls: their results are kept
        self.whole = shared is not None  # read whole for now (its first records: a full read's start)
        self.sidechains = False  # inline sub-agents seen (1.0.x): their records are all kept
        self.prompted = False  # a prompt read: the session's title no longer falls back on last-prompt

    def __getstate__(self) -> tuple[Any, ...]:
        return (self.shared, self.sidechains, self.whole, self.prompted)

    def __setstate__(self, state: tuple[Any, ...]) -> None:
        self.shared, self.sidechains, self.whole, self.prompted = state

    def skip(self, buf: bytes, i: int, end: int) -> bool:
        """Whether a usage-only read passes over the line buf[i:end] (read in place, as
        LineReader.lines's `skip`): metadata records, tool results, anything but a
        response, a prompt or a title. (A bound method: Python 3.11 calls it inline,
        where a functools.partial costs a C call and a new frame per line.)"""
        typed = end - i > 2 and buf[i + 2] == 116  # `{"t`: a record that opens with its type (a byte, not a search)
        if typed and buf.startswith(SKIP_PREFIXES, i):
            return True
        if self.whole:
            return False
        if typed and buf.startswith(b'{"type":"last-prompt"', i):
            return self.prompted
        head = i + 768 if i + 768 < end else end
        if self.sidechains and _sidechain(buf, i, head, end):
            return False  # each links the next to its sub-agent (kept too: a flag in another hand)
        r = buf.find(b'"role":"', i, head)  # a message's, early in a response or a user record
        if r >= 0:
            r += 8
            c = buf[r] if r < end else 0  # the role's first letter
            if c == 97:
                return False  # a response (`assistant`: the API's one role with an a)
            if c == 117 and buf.startswith(_USER_CONTENT, r, end):
                return self._user_skip(buf, r + _AFTER_USER_CONTENT, end, head)
        elif buf.find(ATTACHMENT_KEY, i, i + 300 if i + 300 < end else end) >= 0:
            return True  # context sent with a request (a third of a transcript's bytes): never counted
        return not (
            buf.startswith(_TITLE_PREFIXES, i)
            or buf.find(b'"assistant"', i, end) >= 0  # a response with a long head, or in another hand
            or buf.find(b'"user"', i, end) >= 0  # (a role is one string: no spacing changes it)
            or not opens_compact(buf, i, end)  # a title in another hand (`{"type": "summary"`)
        )

    def _user_skip(self, buf: bytes, j: int, end: int, head: int) -> bool:
        """`skip` of a user record whose content starts at buf[j]: a prompt is kept (text,
        images; or content these checks do not know); tool results only for an Agent
        call (its result names the agent)."""
        if not buf.startswith(_RESULTS, j, end):
            return False
        calls = self.shared.agent_calls if self.shared is not None else None
        if not calls:
            return True
        k = buf.find(_CALL_ID, j, head)
        if k < 0:
            return False  # whose result it is, the head does not say
        k += _AFTER_CALL_ID
        q = buf.find(b'"', k, head)
        return q >= 0 and buf[k:q].decode("utf-8", "replace") not in calls  # (an id cut: kept)

    def skips_head(self, head: bytes) -> bool:
        """`skip` of a long line by its first bytes (LineReader.lines's `cut`): true only
        where `skip` says so from a line's first kilobyte (`_by_head`), never by the
        searches of the whole line its last check makes (those lines are read whole)."""
        return bool(self.skip(head, 0, len(head))) and self._by_head(head)

    def _by_head(self, buf: bytes) -> bool:
        """Whether `skip` decides the line starting buf before its last check (`skip`'s
        branches, in its order)."""
        end = len(buf)
        if end > 2 and buf[2] == 116:
            if buf.startswith(SKIP_PREFIXES):
                return True
            if self.whole or buf.startswith(b'{"type":"last-prompt"'):
                return True
        elif self.whole:
            return True
        head = min(768, end)
        if self.sidechains:
            s = buf.find(_SIDECHAIN, 0, head)
            if s >= 0 and not buf.startswith(b":false", s + _AFTER_SIDECHAIN, end):
                return True
        r = buf.find(b'"role":"', 0, head)
        if r >= 0:
            r += 8
            c = buf[r] if r < end else 0
            return c == 97 or (c == 117 and buf.startswith(_USER_CONTENT, r, end))  # (else: the last check)
        return buf.find(ATTACHMENT_KEY, 0, min(300, end)) >= 0


ALONE = UsageFilter()  # a line judged alone


def usage_skips(buf: bytes, i: int, end: int) -> bool:
    """`UsageFilter.skip` of a line alone (no Agent call, no sidechain known before it)."""
    return ALONE.skip(buf, i, end)


def opens_compact(buf: bytes, i: int, end: int) -> bool:
    """Whether the line buf[i:end] opens in Claude Code's own hand, compact JSON
    (`{"key":value`, no space before or after the colon)."""
    k = buf.find(b'"', i + 2, i + 64 if i + 64 < end else end)
    return (
        buf.startswith(b'{"', i) and k > 0 and buf.startswith(b'":', k) and k + 2 < end and buf[k + 2] not in b" \t\r"
    )


def compact(line: bytes) -> bool:
    """Whether a line is in Claude Code's own hand: the usage-only filter reads a file in
    another (`{"key": value`) whole."""
    return opens_compact(line, 0, len(line))


# Whether a full read passes over the line buf[i:end] (meta_skips(buf, i, end)): metadata
# records only, by their first bytes. A compiled pattern's `match`: a C call per line, no
# Python frame (reader.Skip).
meta_skips = re.compile(b"|".join(re.escape(p) for p in SKIP_PREFIXES)).match


def wanted_for_usage(line: bytes) -> bool:
    return not usage_skips(line, 0, len(line))
