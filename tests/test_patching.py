"""`huddle status --json` after some sessions' files moved under its stored answer:
worked out from those sessions alone (stored.patching), and said exactly as a first read
with no cache says it, with the board file and the next stored answer as the whole path
leaves them; whatever it cannot vouch for is worked out whole."""

from __future__ import annotations

import json
import marshal
import os
import re
import shutil
import subprocess
import sys
import time
import uuid

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import SAMPLES
from huddle.io import answers
from huddle.oneshot import json_bytes
from huddle.views.said import board_text
from said import row
from test_answers import environment, fresh, make_home, settle

# how a run went: patched (stored.patching answered), stored (no board was built), read
RUN = (
    "import sys; sys.argv = ['huddle', 'status', '--json']\n"
    "import huddle.stored.patching as p\n"
    "orig, said = p.patched, []\n"
    "def patched(*a):\n    r = orig(*a); said.append(r is not None); return r\n"
    "p.patched = patched\n"
    "from huddle import entry\n"
    "try:\n    entry.main()\nexcept SystemExit as e:\n    assert not e.code\n"
    "how = 'patched' if said == [True] else 'stored' if 'huddle.views.board' not in sys.modules else 'read'\n"
    "print(how, file=sys.stderr)"
)


@pytest.fixture
def home(tmp_path):
    return make_home(tmp_path)


def status(env) -> tuple[str, list[str], str]:
    out = subprocess.run([sys.executable, "-c", RUN], capture_output=True, text=True, env=env, check=True)
    *notes, how = out.stderr.splitlines()
    return out.stdout, notes, how


def until_stored(env) -> str:
    for _ in range(3):
        out, _notes, how = status(env)
        if how == "stored":
            return out
    raise AssertionError("no run was said from a stored answer")


def append_response(path, backdate: bool = True) -> None:
    """One more model response at the end of a session: its last one again, with a new
    id, as Claude Code writes its lines; the file then stood still for an hour."""
    lines = path.read_text().splitlines()
    last = next(
        json.loads(x) for x in reversed(lines) if '"assistant"' in x and json.loads(x).get("type") == "assistant"
    )
    last["parentUuid"], last["uuid"] = last["uuid"], "00000000-0000-4000-8000-000000000001"
    last["message"]["id"] = f"msg_appended_to_{path.stem}"  # (one id in two files is one response)
    with open(path, "a") as f:
        f.write(json.dumps(last, separators=(",", ":")) + "\n")
    if backdate:
        then = time.time() - 3600
        os.utime(path, (then, then))


def board_file(hh) -> dict:
    """The status line's board file, but when it was written and huddle's own folders
    (a first read's is another huddle home)."""
    data = marshal.loads((hh / "cache" / "board.bin").read_bytes())[1]
    data.pop("written_at")
    data["dirs"] = [d for d in data["dirs"] if not d[0].startswith(str(hh))]
    return data


def session_file(home, name: str):
    return next(p for p in sorted((home / "claude" / "projects").rglob("*.jsonl")) if name in str(p))


def test_an_append_is_patched_in_and_said_as_a_first_read_says_it(home):
    env = environment(home)
    until_stored(env)
    append_response(session_file(home, "01-basic-tools"))
    out, notes, how = status(env)
    assert how == "patched"
    truth, truth_notes = fresh(home, env)
    assert (out, notes) == (truth, truth_notes)
    assert board_file(home / "hh") == board_file(home / "truth")  # the status line's board, as the whole path leaves it
    assert status(env)[:2] == (truth, truth_notes)  # the patched board was stored
    assert status(env)[2] == "stored"


def test_a_run_that_writes_the_store_leaves_its_log_empty(home):
    """A one-shot run exits with its store open: a write-ahead log it left would be read
    again by the next run's recovery, and its frames copied back into the file again at
    every later write (core.store._empty_log)."""
    env = environment(home)
    wal = home / "hh" / "cache" / "handles.db-wal"
    until_stored(env)
    assert not wal.exists() or wal.stat().st_size == 0
    append_response(session_file(home, "01-basic-tools"))
    assert status(env)[2] == "patched"
    assert not wal.exists() or wal.stat().st_size == 0


def test_the_status_lines_refresher_patches_the_stored_answer_too(home):
    """It leaves the board file as the whole path would, and the answer stored: the
    next `huddle status --json` is said from it (the refresher used to drop it)."""
    env = environment(home)
    until_stored(env)
    append_response(session_file(home, "06-named-session"))
    subprocess.run([sys.executable, "-m", "huddle.refresh"], env=env, check=True, capture_output=True)
    out, notes, how = status(env)
    assert how == "stored"
    assert (out, notes) == fresh(home, env)
    assert board_file(home / "hh") == board_file(home / "truth")


def test_the_table_after_an_append_is_drawn_from_the_patched_board(home):
    env = {**environment(home), "COLUMNS": "120"}
    until_stored(env)
    append_response(session_file(home, "01-basic-tools"))
    table = RUN.replace("'--json'", "'--all'")
    said = subprocess.run([sys.executable, "-c", table], capture_output=True, text=True, env=env, check=True)
    assert said.stderr.splitlines()[-1] == "patched"
    truth = {**env, "HUDDLE_HOME": str(home / "truth")}
    read = subprocess.run([sys.executable, "-c", table], capture_output=True, text=True, env=truth, check=True)
    assert read.stderr.splitlines()[-1] == "read"
    assert said.stdout == read.stdout and "Greeting app check" in said.stdout
    assert status(env)[2] == "stored"  # (and the board patched in was stored)


def test_a_sub_agents_append_and_a_second_session_are_patched_together(home):
    env = environment(home)
    until_stored(env)
    agent = next((home / "claude" / "projects").rglob("subagents/*.jsonl"))
    append_response(agent)
    append_response(session_file(home, "06-named-session"))
    out, notes, how = status(env)
    assert how == "patched"
    assert (out, notes) == fresh(home, env)


def test_a_line_appended_just_now_is_patched_in_and_read_again_until_it_settles(home):
    env = environment(home)
    until_stored(env)
    append_response(session_file(home, "03-background-agent"), backdate=False)
    out, notes, how = status(env)  # (half seen: its stamp never matches, and the next run looks again)
    assert how == "patched" and (out, notes) == fresh(home, env)
    out, notes, how = status(env)
    assert how == "patched" and (out, notes) == fresh(home, env)


def test_a_row_a_process_or_time_can_move_is_built_again_on_every_run(home):
    """A Claude Code process waits on the user: its row names the process, which may
    be gone by the next run without a file moving, so the stored board that holds it is
    never said as it stands; each run builds that row again, as a whole read does, and
    keeps the others' text."""
    from huddle.io import procs

    env = environment(home)
    until_stored(env)
    path = session_file(home, "01-basic-tools")
    rec = {"sessionId": path.stem, "pid": os.getpid(), "procStart": str(procs.start_time(os.getpid()))}
    entry = home / "claude" / "sessions" / f"{os.getpid()}.json"
    entry.write_text(json.dumps({**rec, "status": "waiting", "waitingFor": "approve Bash", "updatedAt": 1}))
    then = time.time() - 30  # (written a while ago: what moved around a read is read again)
    os.utime(entry, (then, then))
    os.utime(entry.parent, (then, then))
    hows = []
    for _ in range(4):
        out, notes, how = status(env)
        hows.append(how)
        assert (out, notes) == fresh(home, env)
    assert hows[0] == "read" and hows[-1] == "patched" and "stored" not in hows
    row = next(r for r in json.loads(out)["sessions"] if r["id"] == path.stem)
    assert row["state"] == "needs_you" and row["pid"] == os.getpid()
    kept = answers.kept_conditions(str(home / "hh"))
    assert kept is not None and kept["volatile"] == [f"claude:{path.stem}"]


def test_a_process_gone_without_a_file_moving_is_seen_on_the_next_run(home):
    from huddle.io import procs

    env = environment(home)
    until_stored(env)
    path = session_file(home, "06-named-session")
    agent = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    try:
        rec = {"sessionId": path.stem, "pid": agent.pid, "procStart": str(procs.start_time(agent.pid))}
        entry = home / "claude" / "sessions" / f"{agent.pid}.json"
        entry.write_text(json.dumps({**rec, "status": "waiting", "waitingFor": "approve Bash", "updatedAt": 1}))
        then = time.time() - 30
        os.utime(entry, (then, then))
        os.utime(entry.parent, (then, then))
        for _ in range(3):
            out, _notes, how = status(env)
        assert how == "patched"
        assert next(r for r in json.loads(out)["sessions"] if r["id"] == path.stem)["state"] == "needs_you"
    finally:
        agent.kill()
        agent.wait()
    out, notes, how = status(env)  # (nothing moved on disk: the process is gone)
    assert how == "patched" and (out, notes) == fresh(home, env)
    assert next(r for r in json.loads(out)["sessions"] if r["id"] == path.stem)["state"] != "needs_you"


def test_a_new_session_or_a_damaged_board_file_is_worked_out_whole(home):
    env = environment(home)
    until_stored(env)
    src = session_file(home, "01-basic-tools")
    shutil.copy(src, src.with_name("11111111-2222-4333-8444-555555555555.jsonl"))  # (its folder moves)
    settle(home)
    out, _notes, how = status(env)
    assert how == "read" and out == fresh(home, env)[0]
    until_stored(env)
    (home / "hh" / "cache" / "board.bin").write_bytes(b"torn")
    append_response(src)
    out, _notes, how = status(env)
    assert how == "read" and out == fresh(home, env)[0]
    assert board_file(home / "hh") == board_file(home / "truth")


def test_sessions_sharing_history_are_read_together_when_one_moves(tmp_path):
    """A resumed session copies its parent's responses: which of the two counts one is
    decided with both at hand (both are read, as the whole path reads them)."""
    scenario = SAMPLES / "claude-history" / "2.1.50" / "04-resume-continue-fork" / "config"
    shutil.copytree(scenario / "projects", tmp_path / "claude" / "projects")
    settle(tmp_path)
    env = environment(tmp_path)
    until_stored(env)
    first = sorted((tmp_path / "claude" / "projects").rglob("*.jsonl"))[0]
    append_response(first)
    out, notes, how = status(env)
    assert how == "patched" and (out, notes) == fresh(tmp_path, env)


UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def _clone(text: str, i: int) -> str:
    """`text` with each uuid in it another, the same one for the same uuid (clone `i`)."""
    return UUID.sub(lambda m: str(uuid.uuid5(uuid.NAMESPACE_OID, f"{i}:{m.group(0)}")), text)


def test_an_append_beside_sessions_titled_across_their_folder_is_patched(tmp_path):
    """Claude Code 1.0-2.0 folders title sessions from each other's summary records: the
    folder-mates of a moved session are asked for, and those the keeper leaves asleep
    (nothing moved that titles them) keep their rows as the stored answer says them.
    (A folder of clones with fresh ids, as the real-shaped bench corpus holds: the
    patch was refused for them, and every append read the whole home twice.)"""
    scenario = SAMPLES / "claude-history" / "2.0.14" / "05-compact" / "config" / "projects"
    (folder,) = scenario.iterdir()
    (source,) = [p for p in folder.glob("*.jsonl") if '"assistant"' in p.read_text()]
    sid = source.stem
    mine = tmp_path / "claude" / "projects" / folder.name
    mine.mkdir(parents=True)
    for i in range(4):  # every id rewritten, consistently within each clone
        text = _clone(source.read_text(), i).replace('"id":"msg_', f'"id":"msg_{i}')
        (mine / f"{_clone(sid, i)}.jsonl").write_text(text)
    settle(tmp_path)
    env = environment(tmp_path)
    until_stored(env)
    append_response(sorted(mine.glob("*.jsonl"))[1])
    out, notes, how = status(env)
    assert how == "patched" and (out, notes) == fresh(tmp_path, env)
    assert board_file(tmp_path / "hh") == board_file(tmp_path / "truth")


def _new_session_of_its_own(folder, like, i: int):
    """A session that came in `folder`: the file `like` with every id its own (a new
    `claude` run: no response of another session in it), written an hour ago."""
    text = _clone(like.read_text(), i).replace('"id":"msg_', f'"id":"msg_new{i}')
    path = folder / f"{_clone(like.stem, i)}.jsonl"
    path.write_text(text)
    then = time.time() - 3600
    for p in (path, folder):
        os.utime(p, (then, then))
    return path


def test_a_new_session_of_its_own_is_patched_in_and_said_as_a_first_read_says_it(home):
    """A file that came in a project folder, holding no response of another session: read
    alone and put among the stored rows (not the heads of every stored session), with
    the board file and the next stored answer as the whole path leaves them."""
    env = environment(home)
    until_stored(env)
    src = session_file(home, "01-basic-tools")
    new = _new_session_of_its_own(src.parent, src, 7)
    out, notes, how = status(env)
    assert how == "patched"
    assert (out, notes) == fresh(home, env)
    assert any(r["id"] == new.stem for r in json.loads(out)["sessions"])
    assert board_file(home / "hh") == board_file(home / "truth")
    assert status(env) == (out, notes, "stored")


def test_a_new_session_in_a_folder_titled_across_is_read_with_its_folder(tmp_path):
    """Claude Code 1.0-2.0 folders title sessions from each other's summary records: a
    session that came there is read with its folder-mates, as the whole path reads them."""
    scenario = SAMPLES / "claude-history" / "2.0.14" / "05-compact" / "config" / "projects"
    (folder,) = scenario.iterdir()
    mine = tmp_path / "claude" / "projects" / folder.name
    shutil.copytree(folder, mine)
    settle(tmp_path)
    env = environment(tmp_path)
    until_stored(env)
    (like,) = [p for p in mine.glob("*.jsonl") if '"assistant"' in p.read_text()]
    _new_session_of_its_own(mine, like, 3)
    out, notes, how = status(env)
    assert how == "patched" and (out, notes) == fresh(tmp_path, env)
    assert board_file(tmp_path / "hh") == board_file(tmp_path / "truth")
    assert status(env)[:2] == (out, notes)


def test_a_new_sub_agent_file_of_a_sleeping_session_is_worked_out_whole(home):
    """A file in a session's own folder is that session's (Source.came): only a core
    holding the session places it, so a stored answer that does not is not patched."""
    env = environment(home)
    until_stored(env)
    subs = next(p for p in (home / "claude" / "projects").rglob("subagents") if p.is_dir())
    agent = next(subs.glob("agent-*.jsonl"))
    shutil.copy(agent, agent.with_name("agent-a0a0a0a0a0a0a0a0a.jsonl"))
    settle(home)
    out, notes, how = status(env)
    assert how == "read" and (out, notes) == fresh(home, env)


def _nested(inner: st.SearchStrategy) -> st.SearchStrategy:
    return st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)


rows = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(), _nested, max_leaves=8
)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.dictionaries(st.text(max_size=8), rows, max_size=4), max_size=4), st.lists(st.text(), max_size=2))
def test_a_board_put_together_from_its_rows_is_the_board_as_written(board, notes):
    """Rows given decoded or as kept JSON (msgspec.Raw) alike."""
    said, spans = board_text([msgspec.Raw(msgspec.json.encode(r)) if i % 2 else r for i, r in enumerate(board)], notes)
    assert said == json_bytes({"sessions": board, **({"notes": notes} if notes else {})})
    for (start, end), one in zip(spans, board, strict=True):
        assert json.loads(said[start:end]) == json.loads(json_bytes(one))


states = st.sampled_from(["needs_you", "your_turn", "working", "waiting", "idle", "ended", ""])
board_rows = st.lists(
    st.builds(
        row,
        id=st.sampled_from("abcdefgh"),
        source=st.sampled_from(["claude", "codex"]),
        state=states,
        updated_at=st.none() | st.sampled_from(["2026-11-30T10:00:00Z", "2026-11-30T11:00:00Z", ""]),
        title=st.text(max_size=6),
    ),
    max_size=12,
    unique_by=lambda r: r.key,
)


@settings(max_examples=300, deadline=None)
@given(board_rows, board_rows, st.lists(st.text(max_size=5), max_size=1))
def test_rows_spliced_into_a_stored_board_stand_where_a_sorted_board_puts_them(before, after, notes):
    """The rows of `after` replace those of the same sessions in `before` (and any of
    `before` not in `after` and marked moved go): the text is the sorted board's."""
    from huddle.io.answers import Stale
    from huddle.stored.patching import placed, spliced
    from huddle.views.board import order_key, sort_rows
    from huddle.views.said import joined_board, row_text

    key = lambda r: r.key  # noqa: E731
    old = sort_rows(list(before))
    said, spans = board_text(old, notes)
    index = {"rows": [[key(r), *order_key(r), *span] for r, span in zip(old, spans, strict=True)]}
    moved = {key(r) for r in after} | {key(r) for r in before[::2]}  # (some moved and now off the board)
    new = [(order_key(r), row_text(r), key(r)) for r in after]
    pieces, runs = spliced(Stale({}, said, index, []), moved, new)
    text, spans = joined_board(pieces, notes)
    board = sort_rows([r for r in old if key(r) not in moved] + list(after))
    assert text == board_text(board, notes)[0]
    rows = placed(runs, spans)  # (the next patch's index: each row where it now stands)
    assert [r[0] for r in rows] == [key(r) for r in board]
    assert [text[r[5] : r[6]] for r in rows] == [row_text(r) for r in board]


@settings(max_examples=300, deadline=None)
@given(board_rows, board_rows, board_rows)
def test_rows_placed_among_sleeping_rows_stand_where_a_sorted_board_puts_them(asleep, made, later):
    """views.board.with_asleep keeps the sleeping rows' order from one board to the next
    and places the others in it: the board is the sorted board, ties and all, whether
    the sleeping rows are the same objects as last time or not."""
    from huddle.views.board import sort_rows, with_asleep

    for awake in (made, later):  # (the second: the same sleeping rows, their order kept)
        assert with_asleep(list(awake), asleep) == sort_rows([*awake, *asleep])
    assert with_asleep(list(made), later) == sort_rows([*made, *later])
