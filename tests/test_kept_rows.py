"""A sleeping session's board row kept as its JSON (model.rows.Kept): `huddle status --json`
says it as kept, without decoding it, and what sorts, lists and shows it (its brief)
says what the row says. Whatever the row holds, the board said is the same bytes as
with every row decoded, and the same board a fresh read gives."""

from __future__ import annotations

import msgspec
from hypothesis import given
from hypothesis import settings as examples
from hypothesis import strategies as st
from msgspec import UNSET

from huddle import oneshot
from huddle.core import Huddle, Keeper
from huddle.core.rowbytes import dumps, loads
from huddle.io.boardfile import board_path, read_board, write_board
from huddle.model.rows import AgentRow, Cost, Kept, Row, Tokens, as_row, decode, plain
from huddle.model.rows import kept as kept_row
from huddle.views.board import board_json, brief_of, listed, sort_rows
from huddle.views.said import RowTexts, said_board
from said import as_json
from test_board_cache import cached_board, fresh_board, home, prompt, same, settings  # noqa: F401

texts = st.none() | st.text(max_size=8)
agents = st.lists(
    st.builds(
        AgentRow,
        id=st.text(min_size=1, max_size=4),
        parent=st.none() | st.just("lead"),
        name=st.text(max_size=4),
        label=st.text(max_size=4),
        type=st.text(max_size=4),
        tool_use_id=texts,
        usage=st.just(Tokens(input=1, output=2, cache_read=3, cache_write=4)),
        quiet=st.booleans(),
        state=st.sampled_from(["needs_you", "working", "idle"]),
    ),
    max_size=2,
)
rows = st.builds(
    Row,
    source=st.sampled_from(["claude", "codex"]),
    id=st.sampled_from(["a", "b", "c"]),
    title=texts,
    cwd=texts,
    project=st.text(max_size=8),
    started_at=st.none(),
    updated_at=st.sampled_from(["2026-11-30T12:00:00.000Z", "2026-11-30T13:00:00.000Z", None]),
    usage=st.just(Tokens(input=1, output=2, cache_read=0, cache_write=0)),
    models=st.just({}),
    agents=agents,
    events=st.dictionaries(st.sampled_from(["prompt", "say"]), st.integers(0, 9), max_size=2),
    skipped_lines=st.integers(0, 3),
    tokens=st.integers(0, 2**40),
    cost=st.builds(Cost, usd=st.none() | st.floats(allow_nan=False, allow_infinity=False)),
    state=st.sampled_from(["needs_you", "working", "your_turn", "idle", "ended", ""]),
    state_since=texts,
    waiting_for=texts,
    background=st.lists(st.text(max_size=4), max_size=2),
    pid=st.just(UNSET) | st.integers(1, 2**31),
    empty=st.just(UNSET) | st.just(True),
    error=st.just(UNSET) | st.text(min_size=1, max_size=8),
)


@examples(max_examples=200, deadline=None)
@given(st.lists(rows, max_size=6), st.data())
def test_a_kept_row_is_said_sorted_listed_and_shown_as_its_row(tmp_path_factory, board, data):
    kept = [kept_row(brief_of(r), msgspec.json.encode(r)) for r in board]
    assert all(k is not None for k in kept)
    mixed = [k if data.draw(st.booleans()) else r for k, r in zip(kept, board, strict=True)]
    assert oneshot.json_bytes(said_board({"sessions": mixed})) == oneshot.json_bytes({"sessions": board})
    assert [listed(k) for k in kept if k is not None] == [listed(r) for r in board]
    order = [(r.source, r.id, r.state, r.updated_at) for r in sort_rows(list(board))]
    assert [(r.source, r.id, r.state, r.updated_at) for r in sort_rows(list(mixed))] == order
    assert [decode(msgspec.json.encode(r)) for r in board] == board  # (what the keeper gives back of it)
    assert [as_row(loads(dumps(r, as_json=True))) for r in board] == board
    home_dir = str(tmp_path_factory.mktemp("hh"))
    shown = []
    for rs in (board, mixed):
        write_board(home_dir, {"sessions": [plain(r) for r in rs]}, {}, [])
        got = read_board(board_path(home_dir))
        assert got is not None
        shown.append([{k: v for k, v in r.items() if k != "next_change"} for r in got["sessions"]])
    assert shown[0] == shown[1]  # (when time alone moves it is no part of a brief)


@examples(max_examples=100, deadline=None)
@given(st.lists(st.lists(rows, max_size=5), min_size=1, max_size=4), st.data())
def test_rows_texts_kept_between_boards_say_each_board_as_said_afresh(boards, data):
    # a server's boards one after another: some sleeping rows the same objects as before,
    # some rows built again alike, some changed; each board said as if it were the first
    texts, last_kept = RowTexts(), []
    for board in boards:
        fresh = [kept_row(brief_of(r), msgspec.json.encode(r)) if data.draw(st.booleans()) else r for r in board]
        mixed = [*(k for k in last_kept if data.draw(st.booleans())), *fresh]
        if data.draw(st.booleans()):  # (rows that stood together last time, apart now)
            mixed = data.draw(st.permutations(mixed))
        said = b"".join(oneshot.said_pieces({"sessions": mixed, "notes": ["n"]}, texts))
        assert said == oneshot.said_spans({"sessions": mixed, "notes": ["n"]})[0]
        assert said == oneshot.json_bytes(said_board({"sessions": mixed, "notes": ["n"]}))
        last_kept = [r for r in mixed if isinstance(r, Kept)]


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
    same(fresh_board(home), as_json(decoded))


def test_the_files_of_sleeping_sessions_counted_once_follow_a_session_gone(home):  # noqa: F811
    """A server counts the files of every board it says: the sleeping sessions' part is
    kept while the same sessions sleep with the same rows (views.files), and a session
    gone from under it is counted out, as a fresh read counts."""
    from huddle.views.files import file_counts

    cached_board(home)
    cached_board(home)
    h = Huddle(settings(home), keep=Keeper())
    h.refresh()
    assert h.dormant
    said = board_json(h, raw=True)
    assert said["files"] == board_json(h, raw=True)["files"]
    alone = [k for k, d in h.dormant.items() if k.startswith("claude:") and len(d.head.get("files") or ()) == 1]
    gone = next(p for p in (home / "claude" / "projects").glob("*/*.jsonl") if f"claude:{p.stem}" in alone)
    gone.unlink()
    h.refresh()
    fresh = Huddle(settings(home))
    fresh.refresh()
    after = board_json(h, raw=True)["files"]
    assert after == file_counts(fresh, {})
    assert after["claude"]["sessions"] == said["files"]["claude"]["sessions"] - 1


def test_the_board_file_a_server_writes_stamps_a_sleeping_session_as_its_cache_did(home):  # noqa: F811
    """The server's board-file writer (live.boardfile) holds the core's lock only to copy
    what a round changes: a sleeping session's files are stamped as its head says (as
    the cache found them unmoved), an awake one's as they stand; the status line finds
    the file fresh."""
    from huddle.io.boardfile import files_moved
    from huddle.live.boardfile import BoardFile
    from huddle.live.watcher import Watcher

    cached_board(home)
    cached_board(home)
    h = Huddle(settings(home), keep=Keeper())
    w = Watcher(h, lambda msgs: None, use_watchfiles=False)
    w.tick()  # (the first read: rows for every session, asleep or awake)
    w.rows.update((r.key, r) for r in board_json(h)["sessions"] if isinstance(r, Row))
    f = next((home / "claude" / "projects").glob("*01-basic-tools*/*.jsonl"))
    prompt(f, "one more thing")
    h.read_files([str(f)])
    assert f"claude:{f.stem}" in h.handles and h.dormant
    BoardFile(w).write()
    board = read_board(board_path(str(home / "hh")))
    assert board is not None
    rows = {f"{r['source']}:{r['id']}": r for r in board["sessions"]}
    asleep = next(k for k in h.dormant if k in rows)
    assert rows[asleep]["files"] == [s for s in h.dormant[asleep].head["files"] if s[1] >= 0]
    assert [s[0] for s in rows[f"claude:{f.stem}"]["files"]] == h.handles[f"claude:{f.stem}"].files()
    assert not any(files_moved(r["files"]) for r in board["sessions"])


def test_the_board_file_written_again_says_what_a_first_write_would(home):  # noqa: F811
    """A server's board-file writer encodes a sleeping session's row once while it
    sleeps (live.boardfile): after a session moved, woke or went, what it writes is what a
    writer with nothing kept writes."""
    from huddle.live.boardfile import BoardFile
    from huddle.live.watcher import Watcher

    cached_board(home)
    cached_board(home)
    h = Huddle(settings(home), keep=Keeper())
    w = Watcher(h, lambda msgs: None, use_watchfiles=False)
    w.tick()
    w.rows.update((r.key, r) for r in board_json(h)["sessions"] if isinstance(r, Row))
    path = board_path(str(home / "hh"))
    writer = BoardFile(w)
    writer.write()
    files = sorted((home / "claude" / "projects").glob("*/*.jsonl"))
    woken = next(f for f in files if f"claude:{f.stem}" in h.dormant)
    prompt(woken, "one more thing")
    h.read_files([str(woken)])
    w.rows.update((r.key, r) for r in board_json(h)["sessions"] if isinstance(r, Row))
    gone = next(k for k in h.dormant if k in w.rows and k != f"claude:{woken.stem}")
    del w.rows[gone]
    assert f"claude:{woken.stem}" in h.handles and h.dormant
    writer.write()
    again = read_board(path)
    BoardFile(w).write()
    first = read_board(path)
    assert again is not None and first is not None
    assert again.pop("written_at") <= first.pop("written_at")
    assert again == first
    assert gone not in {f"{r['source']}:{r['id']}" for r in again["sessions"]}


@examples(max_examples=150, deadline=None)
@given(st.lists(st.lists(rows, max_size=6), min_size=1, max_size=4), st.data())
def test_a_board_cut_from_the_last_is_the_board_said_afresh(boards, data):
    # a server's boards one after another, placed as board_json places them (the sleeping
    # rows, the same objects while they sleep, in their kept order; the others among them):
    # said from the last board's joined text, each is the board said as if it were the first
    from huddle.views.board import with_asleep

    texts, asleep = RowTexts(), []
    for board in boards:
        if data.draw(st.booleans()):  # (some woke, some fell asleep: other sleeping rows)
            asleep = [r for r in asleep if data.draw(st.booleans())]
            asleep += [kept_row(brief_of(r), msgspec.json.encode(r)) for r in board if data.draw(st.booleans())]
        made = [r for r in board if data.draw(st.booleans())]
        placed = with_asleep(list(made), asleep)
        for notes in ([], ["n"]):
            said = b"".join(oneshot.said_pieces({"sessions": placed, "notes": notes}, texts))
            assert said == oneshot.said_spans({"sessions": placed, "notes": notes})[0]
