"""The shortcuts the Claude parse takes for speed give what the long way gives: a quiet
attachment told by its head (looked for only from the head's first brace), a long
text's one-line summary split from its head alone."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from huddle.model import events as ev
from huddle.model.events import one_line
from huddle.model.session import Session
from huddle.sources.claude.parser import FileParser
from huddle.sources.claude.state import SessionState


def _whole_line(text: str, width: int) -> str:
    s = " ".join(text.split())
    return s if len(s) <= width else s[: width - 1] + "…"


@given(
    st.lists(st.sampled_from(["a", "bc", " ", "   ", "\n", "\t", "\u3000", "\u2028", "é"]), max_size=1500).map("".join)
)
def test_a_long_texts_one_line_summary_is_the_whole_texts(text):
    for width in (1, 2, 40, 120, 160):
        assert one_line(text, width) == _whole_line(text, width)


def test_a_text_whose_head_is_all_spaces_is_summarised_from_the_whole():
    text = " " * 5000 + "word " * 10
    assert one_line(text, 120) == _whole_line(text, 120) == ("word " * 10).strip()


def _events(*records: dict) -> tuple[list[ev.Event], FileParser]:
    s = Session("claude", "s1")
    p = FileParser(s, SessionState(), "/x/s1.jsonl", "s1", is_sub=False)
    for i, r in enumerate(records):
        p.feed_kept(i, json.dumps(r, separators=(",", ":")).encode())
    return p.out, p


PROMPT = {"type": "user", "message": {"role": "user", "content": "hi"}, "timestamp": "2026-01-01T00:00:09.000Z"}


def _attachment(kind: str, before: dict | None = None) -> dict:
    head = before or {}
    return {**head, "attachment": {"type": kind}, "type": "attachment", "timestamp": "2026-01-01T00:00:05.000Z"}


def test_a_quiet_attachment_is_passed_over_by_its_head_wherever_its_first_brace_is():
    for before in (None, {"parentUuid": None}, {"x": {}}, {"a": "{" * 5}, {"cwd": "/p"}):
        out, p = _events(_attachment("date", before))
        assert out == [] and p.last_t is None, before  # never decoded: its time is not read


def test_a_said_attachment_and_a_quiet_one_past_the_head_are_read():
    out, _ = _events(_attachment("todo_reminder", {"x": {"y": 1}}))
    assert [(e.kind, e.name) for e in out] == [(ev.CONTEXT, "todo_reminder")]
    far = _attachment("date", {"pad": "p" * 400})  # the key past the head: decoded like any record
    out, p = _events(far, PROMPT)
    assert [e.kind for e in out] == [ev.PROMPT] and p.last_t is not None
