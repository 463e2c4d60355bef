"""Vibe sessions read as they are written: journal lines appended one by one, new
generations published between refreshes and in the middle of a read, sub-agent
stores appearing and (2.26) vanishing, legacy files appended and rewritten.

The samples hold earlier and later states of the same sessions (`*-waiting` and
`*-running` are mid-run copies), so a copy of the early state is moved to the late
one the way Vibe writes: appends, new files, CURRENT replaced atomically, old
generations deleted. The result must be what a fresh read of the late state gives.
"""

from __future__ import annotations

import os
import shutil
from collections import Counter
from pathlib import Path

import pytest

from huddle.model import events as ev
from huddle.sources.vibe import store as vibe_store
from test_vibe_source import VIBE, kinds, only, vibe_huddle


def copy_case(tmp: Path, name: str) -> Path:
    home = tmp / name
    shutil.copytree(VIBE / name / "logs", home / "logs")
    return home


def store_of(home: Path) -> Path:
    (store,) = [p for p in (home / "logs" / "session" / "unified").iterdir() if not p.name.startswith(("child-", "."))]
    return store


def write_atomic(path: Path, data: bytes) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def advance(home: Path, later: str, rewrite: bool = False) -> None:
    """Bring a copied VIBE_HOME to a later sample's state as Vibe would write it."""
    src, dst = VIBE / later / "logs", home / "logs"
    want = {p.relative_to(src) for p in src.rglob("*") if p.is_file()}
    have = {p.relative_to(dst) for p in dst.rglob("*") if p.is_file()}
    currents = []
    for rel in sorted(want):
        a, b = src / rel, dst / rel
        if rel.name == "CURRENT":
            currents.append(rel)
            continue
        new = a.read_bytes()
        if b.exists():
            old = b.read_bytes()
            if old == new:
                continue
            if new.startswith(old) and rel.suffix == ".jsonl" and not rewrite:
                with open(b, "ab") as f:
                    f.write(new[len(old) :])
                continue
            write_atomic(b, new)
        else:
            b.parent.mkdir(parents=True, exist_ok=True)
            b.write_bytes(new)
    for rel in currents:
        write_atomic(dst / rel, (src / rel).read_bytes())
    for rel in sorted(have - want):
        (dst / rel).unlink()
    for d in sorted((p for p in dst.rglob("*") if p.is_dir()), key=lambda p: -len(p.parts)):
        if not (src / d.relative_to(dst)).exists():
            shutil.rmtree(d)


def signature(s) -> Counter:
    """What the events say, without when they were read (times of a resolution and of
    usage differ between a live read and a read afterwards: the journal said, then the
    totals)."""
    return Counter(
        (e.kind, e.agent, e.id, e.name, e.text, e.detail, e.ok, e.target, e.copied)
        for e in s.events
        if e.kind != ev.USAGE
    )


def assert_no_repeats(s) -> None:
    for kind in (ev.TOOL_CALL, ev.TOOL_RESULT, ev.ORDER, ev.REPORT, ev.WAITING, ev.RESOLVED, ev.TURN_END, ev.SAY):
        ids = [(e.agent, e.id) for e in kinds(s, kind) if e.id]
        assert len(ids) == len(set(ids)), f"{kind} given twice"


@pytest.mark.parametrize("version", ["2.26.1", "3.0.3"])
def test_journal_lines_one_by_one_then_a_new_generation(tmp_path, version):
    home = copy_case(tmp_path, f"{version}-unified-ask-waiting")
    h = vibe_huddle(home)
    s = only(h)
    reader = h.handle(s.key).stores[s.id][0]
    assert reader.loads == 1 and kinds(s, ev.WAITING) and not kinds(s, ev.RESOLVED)
    later = store_of(VIBE / f"{version}-unified-ask")
    journal = store_of(home) / "journal" / "0000000000000001.jsonl"
    lines = (later / "journal" / "0000000000000001.jsonl").read_bytes().splitlines(keepends=True)
    for line in lines[len(journal.read_bytes().splitlines()) :]:
        with open(journal, "ab") as f:
            f.write(line)
        h.refresh()
        assert reader.loads == 1, "an appended line must not reload the generation"
        assert reader.journal.cursor.offset == journal.stat().st_size  # only the new bytes were read
    assert len(kinds(s, ev.RESOLVED)) == 1 and kinds(s, ev.TURN_END)
    seqs_before = [e.seq for e in s.events]
    advance(home, f"{version}-unified-ask")
    h.refresh()
    assert reader.loads == 2 and s.error is None
    assert [e.seq for e in s.events][: len(seqs_before)] == seqs_before  # nothing read before was redone
    assert_no_repeats(s)
    fresh = only(vibe_huddle(VIBE / f"{version}-unified-ask"))
    assert signature(s) == signature(fresh)
    assert s.usage.to_dict() == fresh.usage.to_dict()


@pytest.mark.parametrize("keep", [2, 1])
def test_generation_published_while_it_is_read(tmp_path, monkeypatch, keep):
    # keep=2: the old generation stays, but CURRENT moved once the load was done;
    # keep=1: the generation being read is deleted under the reader.
    home = copy_case(tmp_path, "3.0.3-unified-ask-waiting")
    store = store_of(home)
    real = vibe_store.StoreReader._load_generation
    loads: list[str] = []

    def racing(self, cur):
        loads.append(cur.generation)
        if len(loads) == 1:
            advance(home, "3.0.3-unified-ask")
            if keep == 1:
                shutil.rmtree(store / "generations" / cur.generation)
        return real(self, cur)

    monkeypatch.setattr(vibe_store.StoreReader, "_load_generation", racing)
    s = only(vibe_huddle(home))
    assert s.error is None and loads == ["0000000000000001", "0000000000000024"]
    fresh = only(vibe_huddle(VIBE / "3.0.3-unified-ask"))
    assert signature(s) == signature(fresh) and s.usage.to_dict() == fresh.usage.to_dict()
    assert_no_repeats(s)


def test_a_generation_that_keeps_moving_is_an_error_for_that_session(tmp_path, monkeypatch):
    home = copy_case(tmp_path, "3.0.3-unified-ask-waiting")
    cur = store_of(home) / "CURRENT"
    real = vibe_store.StoreReader._load_generation

    def restless(self, c):
        out = real(self, c)
        # after every load the writer has moved CURRENT on again (here: back and forth)
        data = cur.read_bytes()
        a, b = b'"generation":"0000000000000001"', b'"generation":"0000000000000000"'
        write_atomic(cur, data.replace(a, b) if a in data else data.replace(b, a))
        return out

    monkeypatch.setattr(vibe_store.StoreReader, "_load_generation", restless)
    s = only(vibe_huddle(home))
    assert s.error is not None and "kept changing" in s.error and "CURRENT" in s.error


@pytest.mark.parametrize("version", ["2.26.1", "3.0.3"])
def test_sub_agent_run_read_live_to_the_end(tmp_path, version):
    home = copy_case(tmp_path, f"{version}-unified-subagent-running")
    h = vibe_huddle(home)
    s = only(h)
    child = next(a.id for a in s.agents.values() if a.id != s.id)
    assert not kinds(s, ev.REPORT)
    advance(home, f"{version}-unified-subagent")
    h.refresh()
    assert s.error is None
    fresh = only(vibe_huddle(VIBE / f"{version}-unified-subagent"))
    assert [(a.id, a.parent, a.name, a.kind, a.tool_use_id, a.order, a.report) for a in s.tree_order()] == [
        (a.id, a.parent, a.name, a.kind, a.tool_use_id, a.order, a.report) for a in fresh.tree_order()
    ]
    assert [(r.id, r.target, r.text) for r in kinds(s, ev.REPORT)] == [
        (r.id, r.target, r.text) for r in kinds(fresh, ev.REPORT)
    ]
    assert_no_repeats(s)
    lead_calls = [e.id for e in kinds(s, ev.TOOL_CALL, agent=s.id)]
    assert lead_calls == [e.id for e in kinds(fresh, ev.TOOL_CALL, agent=s.id)]
    # the live read saw calls whose journal records are gone by the end: never less
    assert s.usage.input >= fresh.usage.input
    if version == "2.26.1":
        assert not (store_of(home).parent / child).exists()  # `close` deleted the child store
        assert h.handle(s.key).stores[child][0].gone


def test_legacy_appends_then_a_rewrite(tmp_path):
    home = copy_case(tmp_path, "2.26.1-legacy-subagent-running")
    h = vibe_huddle(home)
    s = only(h)
    assert len(s.agents) == 2 and not kinds(s, ev.REPORT)
    advance(home, "2.26.1-legacy-subagent")
    h.refresh()
    fresh = only(vibe_huddle(VIBE / "2.26.1-legacy-subagent"))
    assert s.epoch == 0 and s.error is None  # appended: read on, not again
    assert signature(s) == signature(fresh) and s.usage.to_dict() == fresh.usage.to_dict()
    assert [(a.id, a.parent, a.tool_use_id, a.report) for a in s.tree_order()] == [
        (a.id, a.parent, a.tool_use_id, a.report) for a in fresh.tree_order()
    ]
    # a rewind rewrites messages.jsonl (temp file + os.replace): the session is read again
    msgs = next((home / "logs" / "session").glob("session_*/messages.jsonl"))
    lines = msgs.read_bytes().splitlines(keepends=True)
    write_atomic(msgs, b"".join(lines[:3]))
    h.refresh()
    assert s.epoch == 1 and len(kinds(s, ev.PROMPT)) == 1
    assert len(kinds(s, ev.ORDER, agent=s.id)) == 1
    assert_no_repeats(s)


def test_an_idle_refresh_reads_nothing(tmp_path):
    home = copy_case(tmp_path, "3.0.3-unified-subagent")
    h = vibe_huddle(home)
    s = only(h)
    handle = h.handle(s.key)
    before = (s.version, len(s.events), [r.loads for r, _ in handle.stores.values()])
    assert h.refresh() == set()
    assert (s.version, len(s.events), [r.loads for r, _ in handle.stores.values()]) == before


def test_a_cached_handle_reads_on_from_where_it_stopped(tmp_path):
    # huddle's cache keeps each handle between runs; a new run reads only what changed.
    from huddle.core import Huddle, Keeper, WholeMode
    from huddle.sources import Settings

    home = copy_case(tmp_path, "3.0.3-unified-ask-waiting")
    settings = Settings(
        folders={"claude": "/nonexistent", "codex": "/nonexistent", "vibe": str(home)},
        huddle_home=str(tmp_path / "huddle-home"),
    )
    first = Huddle(settings, sources=["vibe"], keep=Keeper(WholeMode()))
    first.refresh()
    (s1,) = first.sessions()
    assert kinds(s1, ev.WAITING)
    advance(home, "3.0.3-unified-ask")
    second = Huddle(settings, sources=["vibe"], keep=Keeper(WholeMode()))
    (key,) = second.handles
    reader = second.handles[key].stores[s1.id][0]
    assert reader.loads == 1 and reader.journal.cursor.offset > 0  # picked up where the first run stopped
    second.refresh()
    (s2,) = second.sessions()
    assert s2.error is None and reader.loads == 2
    fresh = only(vibe_huddle(VIBE / "3.0.3-unified-ask"))
    assert s2.usage.to_dict() == fresh.usage.to_dict()
    full = second.complete(key)  # a view asks for the whole timeline: read again
    assert signature(full) == signature(fresh)
