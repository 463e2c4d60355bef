"""`huddle status --json` said again from its stored answer (huddle.io.answers) while
nothing it was worked out from moved, and worked out again, the same as a fresh read,
whatever moved: a session's file, a new one, a live signal, prices, the environment,
the cache, the import path, or the stored file itself."""

from __future__ import annotations

import json
import marshal
import os
import pathlib
import shutil
import sqlite3
import subprocess
import sys
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import SAMPLES
from huddle.io import answers

SCENARIOS = ("01-basic-tools", "02-subagents", "03-background-agent", "06-named-session")
# the stored answer's path loads no core: that is how a run says it was one
RUN = (
    "import sys; sys.argv = ['huddle', 'status', '--json']; from huddle import entry\n"
    "try:\n    entry.main()\nexcept SystemExit as e:\n    assert not e.code\n"
    "print('stored' if 'huddle.core' not in sys.modules else 'read', file=sys.stderr)"
)


def settle(root) -> None:
    """Files last written a while ago, as a history is (what moved around a read is
    read again, and no answer is stored from it)."""
    then = time.time() - 3600
    for dirpath, dirs, files in os.walk(root):
        for n in files + dirs:
            os.utime(os.path.join(dirpath, n), (then, then), follow_symlinks=False)
        os.utime(dirpath, (then, then))


@pytest.fixture
def home(tmp_path):
    return make_home(tmp_path)


def make_home(tmp_path):
    """Claude sessions of four scenarios and a Codex one, settled, no process running."""
    claude = tmp_path / "claude"
    for name in SCENARIOS:
        shutil.copytree(SAMPLES / "claude" / name / "config" / "projects", claude / "projects", dirs_exist_ok=True)
    (claude / "sessions").mkdir()  # Claude Code's registry, empty: no process runs
    codex = tmp_path / "codex"
    shutil.copytree(SAMPLES / "codex" / "shell" / "codex_home" / "sessions", codex / "sessions")
    (codex / "thread-writer-locks").mkdir()
    settle(tmp_path)
    return tmp_path


def environment(home, huddle_home: str = "hh", **more: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(answers.ENV_PREFIXES)}
    env.update(
        HOME=str(home),
        HUDDLE_HOME=str(home / huddle_home),
        CLAUDE_CONFIG_DIR=str(home / "claude"),
        CODEX_HOME=str(home / "codex"),
        VIBE_HOME=str(home / "none"),
        PYTHONIOENCODING="utf-8",
    )
    env.update(more)
    return env


def status(env, command: str = "status") -> tuple[str, list[str], str]:
    """(stdout, the notes said, "stored" or "read") of `huddle status --json` (or
    `huddle usage --json`)."""
    run = RUN.replace("'status'", repr(command))
    out = subprocess.run([sys.executable, "-c", run], capture_output=True, text=True, env=env, check=True)
    *notes, how = out.stderr.splitlines()
    return out.stdout, notes, how


def fresh(home, env, command: str = "status") -> tuple[str, list[str]]:
    """What a first read with no cache says, the truth a stored answer must equal."""
    shutil.rmtree(home / "truth", ignore_errors=True)
    (home / "truth").mkdir()
    if (home / "hh" / "pricing.json").exists():  # the user's prices live beside the cache
        shutil.copy(home / "hh" / "pricing.json", home / "truth" / "pricing.json")
    out, notes, how = status({**env, "HUDDLE_HOME": str(home / "truth")}, command)
    assert how == "read"
    return out, notes


def stored(home, env, command: str = "status") -> tuple[str, list[str]]:
    """Runs until one is said from the stored answer (the first reads, the next stores)."""
    for _ in range(3):
        out, notes, how = status(env, command)
        if how == "stored":
            return out, notes
    raise AssertionError("no run was said from a stored answer")


def test_an_unmoved_board_is_said_again_as_a_fresh_read_says_it(home):
    env = environment(home)
    first, first_notes, how = status(env)
    assert how == "read" and json.loads(first)["sessions"]
    again, notes = stored(home, env)
    assert (again, notes) == (first, first_notes) == fresh(home, env)
    assert any("vibe: no sessions folder" in n for n in notes)  # the notes are said again too
    assert status(env)[2] == "stored"


@pytest.mark.parametrize("version", ["1.0.128", "2.0.77", "2.1.50"])
def test_sessions_that_share_history_are_said_again_too(tmp_path, version):
    """A resumed or forked session copies its parent's history: both are read each time
    (a shared response counts once), and the board is still a function of their files."""
    scenario = SAMPLES / "claude-history" / version / "04-resume-continue-fork" / "config"
    shutil.copytree(scenario / "projects", tmp_path / "claude" / "projects")
    settle(tmp_path)
    env = environment(tmp_path)
    first, first_notes, _ = status(env)
    assert len(json.loads(first)["sessions"]) >= 2
    assert stored(tmp_path, env) == (first, first_notes) == fresh(tmp_path, env)
    f = sorted((tmp_path / "claude" / "projects").rglob("*.jsonl"))[0]
    rec = {"type": "user", "message": {"role": "user", "content": "more"}, "sessionId": f.stem, "uuid": "u-x"}
    with open(f, "a") as out:  # one of them moves: both are worked out again
        out.write(json.dumps({**rec, "timestamp": "2026-11-30T12:00:00.000Z"}) + "\n")
    after, notes, how = status(env)
    assert how == "read" and (after, notes) == fresh(tmp_path, env) and after != first


def _prompt(home) -> None:
    f = sorted((home / "claude" / "projects").glob("*01-basic-tools*/*.jsonl"))[0]
    rec = {"type": "user", "message": {"role": "user", "content": "one more"}, "sessionId": f.stem}
    with open(f, "a") as out:
        out.write(json.dumps({**rec, "timestamp": "2026-11-30T12:00:00.000Z", "uuid": "u-more"}) + "\n")


def _new_session(home) -> None:
    f = sorted((home / "claude" / "projects").glob("*02-subagents*/*.jsonl"))[0]
    shutil.copy(f, f.with_name("0f0f0f0f-0000-4000-8000-000000000001.jsonl"))


def _gone(home) -> None:
    sorted((home / "claude" / "projects").glob("*06-named-session*/*.jsonl"))[0].unlink()


def _registry(home) -> None:
    """A Claude Code process says it waits on you: its entry, written in place as Claude
    Code does (the registry's folder does not move)."""
    from huddle.io import procs

    f = sorted((home / "claude" / "projects").glob("*01-basic-tools*/*.jsonl"))[0]
    rec = {"sessionId": f.stem, "pid": os.getpid(), "procStart": str(procs.start_time(os.getpid()))}
    entry = home / "claude" / "sessions" / f"{os.getpid()}.json"
    entry.write_text(json.dumps({**rec, "status": "waiting", "waitingFor": "approve Bash", "updatedAt": 1}))


def _codex_lock(home) -> None:
    rollout = next((home / "codex" / "sessions").rglob("*.jsonl"))
    tid = rollout.stem[-36:]
    (home / "codex" / "thread-writer-locks" / f"{tid}.lock").write_text("")


def _codex_name(home) -> None:
    rollout = next((home / "codex" / "sessions").rglob("*.jsonl"))
    rec = {"id": rollout.stem[-36:], "thread_name": "a name given later", "updated_at": "2026-11-30T12:00:00Z"}
    with open(home / "codex" / "session_index.jsonl", "a") as out:
        out.write(json.dumps(rec) + "\n")


def _prices(home) -> None:
    (home / "hh").mkdir(exist_ok=True)
    price = {"input": 1000, "output": 1000, "cache_read": 1000, "cache_write": 1000}
    table = {"as_of": "2026-11-30", "models": {"claude-opus-5-5": price}}
    (home / "hh" / "pricing.json").write_text(json.dumps(table))


def _new_agent_folder(home) -> None:
    (home / "vibe" / "logs" / "session").mkdir(parents=True)  # VIBE_HOME is named below


def _vibe_config(home) -> None:
    """Vibe is told to keep its sessions elsewhere: a folder that is there."""
    (home / "vibe").mkdir()
    (home / "elsewhere").mkdir()
    (home / "vibe" / "config.toml").write_text(f'[session_logging]\nsave_dir = "{home / "elsewhere"}"\n')


MOVES = {
    "a line appended": (_prompt, {}),
    "a new session": (_new_session, {}),
    "a session gone": (_gone, {}),
    "a registry entry written in place": (_registry, {}),
    "a Codex writer lock taken": (_codex_lock, {}),
    "a Codex thread named": (_codex_name, {}),
    "the user's prices": (_prices, {}),
    "an agent's folder made": (_new_agent_folder, {"VIBE_HOME": "vibe"}),
    "an agent's config moves its folder": (_vibe_config, {"VIBE_HOME": "vibe"}),
}


@pytest.mark.parametrize("move", MOVES, ids=list(MOVES))
def test_whatever_moved_the_board_is_worked_out_again(home, move):
    change, named = MOVES[move]
    env = environment(home, **{k: str(home / v) for k, v in named.items()})
    before, _ = stored(home, env)
    change(home)
    after, notes, how = status(env)
    assert how == "read"
    assert (after, notes) == fresh(home, env)
    if move not in ("a Codex writer lock taken", "an agent's folder made"):
        assert after != before  # (the others may show the same rows: what counts is that they were read)


def test_a_read_that_kept_a_new_session_keeps_its_answer(home):
    """A new session read (and kept in the cache) by this run, no other process writing
    the cache between: the board is kept on the heads and scan stamps it wrote, so the
    next run is said from it (not a second read of the home), as a fresh read says it."""
    env = environment(home)
    stored(home, env)
    _new_session(home)
    new = next((home / "claude" / "projects").rglob("0f0f0f0f-*.jsonl"))
    then = time.time() - 3600  # (written a while ago: a file that moved around a read is read again)
    for p in (new, new.parent):
        os.utime(p, (then, then))
    after, notes, how = status(env)
    assert how == "read" and (after, notes) == fresh(home, env)
    assert os.path.exists(answers.answer_path(str(home / "hh")))
    assert status(env) == (after, notes, "stored")


def test_another_environment_is_not_answered_from_this_one(home):
    env = environment(home)
    stored(home, env)
    other = environment(home, VIBE_HOME=str(home / "elsewhere"))
    out, notes, how = status(other)
    assert how == "read" and any("elsewhere" in n for n in notes)
    assert (out, notes) == fresh(home, other)


def test_a_new_folder_on_the_import_path_is_new_code(home, tmp_path_factory):
    env = environment(home)
    stored(home, env)
    plugins = tmp_path_factory.mktemp("plugins")
    moved = {**env, "PYTHONPATH": os.pathsep.join([str(plugins), os.environ.get("PYTHONPATH", "")])}
    assert status(moved)[2] == "read"
    (plugins / "new_plugin.py").write_text("")  # its folder moves: plugins are found there
    assert status(moved)[2] == "read"


def test_a_write_to_the_cache_drops_the_answer(home):
    env = environment(home)
    stored(home, env)
    path = answers.answer_path(str(home / "hh"))
    assert os.path.exists(path)
    # another huddle (a server, say) reads one session again from its start: it writes the cache
    again = (
        "from huddle.core import Huddle, Keeper\n"
        "h = Huddle(keep=Keeper()); h.refresh()\n"
        "h.forget(next(iter(h.dormant))); h.refresh()\n"
    )
    subprocess.run([sys.executable, "-c", again], env=env, check=True)
    assert not os.path.exists(path)
    out, notes, how = status(env)
    assert how == "read" and (out, notes) == fresh(home, env)


def test_a_usage_run_keeps_the_answer_it_has_no_part_in(home):
    """The usage index is a cache of its own: its first build writes it, and the board's
    answer still holds (only a write to the board's cache drops it: the test above)."""
    env = environment(home)
    stored(home, env)
    path = answers.answer_path(str(home / "hh"))
    index = home / "hh" / "cache" / "usage.db"
    assert os.path.exists(path) and not index.exists()
    usage = subprocess.run(
        [sys.executable, "-m", "huddle", "usage", "--json"], capture_output=True, text=True, env=env, check=True
    )
    assert json.loads(usage.stdout)["counted"]["responses"] > 0 and index.exists()
    assert os.path.exists(path)
    out, notes, how = status(env)
    assert how == "stored" and (out, notes) == fresh(home, env)


@pytest.mark.parametrize("damage", ["torn", "garbage", "another version", "flipped byte"])
def test_a_damaged_answer_is_said_in_one_line_and_never_trusted(home, damage):
    env = environment(home)
    good, _ = stored(home, env)
    path = answers.answer_path(str(home / "hh"))
    raw = pathlib.Path(path).read_bytes()
    bad = {
        "torn": raw[: len(raw) // 2],
        "garbage": b"\x00not marshal at all",
        "another version": marshal.dumps(("huddle-answer/0", 0, b"", b"")),
        "flipped byte": raw[:-100] + bytes([raw[-100] ^ 0x20]) + raw[-99:],
    }[damage]
    with open(path, "wb") as f:
        f.write(bad)
    out, notes, how = status(env)
    assert how == "read" and out == good
    said = [n for n in notes if path in n]
    assert len(said) == 1 and ("damaged" in said[0] or "another version" in said[0])
    assert (out, [n for n in notes if n not in said]) == fresh(home, env)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_any_damage_to_the_file_gives_the_answer_or_nothing(tmp_path_factory, data):
    """Cut, mutated or extended anywhere, a stored answer loads as it was stored or not
    at all, with at most one line; it never raises."""
    home = tmp_path_factory.mktemp("answer")
    hh = str(home / "hh")
    kept = home / "kept.json"
    kept.write_text("{}")
    st_ = answers.ident(str(kept))
    assert st_ is not None
    answers.save(
        hh,
        '{"sessions": []}',
        ["a note"],
        {"inputs": [[str(kept), st_]], "scans": [], "files": [], "folders": [], "names": []},
        time.time_ns() + 10**10,
    )
    path = answers.answer_path(hh)
    raw = pathlib.Path(path).read_bytes()
    # (where, as fractions: the file's length is not the same from one example to the next)
    cut = round(data.draw(st.floats(0, 1)) * len(raw))
    at = round(data.draw(st.floats(0, 1)) * max(0, cut - 1))
    flip = data.draw(st.integers(0, 255))
    tail = data.draw(st.binary(max_size=8))
    bad = bytearray(raw[:cut])
    if bad:
        bad[at] ^= flip
    with open(path, "wb") as f:
        f.write(bytes(bad) + tail)
    hit, problem = answers.load(hh)
    assert hit is None or hit == (b'{"sessions": []}', ["a note"])
    assert problem is None or problem.startswith(path)


def test_a_miss_looks_at_the_newest_files_first_and_never_at_the_answer(tmp_path):
    """The stamps are kept newest first (the file appended to last is the one likely
    to have moved), and a miss is told before the answer's own checksum is worked out:
    an answer damaged under conditions that no longer hold is simply worked out again."""
    hh = str(tmp_path / "hh")
    now = time.time()
    files = []
    for i, age in enumerate((7200, 60, 3600)):
        p = tmp_path / f"s{i}.jsonl"
        p.write_text("{}\n")
        os.utime(p, (now - age, now - age))
        st_ = p.stat()
        files.append([str(p), st_.st_size, st_.st_mtime_ns])
    cond = {"inputs": [], "scans": [], "files": files, "folders": [], "names": []}
    assert answers.save(hh, b'{"sessions": []}', [], cond, time.time_ns())
    path = answers.answer_path(hh)
    raw = pathlib.Path(path).read_bytes()
    assert raw.endswith(b'{"sessions": []}')  # (the answer as written, last)
    kept = answers.kept_conditions(hh)
    assert kept is not None and [f[0] for f in kept["files"]] == [files[1][0], files[2][0], files[0][0]]
    assert answers.load(hh) == ((b'{"sessions": []}', []), None)
    with open(files[1][0], "a") as f:  # the newest moved, and the answer's bytes are damaged
        f.write("{}\n")
    pathlib.Path(path).write_bytes(raw[:-1] + b"]")
    assert answers.load(hh) == (None, None)
    os.truncate(files[1][0], 3)  # as it was stamped (size, mtime): now the damage is found and said
    os.utime(files[1][0], ns=(files[1][2], files[1][2]))
    hit, problem = answers.load(hh)
    assert hit is None and problem == f"{path}: damaged; worked out again"


def test_the_table_is_drawn_from_the_stored_answer_as_from_a_read(home):
    env = {**environment(home), "COLUMNS": "120"}
    stored(home, env)
    table = (
        "import sys; sys.argv = ['huddle', 'status', '--all']; from huddle import entry\n"
        "try:\n    entry.main()\nexcept SystemExit as e:\n    assert not e.code\n"
        "print('stored' if 'huddle.core' not in sys.modules else 'read', file=sys.stderr)"
    )
    said = subprocess.run([sys.executable, "-c", table], capture_output=True, text=True, env=env, check=True)
    assert said.stderr.splitlines()[-1] == "stored"
    shutil.rmtree(home / "truth", ignore_errors=True)
    truth = {**env, "HUDDLE_HOME": str(home / "truth")}
    read = subprocess.run([sys.executable, "-c", table], capture_output=True, text=True, env=truth, check=True)
    assert read.stderr.splitlines()[-1] == "read"
    assert said.stdout == read.stdout and "Greeting app check" in said.stdout
    assert said.stderr.splitlines()[:-1] == read.stderr.splitlines()[:-1]


# -- `huddle usage --json`, kept the same way from the usage index (usage.bin) ----------


def _response(home) -> None:
    """One more model response at the end of a session: the totals move."""
    f = sorted((home / "claude" / "projects").glob("*01-basic-tools*/*.jsonl"))[0]
    usage = {"input_tokens": 3, "output_tokens": 5, "cache_read_input_tokens": 7, "cache_creation_input_tokens": 0}
    message = {"id": "msg_more", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5"}
    message.update(content=[{"type": "text", "text": "more"}], stop_reason="end_turn", usage=usage)
    rec = {"type": "assistant", "sessionId": f.stem, "uuid": "a-more", "timestamp": "2026-11-30T12:00:00.000Z"}
    with open(f, "a") as out:  # (compact, as Claude Code writes it)
        out.write(json.dumps({**rec, "message": message}, separators=(",", ":")) + "\n")


USAGE_MOVES = {
    "a response appended": _response,
    "a line appended": _prompt,
    "a new session": _new_session,
    "a session gone": _gone,
    "the user's prices": _prices,
}


def test_an_unmoved_usage_report_is_said_again_as_a_fresh_count_says_it(home):
    env = environment(home)
    first, first_notes, how = status(env, "usage")
    assert how == "read" and json.loads(first)["counted"]["responses"] > 0
    assert stored(home, env, "usage") == (first, first_notes) == fresh(home, env, "usage")
    assert any("vibe: no sessions folder" in n for n in first_notes)  # the notes are said again too


def test_a_first_usage_count_keeps_its_answer(home):
    """The first count (nothing cached) keeps its report on the heads it wrote: the
    next run is said from it, as a fresh count says it."""
    env = environment(home)
    first, first_notes, how = status(env, "usage")
    assert how == "read" and os.path.exists(answers.answer_path(str(home / "hh"), answers.USAGE))
    again, notes, how = status(env, "usage")
    assert how == "stored" and (again, notes) == (first, first_notes) == fresh(home, env, "usage")


def test_a_usage_count_that_read_an_append_keeps_its_answer(home):
    env = environment(home)
    stored(home, env, "usage")
    _response(home)
    settle(home)  # (appended a while ago: a file that moved around a read is read again)
    after, notes, how = status(env, "usage")
    assert how == "read"
    again = status(env, "usage")
    assert again == (after, notes, "stored") and (after, notes) == fresh(home, env, "usage")


@pytest.mark.parametrize("move", USAGE_MOVES, ids=list(USAGE_MOVES))
def test_whatever_moved_the_usage_report_is_counted_again(home, move):
    env = environment(home)
    before, _ = stored(home, env, "usage")
    USAGE_MOVES[move](home)
    after, notes, how = status(env, "usage")
    assert how == "read"
    truth = after.replace(str(home / "hh" / "pricing.json"), str(home / "truth" / "pricing.json"))  # (named)
    assert (truth, notes) == fresh(home, env, "usage")
    if move not in ("a line appended", "a new session"):  # (a prompt, a copy's responses: no new token)
        assert after != before


@pytest.mark.parametrize("version", ["1.0.128", "2.1.50"])
def test_usage_shared_across_sessions_is_said_again_counted_once(tmp_path, version):
    """A resumed or forked session's copies of its parent's responses count once: such
    sessions are read each time, and the count is still a function of their files."""
    scenario = SAMPLES / "claude-history" / version / "04-resume-continue-fork" / "config"
    shutil.copytree(scenario / "projects", tmp_path / "claude" / "projects")
    settle(tmp_path)
    env = environment(tmp_path)
    first, first_notes, _ = status(env, "usage")
    db = sqlite3.connect(tmp_path / "hh" / "cache" / "usage.db")
    heads = [marshal.loads(h) for (h,) in db.execute("SELECT head FROM entries")]
    db.close()
    assert any(h.get("entangled") for h in heads)  # (they share responses: read together each run)
    assert stored(tmp_path, env, "usage") == (first, first_notes) == fresh(tmp_path, env, "usage")


def test_each_cache_drops_only_its_own_answer(home):
    """A write to the usage index drops the usage answer, one to the board's cache the
    board's: neither vouched for the other's."""
    env = environment(home)
    stored(home, env, "usage")
    stored(home, env)
    board, usage = answers.answer_path(str(home / "hh")), answers.answer_path(str(home / "hh"), answers.USAGE)
    again = (
        "import msgspec\nfrom huddle.core import BoardMode, Huddle, Keeper, UsageMode\nfrom huddle.sources import Settings\n"
        "s = Settings.from_env()\n"
        "s = msgspec.structs.replace(s, usage_only=True) if {usage} else s\n"
        "h = Huddle(s, keep=Keeper(UsageMode() if {usage} else BoardMode(), {name!r})); h.refresh()\n"
        "h.forget(next(iter(h.dormant))); h.refresh()\n"
    )
    subprocess.run([sys.executable, "-c", again.format(usage=False, name="handles.db")], env=env, check=True)
    assert not os.path.exists(board) and os.path.exists(usage)
    assert status(env, "usage")[2] == "stored"
    subprocess.run([sys.executable, "-c", again.format(usage=True, name="usage.db")], env=env, check=True)
    assert not os.path.exists(usage)
    out, notes, how = status(env, "usage")
    assert how == "read" and (out, notes) == fresh(home, env, "usage")


def test_a_one_shot_run_holds_its_heads_out_of_the_collector_and_a_library_does_not(home):
    """`huddle status --json` exits after its answer: the heads it loads are frozen (no
    collection walks them again). A process that lives on, using the core as a library,
    freezes nothing (a freeze would keep whatever garbage it found)."""
    env = environment(home)
    status(env)  # the cache
    (home / "hh" / "cache" / "status.bin").unlink(missing_ok=True)  # (so the next run reads the cache)
    once = (
        "import gc, sys; sys.argv = ['huddle', 'status', '--json']; from huddle import entry\n"
        "try:\n    entry.main()\nexcept SystemExit:\n    pass\n"
        "print(gc.get_freeze_count(), gc.isenabled(), file=sys.stderr)"
    )
    lib = (
        "import gc, sys\nfrom huddle.core import Huddle, Keeper\n"
        "h = Huddle(keep=Keeper()); h.refresh()\n"
        "assert h.dormant\nprint(gc.get_freeze_count(), gc.isenabled(), file=sys.stderr)"
    )
    said = [
        subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
        for code in (once, lib)
    ]
    frozen, enabled = said[0].stderr.split()[-2:]
    assert int(frozen) > 0 and enabled == "True"
    assert said[1].stderr.split()[-2:] == ["0", "True"]


def test_a_stale_answer_a_server_is_asked_with_is_checked_before_it_is_patched(tmp_path):
    """A command asking a running server needs only what moved: the stale answer's text
    and index are not checked then, but are before anything is patched from them (a
    damaged one is said in one line and never used)."""
    hh = str(tmp_path / "hh")
    p = tmp_path / "s.jsonl"
    p.write_text("{}\n")
    old = time.time_ns() - 3_600_000_000_000
    os.utime(p, ns=(old, old))
    st_ = p.stat()
    cond = {"inputs": [], "scans": [], "files": [[str(p), st_.st_size, st_.st_mtime_ns]], "folders": [], "names": []}
    assert answers.save(hh, b'{"sessions": []}', [], cond, time.time_ns(), index={"rows": []})
    with open(p, "a") as f:
        f.write("{}\n")
    _hit, stale, problem = answers.look(hh, answers.STATUS, answers.PATCHABLE, came=True)
    assert stale is not None and problem is None and stale.moved == [str(p)] and stale.index is None
    said: list[str] = []
    assert stale.usable(said.append) and stale.index == {"rows": []} and not said
    path = answers.answer_path(hh)
    raw = pathlib.Path(path).read_bytes()
    pathlib.Path(path).write_bytes(raw[:-1] + b"]")  # (the text damaged)
    _hit, stale, problem = answers.look(hh, answers.STATUS, answers.PATCHABLE, came=True)
    assert stale is not None and problem is None
    assert not stale.usable(said.append) and said == [f"{path}: damaged; worked out again"]
    assert answers.look(hh, answers.STATUS, answers.PATCHABLE)[2] == f"{path}: damaged; worked out again"
