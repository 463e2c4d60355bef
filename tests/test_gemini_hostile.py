"""The Gemini CLI source under hostile input: files cut anywhere and written piece by piece
(any cut gives the events of one whole read), garbage, truncated and mutated lines and
odd-but-valid values (each costs at most its own line), rewritten and vanishing files."""

from __future__ import annotations

import json
import random
import shutil
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import SAMPLES
from huddle.model import events as ev
from huddle.sources import Settings
from huddle.sources.gemini import GeminiSource

GEMINI = SAMPLES / "gemini"
SHAPES = ["02-shell", "04-resume", "05-tool-error", "07-subagent", "10-summary"]
ODD = [None, -1, 1.5, float("nan"), "12", True, [], {}, 10**30]


class Home:
    def __init__(self, root: Path):
        self.src = GeminiSource(Settings(folders={"gemini": str(root)}))
        self.handles: dict = {}

    def refresh(self):
        self.handles = self.src.scan(self.handles)
        for h in self.handles.values():
            h.refresh()
        return {k: h.session for k, h in self.handles.items()}


def signature(s) -> list:
    return [
        (e.agent, e.kind, e.id, e.name, e.text, e.ok, e.target, e.usage.to_dict() if e.usage else None)
        for e in s.events
    ]


def copy(name: str, tmp: Path) -> Path:
    root = tmp / ".gemini"
    shutil.copytree(GEMINI / name / "home" / ".gemini", root)
    return root


def whole(name: str):
    with tempfile.TemporaryDirectory() as tmp:
        sessions = Home(copy(name, Path(tmp))).refresh()
        return {k: (signature(s), s.usage.to_dict()) for k, s in sessions.items()}


WHOLE = {name: whole(name) for name in SHAPES}


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(name=st.sampled_from(SHAPES), seed=st.integers(0, 2**32 - 1))
def test_written_piece_by_piece_equals_one_whole_read(name, seed):
    rnd = random.Random(seed)
    with tempfile.TemporaryDirectory() as tmp:
        root = copy(name, Path(tmp))
        files = {f: f.read_bytes() for f in sorted((root / "tmp").rglob("*.jsonl"))}
        for f in files:
            f.write_bytes(b"")
        home = Home(root)
        home.refresh()
        pos = dict.fromkeys(files, 0)
        while any(pos[f] < len(data) for f, data in files.items()):
            f = rnd.choice([f for f in files if pos[f] < len(files[f])])
            step = rnd.randint(1, 3000)
            with open(f, "ab") as out:
                out.write(files[f][pos[f] : pos[f] + step])
            pos[f] += step
            if rnd.random() < 0.5:
                home.refresh()
        got = {k: (signature(s), s.usage.to_dict()) for k, s in home.refresh().items()}
        # the lead's order may come from its sub-agent's first prompt when that was read first
        assert {k: v[1] for k, v in got.items()} == {k: v[1] for k, v in WHOLE[name].items()}
        for k, (sig, _) in got.items():
            want = WHOLE[name][k][0]
            assert sorted(x for x in sig if x[1] != ev.ORDER) == sorted(x for x in want if x[1] != ev.ORDER)
            orders = sorted((x[0], x[2], x[6]) for x in sig if x[1] == ev.ORDER)
            assert orders == sorted((x[0], x[2], x[6]) for x in want if x[1] == ev.ORDER)


@settings(max_examples=40, deadline=None)
@given(
    name=st.sampled_from(SHAPES),
    seed=st.integers(0, 2**32 - 1),
    how=st.sampled_from(["garbage", "truncate", "flip", "odd"]),
)
def test_a_bad_line_costs_at_most_itself(name, seed, how):
    rnd = random.Random(seed)
    with tempfile.TemporaryDirectory() as tmp:
        root = copy(name, Path(tmp))
        files = sorted((root / "tmp").rglob("*.jsonl"))
        f = rnd.choice(files)
        lines = f.read_bytes().splitlines(keepends=True)
        i = rnd.randrange(1, len(lines))  # the header line stays: it names the session
        line = lines[i]
        if how == "garbage":
            lines[i] = bytes(rnd.randrange(256) for _ in range(rnd.randint(1, 300))).replace(b"\n", b" ") + b"\n"
        elif how == "truncate":
            lines[i] = line[: rnd.randrange(1, max(2, len(line) - 1))].rstrip(b"\n") + b"\n"
        elif how == "flip":
            j = rnd.randrange(len(line) - 1)
            lines[i] = line[:j] + bytes([rnd.randrange(32, 127)]) + line[j + 1 :]
        else:
            d = json.loads(line)
            _poke(d, rnd)
            lines[i] = (json.dumps(d) + "\n").encode()
        f.write_bytes(b"".join(lines))
        sessions = Home(root).refresh()
        (s,) = sessions.values()
        assert s.error is None
        assert s.skipped_lines <= 1
        for p in s.problems:
            assert str(f) in p  # the line's file and offset, in one line
        want_sig, _ = next(iter(WHOLE[name].values()))
        assert len(s.events) >= len(want_sig) - 8  # one line holds at most a few events


def _poke(d, rnd):
    """Put an odd value where the file had a number or a string."""
    paths = []

    def walk(node, path):
        if isinstance(node, dict):
            for k, v in node.items():
                walk(v, (*path, k))
        elif isinstance(node, list):
            for k, v in enumerate(node):
                walk(v, (*path, k))
        else:
            paths.append(path)

    walk(d, ())
    if not paths:
        return
    path = rnd.choice(paths)
    node = d
    for k in path[:-1]:
        node = node[k]
    node[path[-1]] = rnd.choice(ODD)


def test_odd_token_counts_count_as_what_they_can_mean(tmp_path):
    root = copy("01-qa", tmp_path)
    (f,) = (root / "tmp").rglob("*.jsonl")
    lines = f.read_text().splitlines()
    out = []
    for line in lines:
        d = json.loads(line)
        if d.get("type") == "gemini":
            d["tokens"].update(input=None, cached=-5, output=12.7, thoughts="7")
        out.append(json.dumps(d))
    f.write_text("\n".join(out) + "\n")
    (s,) = Home(root).refresh().values()
    assert s.skipped_lines == 1  # a string where a count goes: that line, told in one line
    f.write_text("\n".join(out).replace('"thoughts": "7"', '"thoughts": null') + "\n")
    (s,) = Home(root).refresh().values()
    assert s.skipped_lines == 0
    assert (s.usage.input, s.usage.cache_read, s.usage.output) == (0, 0, 12)


def test_a_rewritten_file_is_read_again_and_a_vanished_one_goes(tmp_path):
    root = copy("02-shell", tmp_path)
    home = Home(root)
    (s,) = home.refresh().values()
    epoch = s.epoch
    (f,) = (root / "tmp").rglob("*.jsonl")
    lines = f.read_bytes().splitlines(keepends=True)
    f.write_bytes(b"".join(lines[:8]))  # shorter: rewritten
    (s2,) = home.refresh().values()
    assert s2.epoch == epoch + 1
    assert len(s2.events) < len(WHOLE["02-shell"][next(iter(WHOLE["02-shell"]))][0])
    f.unlink()
    assert home.refresh() == {}


def test_binary_and_empty_files_beside_real_ones(tmp_path):
    root = copy("01-qa", tmp_path)
    chats = root / "tmp" / "proj" / "chats"
    (chats / "session-2026-12-01T10-09-00000000.jsonl").write_bytes(b"")  # just created
    (chats / "session-2026-12-01T10-09-11111111.jsonl").write_bytes(b"\x00\xff" * 100 + b"\n")
    (chats / "notes.txt").write_text("not a chat")
    sessions = Home(root).refresh()
    errors = [s for s in sessions.values() if s.error]
    assert len(sessions) == 2 and len(errors) == 1
    assert "first line is not a session header" in errors[0].error
