"""A sleeping session's board row kept as its JSON (core.cache.Kept): `huddle status --json`
says it as kept, without decoding it, and what sorts, lists and shows it (its brief)
says what the row says. Whatever the row holds, the board said is the same bytes as
with every row decoded, and the same board a fresh read gives."""

from __future__ import annotations

from hypothesis import given
from hypothesis import settings as examples
from hypothesis import strategies as st

from huddle import oneshot
from huddle.core import Huddle, Keeper
from huddle.core.cache import Kept
from huddle.core.store import dumps, loads
from huddle.io.boardfile import board_path, read_board, write_board
from huddle.views.board import board_json, brief_of, listed, sort_rows
from huddle.views.said import said_board
from test_board_cache import cached_board, fresh_board, home, prompt, same, settings  # noqa: F401

scalars = (
    st.none()
    | st.booleans()
    | st.integers(-(2**40), 2**40)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8)
)
values = st.recursive(scalars, lambda v: st.lists(v, max_size=3) | st.dictionaries(st.text(max_size=5), v, max_size=3))
rows = st.fixed_dictionaries(
    {
        "source": st.sampled_from(["claude", "codex"]),
        "id": st.sampled_from(["a", "b", "c"]),
        "state": st.sampled_from(["needs_you", "working", "your_turn", "idle", "ended", None]),
        "updated_at": st.sampled_from(["2026-11-30T12:00:00.000Z", "2026-11-30T13:00:00.000Z", None]),
    },
    optional=dict.fromkeys(
        ("title", "project", "state_since", "waiting_for", "tokens", "pid", "background", "empty", "agents"), values
    )
    | {
        "cost": st.none()
        | st.fixed_dictionaries({"usd": st.none() | st.floats(allow_nan=False, allow_infinity=False)}),
        "extra": values,
    },
)


@examples(max_examples=200, deadline=None)
@given(st.lists(rows, max_size=6), st.data())
def test_a_kept_row_is_said_sorted_listed_and_shown_as_its_row(tmp_path_factory, board, data):
    kept = [Kept(brief_of(r), raw) if (raw := dumps(r, as_json=True)) else r for r in board]
    mixed = [k if data.draw(st.booleans()) else r for k, r in zip(kept, board, strict=True)]
    assert oneshot.json_bytes(said_board({"sessions": mixed})) == oneshot.json_bytes({"sessions": board})
    assert [listed(k) for k in kept] == [listed(r) for r in board]
    order = [(r["source"], r["id"], r["state"], r["updated_at"]) for r in sort_rows(list(board))]
    assert [(r["source"], r["id"], r["state"], r["updated_at"]) for r in sort_rows(list(mixed))] == order
    assert [loads(dumps(r, as_json=True)) for r in board] == board  # (what a page reads of it)
    home_dir = str(tmp_path_factory.mktemp("hh"))
    shown = []
    for rs in (board, mixed):
        write_board(home_dir, {"sessions": rs}, {}, [])
        got = read_board(board_path(home_dir))
        assert got is not None
        shown.append(got["sessions"])
    assert shown[0] == shown[1]


def test_status_json_after_an_append_is_said_as_a_board_of_decoded_rows_is(home):  # noqa: F811
    cached_board(home)
    cached_board(home)
    f = next((home / "claude" / "projects").glob("*01-basic-tools*/*.jsonl"))
    prompt(f, "one more thing")
    h = Huddle(settings(home), keep=Keeper())
    h.refresh()
    assert h.dormant and set(h.handles) == {f"claude:{f.stem}"}
    said = board_json(h, raw=True)
    assert any(isinstance(r, Kept) for r in said["sessions"])
    decoded = board_json(h)
    assert not any(isinstance(r, Kept) for r in decoded["sessions"])
    assert oneshot.json_bytes(said_board(said)) == oneshot.json_bytes(decoded)
    same(fresh_board(home), decoded)
