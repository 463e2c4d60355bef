"""Gemini CLI and OpenCode sessions through full-text search and exports: the index answers
what a brute-force scan of the same events answers (records read back by each source's
handle, rows of a database included), it follows an OpenCode session that grows, and
every format exports them."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from conftest import SAMPLES, fingerprint
from huddle.core import Huddle
from huddle.model.pieces import piece
from huddle.search import SearchIndex, attach
from huddle.search.query import matches, parse
from huddle.search.text import DEFAULT_SCOPE, KIND_GROUP, event_text, indexed, needs_record, word_list
from huddle.sources import Settings
from huddle.views.api import event_json, files_index
from huddle.views.export import export_data, render
from huddle.views.search import search
from opencode_writer import Writer
from said import as_json


def build(root: Path) -> Settings:
    gem = root / "gemini" / ".gemini"
    for name in ("02-shell", "07-subagent", "05-tool-error"):
        shutil.copytree(SAMPLES / "gemini" / name / "home" / ".gemini", gem, dirs_exist_ok=True)
    oc = root / "oc" / ".local" / "share" / "opencode"
    shutil.copytree(SAMPLES / "opencode" / "07-subagent" / "home" / ".local" / "share" / "opencode", oc)
    return Settings(folders={"gemini": str(gem), "opencode": str(oc)}, huddle_home=str(root / "hh"))


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    root = tmp_path_factory.mktemp("agents")
    cfg = build(root)
    h = Huddle(cfg, sources=["gemini", "opencode"])
    h.refresh()
    index = SearchIndex(cfg.huddle_home, cfg.folders)
    index.update(h)
    attach(h, index)
    return cfg, h, index


def _texts(h):
    out = []
    for s in h.sessions():
        handle = h.handle(s.key)
        files = files_index(handle)
        for e in s.events:
            if not indexed(e):
                continue
            p = piece(handle.read_record(e.file, e.offset, e.length), e) if needs_record(e) else None
            ref = event_json(e, files, s.events)["ref"]
            out.append((s.key, ref, KIND_GROUP[e.kind], word_list(event_text(e, p))))
    return out


def _found(h, q: str, **kw) -> set[tuple[str, str]]:
    d = search(h, q, limit=500, exact=True, **kw)
    return {(r["key"], r["ref"]) for r in d["results"]}


@pytest.mark.parametrize("q", ["python", "README", "missing", "tool:bash", "tool:run_shell_command", "count files"])
def test_results_equal_a_brute_force_scan(corpus, q):
    _, h, _ = corpus
    texts = _texts(h)
    query = parse(q)
    for scope in (DEFAULT_SCOPE, ("tool",), ("prompt",), ("say", "think")):
        sc = tuple(scope) + (("tool",) if query.tool and scope == DEFAULT_SCOPE else ())
        want = {(k, ref) for k, ref, group, words in texts if group in sc and matches(query, words)}
        assert _found(h, q, kind=None if scope == DEFAULT_SCOPE else ",".join(scope)) == want, (q, scope)


def test_tool_output_in_a_database_row_is_found(corpus):
    _, h, _ = corpus
    hits = search(h, "wc", kind="tool")["results"]
    assert {r["key"].split(":")[0] for r in hits} >= {"opencode", "gemini"}


def test_a_growing_opencode_session_is_indexed_as_it_grows(tmp_path):
    cfg = build(tmp_path)
    h = Huddle(cfg, sources=["opencode"])
    h.refresh()
    index = SearchIndex(cfg.huddle_home, cfg.folders)
    index.update(h)
    attach(h, index)
    (s,) = h.sessions()
    assert not search(h, "zanzibar")["results"]
    oc = Path(cfg.folders["opencode"])
    with Writer(oc / "opencode.db") as w:
        (mid,) = w.run("SELECT id FROM message WHERE session_id = ? ORDER BY time_created DESC LIMIT 1", s.id)[0]
        part = {"type": "text", "text": "a word never seen before: zanzibar", "time": {"start": 1, "end": 2}}
        w.run(
            "INSERT INTO part (id, message_id, session_id, time_created, time_updated, data) VALUES (?, ?, ?, ?, ?, ?)",
            "prt_zzzzsearch",
            mid,
            s.id,
            1796119399999,
            1796119399999,
            json.dumps(part),
        )
        w.run("UPDATE event_sequence SET seq = seq + 1 WHERE aggregate_id = ?", s.id)
    h.refresh()
    index.update(h)
    (hit,) = search(h, "zanzibar")["results"]
    assert hit["key"] == s.key
    # the rows read before are not indexed twice
    refs = [r["ref"] for r in search(h, "python", kind="tool", limit=500)["results"]]
    assert refs and len(refs) == len(set(refs))


def test_every_format_exports_them_and_nothing_is_written(corpus, tmp_path):
    cfg, h, _ = corpus
    before = {k: fingerprint(Path(v)) for k, v in cfg.folders.items()}
    for s in h.sessions():
        data, _ = export_data(h, s.key)
        assert data["session"]["source"] == s.source
        calls = [e for e in data["events"] if e["kind"] == "tool_call"]
        results = [e for e in data["events"] if e["kind"] == "tool_result"]
        if calls:
            assert any(e.get("input") for e in calls), s.key  # read back from the line or the row
            assert any(e.get("output") or e.get("text") for e in results), s.key
        for fmt in ("json", "md", "html"):
            assert render(data, fmt)
    assert {k: fingerprint(Path(v)) for k, v in cfg.folders.items()} == before


def test_board_rows_say_the_command_that_resumes_them(corpus):
    """Gemini CLI takes `--resume ID` (tests/test_gemini_live runs it); OpenCode's TUI `--session ID`."""
    from huddle.views.board import board_json

    _cfg, h, _index = corpus
    rows = as_json(board_json(h))["sessions"]
    want = {"gemini": "gemini --resume {}", "opencode": "opencode --session {}"}
    assert {r["source"] for r in rows} == set(want)
    for r in rows:
        assert r["resume"] == want[r["source"]].format(r["id"]), r
