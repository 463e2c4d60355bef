"""Odd-but-valid values (valid JSON of a type or range the reader does not expect: a
string where a list was, a negative or huge count, a float, null, an empty object) in
any field of any record type never raise, and cost at most their own line: the rest
of the session reads as before."""

from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import SAMPLES
from helpers import NOWHERE
from huddle.core import Huddle
from huddle.model import events as ev
from huddle.sources import Settings

ODD = [-1, 0, 2**63, -(2**70), 1.5, True, None, "", "x" * 5000, "12", [], [None], [1, "a"], {}, {"type": 3}]

# Kinds an odd value may move from one record to another of the same response or call
# (a changed id, stop_reason or link): never lost from the session, just placed elsewhere.
MOVABLE = {ev.USAGE, ev.TURN_END, ev.REPORT, ev.ORDER, ev.TITLE}


def leaves(obj, path=()):
    """Every place in a record: (path, value)."""
    yield path, obj
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from leaves(v, (*path, k))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from leaves(v, (*path, i))


def replaced(obj, path, value):
    if not path:
        return value
    obj = json.loads(json.dumps(obj))
    cur = obj
    for p in path[:-1]:
        cur = cur[p]
    cur[path[-1]] = value
    return obj


def record_kinds(lines: list[bytes]) -> dict[str, int]:
    """One line per kind of record (type, subtype, block types): index into lines."""
    out: dict[str, int] = {}
    for i, line in enumerate(lines):
        try:
            d = json.loads(line)
        except ValueError:
            continue
        m = d.get("message") if isinstance(d, dict) else None
        blocks = m.get("content") if isinstance(m, dict) else None
        shape = (
            [b.get("type") for b in blocks if isinstance(b, dict)]
            if isinstance(blocks, list)
            else type(blocks).__name__
        )
        out.setdefault(f"{d.get('type')}/{d.get('subtype')}/{shape}/{bool(d.get('toolUseResult'))}", i)
    return out


class Corpus:
    """Session files of one source, each read once clean."""

    def __init__(self, source: str, homes: list[tuple[Path, str]]):
        self.source = source
        self.files: list[tuple[Path, Path, list[bytes], int]] = []  # (home, file, lines, line index)
        for home, pattern in homes:
            for f in sorted(home.glob(pattern)):
                lines = f.read_bytes().splitlines()
                for i in record_kinds(lines).values():
                    self.files.append((home, f, lines, i))


def read(source: str, home: Path):
    folders = {"claude": NOWHERE, "codex": NOWHERE, "vibe": NOWHERE}
    folders[source] = str(home)
    h = Huddle(Settings(folders=folders, huddle_home=NOWHERE), sources=[source])
    h.refresh()
    return h


def spans(h, path: str) -> Counter:
    """(line offset, kind) of every event read from `path`, kinds that may move left out."""
    return Counter(
        (e.offset, e.kind) for s in h.sessions() for e in s.events if e.file == path and e.kind not in MOVABLE
    )


def check_one(tmp: Path, source: str, home: Path, f: Path, lines: list[bytes], i: int, pick: int, odd) -> None:
    work = tmp / "home"
    if work.exists():
        shutil.rmtree(work)
    shutil.copytree(home, work)
    target = work / f.relative_to(home)
    clean = read(source, work)
    rec = json.loads(lines[i])
    places = list(leaves(rec))
    path, _ = places[pick % len(places)]
    new = json.dumps(replaced(rec, path, odd)).encode()
    out = lines[:i] + [new] + lines[i + 1 :]
    target.write_bytes(b"\n".join(out) + b"\n")
    off = sum(len(x) + 1 for x in lines[:i])
    h = read(source, work)
    before = {s.key: s.skipped_lines for s in clean.sessions()}
    for s in h.sessions():
        assert s.error is None, (path, odd, s.error)
        assert s.skipped_lines <= before.get(s.key, 0) + 1
        u = s.usage
        assert all(type(v) is int and v >= 0 for v in u.to_tuple())
    # the lines before it keep their offsets: each of their events is still there
    was = spans(clean, str(target))
    now = spans(h, str(target))
    keep = Counter({k: n for k, n in was.items() if k[0] < off})
    assert not keep - now, (path, odd, keep - now)


CLAUDE = Corpus(
    "claude",
    [(p, "projects/**/*.jsonl") for p in sorted((SAMPLES / "claude-history").glob("*/0[234]*/config"))]
    + [(SAMPLES / "claude" / "12-nested-and-custom-agents" / "config", "projects/**/*.jsonl")],
)
CODEX = Corpus("codex", [(p, "sessions/**/*.jsonl") for p in sorted((SAMPLES / "codex").glob("*/codex_home"))[:12]])
VIBE = Corpus("vibe", [(p, "logs/**/*.jsonl") for p in sorted((SAMPLES / "vibe").glob("*-[qbsm]*")) if p.is_dir()])


def property_for(corpus: Corpus):
    @settings(
        max_examples=80,
        deadline=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    )
    @given(which=st.integers(0, len(corpus.files) - 1), pick=st.integers(0, 10**6), odd=st.sampled_from(ODD))
    def test(tmp_path_factory, which, pick, odd):
        home, f, lines, i = corpus.files[which]
        check_one(tmp_path_factory.mktemp("odd"), corpus.source, home, f, lines, i, pick, odd)

    return test


test_claude_odd_values_cost_at_most_their_line = property_for(CLAUDE)
test_codex_odd_values_cost_at_most_their_line = property_for(CODEX)
test_vibe_odd_values_cost_at_most_their_line = property_for(VIBE)


def test_the_properties_try_many_kinds_of_record():
    # one line per kind of record (type, subtype, block types) of each source's samples
    assert len(CLAUDE.files) > 40 and len(CODEX.files) > 20 and len(VIBE.files) > 10


def test_a_vibe_call_whose_counts_are_no_counts_costs_its_line_alone(tmp_path):
    """A unified store's call with a count past any window is its line's problem only:
    the cumulative totals it would have been subtracted from count what Vibe counted
    (once out of the ledger, it is no gap of theirs to say again)."""
    want = ("payload", "result", "result", "usage", "cached_input_tokens")
    for home, f, lines, i in VIBE.files:
        places = [p for p, _ in leaves(json.loads(lines[i]))]
        if want in places and "unified" in str(f):
            check_one(tmp_path, "vibe", home, f, lines, i, places.index(want), -(2**70))
            return
    raise AssertionError("no unified Vibe call with usage in the samples")
