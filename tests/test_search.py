"""Full-text search on the real samples: the index answers what a brute-force scan of
the same events answers; it follows appends and rewrites, live and between runs; it
rebuilds itself when removed or damaged; no query makes it fail."""

from __future__ import annotations

import collections
import dataclasses
import json
import os
import shutil
import sqlite3
import sys
from pathlib import Path

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import incli
import web_corpus
from helpers import wait_for
from huddle.core import Huddle, Keeper, WholeMode
from huddle.io.reader import read_span
from huddle.model.pieces import piece
from huddle.search import SearchIndex, attach
from huddle.search.index import one_shot
from huddle.search.query import matches, parse
from huddle.search.stem import stems
from huddle.search.store import index_path
from huddle.search.text import DEFAULT_SCOPE, KIND_GROUP, event_text, indexed, needs_record, word_list
from huddle.server import ServerThread
from huddle.views.api import event_json, files_index
from huddle.views.operations import BY_NAME
from huddle.views.search import search

FAST = {"poll_watched": 0.5, "poll_unwatched": 0.2}


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """Every Claude, Codex and Vibe sample, read whole, and its index."""
    root = tmp_path_factory.mktemp("search")
    cfg = web_corpus.build(root)
    h = Huddle(cfg)
    h.refresh()
    index = SearchIndex(cfg.huddle_home, cfg.folders)
    index.update(h)
    attach(h, index)
    return cfg, h, index


def _texts(h):
    """(session key, ref, kind group, folded words) of every indexed event: what a scan sees."""
    out = []
    for s in h.sessions():
        handle = h.handle(s.key)
        files = files_index(handle)
        for e in s.events:
            if not indexed(e):
                continue
            p = piece(read_span(e.file, e.offset, e.length), e) if needs_record(e) else None
            ref = event_json(e, files, s.events)["ref"]
            out.append((s.key, ref, KIND_GROUP[e.kind], word_list(event_text(e, p))))
    return out


def _brute(texts, q: str, scope) -> set[tuple[str, str]]:
    query = parse(q)
    scope = tuple(scope) + (("tool",) if query.tool and scope == DEFAULT_SCOPE else ())
    return {(k, ref) for k, ref, group, words in texts if group in scope and matches(query, words)}


def _found(h, q: str, **kw) -> set[tuple[str, str]]:
    d = search(h, q, limit=500, exact=True, **kw)
    assert not d["more"], "a test query must fit in one page"
    assert {r["match"] for r in d["results"]} <= {"exact"}
    return {(r["key"], r["ref"]) for r in d["results"]}


def _brute_stem(texts, q: str, scope) -> set[tuple[str, str]]:
    """What only the stems match (the stemmed table holds messages, not tool pieces)."""
    query = parse(q)
    stemmed = dataclasses.replace(
        query, terms=[dataclasses.replace(t, words=tuple(stems(list(t.words)))) for t in query.terms]
    )
    scope = tuple(scope) + (("tool",) if query.tool and scope == DEFAULT_SCOPE else ())
    return {
        (k, ref)
        for k, ref, group, words in texts
        if group in scope and group != "tool" and matches(stemmed, stems(words)) and not matches(query, words)
    }


def _found_stem(h, q: str, **kw) -> set[tuple[str, str]]:
    d = search(h, q, limit=500, **kw)
    assert not d["more"], "a test query must fit in one page"
    return {(r["key"], r["ref"]) for r in d["results"] if r["match"] == "stem"}


def test_results_equal_a_brute_force_scan(corpus):
    _cfg, h, _index = corpus
    texts = _texts(h)
    counts = collections.Counter(w for _, _, _, words in texts for w in set(words))
    common = [w for w, n in counts.most_common() if len(w) > 3][:3]
    rare = [w for w, n in sorted(counts.items()) if n == 1 and len(w) > 4][:3]
    # two words standing next to each other somewhere: a phrase that exists
    words = next(ws for _, _, g, ws in texts if g == "say" and len(ws) > 6)
    phrase = f'"{words[2]} {words[3]}"'
    queries = [
        *common,
        *rare,
        phrase,
        f"{common[0][:3]}*",
        f"{common[0]} {common[1]}",
        f"{common[0]} -{common[1]}",
        f'{common[0]} -"{words[2]} {words[3]}"',
        f"{rare[0]}*",
        "src/app.py",
        "does-not-exist",
        "notes.txt",
        'a"b',
        '"unclosed phrase',
        "OR",
        "NEAR(",
        "tool:ls",
        "tool: bash",
        "C++",
        "naïve café",
    ]
    checked = stemmed = 0
    stemming = {"files", "tests", "running", "reading", *common, phrase, f"{common[0]} -{common[1]}", "naïve café"}
    queries += ["files", "tests", "running", "reading"]
    for q in queries:
        for scope in (DEFAULT_SCOPE, ("tool",), ("prompt",), ("say", "think")):
            want = _brute(texts, q, scope)
            kind = None if scope == DEFAULT_SCOPE else ",".join(scope)
            assert _found(h, q, kind=kind) == want, (q, scope)
            checked += len(want)
            if scope in (DEFAULT_SCOPE, ("prompt",)) and q in stemming:
                want = _brute_stem(texts, q, scope)
                assert _found_stem(h, q, kind=kind) == want, (q, scope, "stemmed")
                stemmed += len(want)
    assert checked > 200, "the queries find something"
    assert stemmed > 5, "the stems find more"


def test_newest_first_and_by_relevance(corpus):
    _cfg, h, _index = corpus
    d = search(h, "the", limit=200, exact=True)
    times = [r["t"] for r in d["results"]]
    assert len(times) > 20 and times == sorted(times, reverse=True)
    ranked = search(h, "the", limit=500, rank=True, exact=True)
    newest = search(h, "the", limit=500, exact=True)
    assert ranked["order"] == "rank" and {r["ref"] + r["key"] for r in ranked["results"]} == {
        r["ref"] + r["key"] for r in newest["results"]
    }


def test_filters(corpus):
    _cfg, h, _index = corpus
    everything = search(h, "the", limit=500)["results"]
    sources = {r["source"] for r in everything}
    assert {"claude", "codex"} <= sources
    for src in sources:
        got = search(h, "the", source=src, limit=500)["results"]
        assert got and {r["source"] for r in got} == {src}
    one = everything[0]
    got = search(h, "the", session=one["session"], limit=500)["results"]
    assert got and {r["session"] for r in got} == {one["session"]}
    proj = next(r["project"] for r in everything if r["project"])
    got = search(h, "the", project=proj, limit=500)["results"]
    assert got and {r["project"] for r in got} == {proj}
    mid = sorted(r["t"] for r in everything)[len(everything) // 2]
    got = BY_NAME["search"].answer(h, q="the", since=mid, limit=500)["results"]  # (a time as typed: its one reader)
    assert got and all(r["t"] >= mid[:23] for r in got) and len(got) < len(everything)


def test_tool_output_is_indexed_but_out_of_the_default_scope(corpus):
    _cfg, h, _index = corpus
    texts = _texts(h)
    talk = {w for _, _, g, ws in texts if g != "tool" for w in ws}
    only_tool = sorted({w for _, _, g, ws in texts if g == "tool" for w in ws} - talk)
    word = next(w for w in only_tool if len(w) > 5 and w.isalpha())
    assert search(h, word, exact=True)["results"] == []
    assert search(h, word, kind="tool")["results"]
    assert search(h, f"tool:{word}")["results"]
    assert search(h, f"tool: {word}")["scope"] == ["prompt", "say", "think", "tool"]


def test_snippets_mark_the_words(corpus):
    _cfg, h, _index = corpus
    for r in search(h, "project", limit=50)["results"]:
        snip = r["snippet"]
        assert snip["marks"], r
        for a, b in snip["marks"]:
            assert snip["text"][a:b].lower().startswith("project")


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.text(max_size=60))
def test_no_query_fails(corpus, q):
    _cfg, h, _index = corpus
    d = search(h, q, limit=5)
    assert isinstance(d["results"], list)
    if "-" not in q and '"' not in q:  # a brute-force check needs the plain cases only
        assert all(isinstance(r["snippet"]["text"], str) for r in d["results"])


def test_the_route_and_the_command_give_the_same_dict(tmp_path):
    cfg = web_corpus.build(tmp_path, vibe=False)
    env = {**os.environ, **web_corpus.env_of(cfg)}
    with ServerThread(web_corpus.core(cfg), watch_options=FAST) as srv:
        assert srv.state.indexer.idle.wait(60)
        cases = [
            ("project", []),
            ('"the project" -missing', ["--kind", "say"]),
            ("project", ["--kind", "say", "--kind", "prompt"]),  # ?kind=say&kind=prompt
            ("tool:ls", []),
        ]
        for q, extra in cases:
            params = [("q", q)] + [("kind", k) for k in extra[1::2]]
            api = httpx.get(srv.url + "api/search", params=params, timeout=30).json()
            out = incli.huddle("search", q, "--json", *extra, env=env)
            assert out.returncode == 0, out.stderr
            cli = json.loads(out.stdout)
            api["index"].pop("bytes"), cli["index"].pop("bytes")  # the write-ahead log's size moves
            assert cli == api
            if extra:
                assert api["scope"] == extra[1::2]
            assert api["results"]


def _wait_for(fn, what: str, timeout: float = 120.0):
    return wait_for(fn, what, timeout)


def test_a_live_append_is_searchable_and_a_rewrite_is_indexed_again(tmp_path):
    cfg, sid, main = web_corpus.one_session(tmp_path)
    with ServerThread(web_corpus.core(cfg), watch_options=FAST) as srv, httpx.Client(base_url=srv.url) as c:
        assert srv.state.indexer.idle.wait(60)
        assert c.get("/api/search", params={"q": "zanzibarquux"}).json()["results"] == []
        web_corpus.append_say(main, "the zanzibarquux build is green")
        hits = _wait_for(lambda: c.get("/api/search", params={"q": "zanzibarquux"}).json()["results"], "the append")
        assert hits[0]["session"] == sid and hits[0]["kind"] == "say"
        # the agent rewrites its file in place: the old words go, the new ones come
        old = main.read_text()
        main.write_text(old.replace("zanzibarquux", "kilimanjaroxtra"))
        _wait_for(lambda: c.get("/api/search", params={"q": "kilimanjaroxtra"}).json()["results"], "the rewrite")
        assert c.get("/api/search", params={"q": "zanzibarquux"}).json()["results"] == []
        page = c.get(f"/api/sessions/{sid}/transcript", params={"around": hits[0]["ref"], "agent": hits[0]["agent"]})
        assert page.status_code in (200, 404)  # the old ref may name nothing now: never a 500


def test_between_runs_appends_rewrites_and_a_lost_index(tmp_path):
    cfg, sid, main = web_corpus.one_session(tmp_path)
    h, index = one_shot(cfg)
    attach(h, index)
    rows = index.store.stats()["rows"]
    assert rows > 5
    web_corpus.append_say(main, "between runs the wobblefrob appears")
    h, index = one_shot(cfg)
    attach(h, index)
    assert [r["session"] for r in search(h, "wobblefrob")["results"]] == [sid]
    assert index.store.stats()["rows"] == rows + 1, "only the new line was indexed"
    main.write_text(main.read_text().replace("wobblefrob", "snorkelvanes"))
    h, index = one_shot(cfg)
    attach(h, index)
    assert search(h, "wobblefrob")["results"] == []
    assert search(h, "snorkelvanes")["results"]
    assert index.store.stats()["dead_rows"] > 0, "the rewritten file's rows went dead"
    # removed: built again, same answers
    path = index_path(cfg.huddle_home, cfg.folders)
    index.store.close()
    os.remove(path)
    h, index = one_shot(cfg)
    attach(h, index)
    assert search(h, "snorkelvanes")["results"]
    assert index.store.stats()["dead_rows"] == 0
    # damaged: built again
    index.store.close()
    for suffix in ("-wal", "-shm"):
        if os.path.exists(path + suffix):
            os.remove(path + suffix)
    with open(path, "r+b") as f:
        f.seek(0)
        f.write(b"this is not a database" * 200)
    h, index = one_shot(cfg)
    attach(h, index)
    assert search(h, "snorkelvanes")["results"]


def test_a_session_read_by_another_command_is_not_skipped(tmp_path):
    """`huddle status` moves the shared handle cache on; the search keeps its own."""
    cfg, sid, main = web_corpus.one_session(tmp_path)
    one_shot(cfg)
    web_corpus.append_say(main, "the quokkaplanet moved")
    status = Huddle(cfg, keep=Keeper(WholeMode()))
    status.refresh()  # reads the new line and saves the status cache
    h, index = one_shot(cfg)
    attach(h, index)
    assert [r["session"] for r in search(h, "quokkaplanet")["results"]] == [sid]


def test_base64_is_never_indexed(tmp_path):
    cfg, _sid, main = web_corpus.one_session(tmp_path)
    blob = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg" * 3
    web_corpus.append_say(main, f"here is the image data:{blob} end of data")
    _h, index = one_shot(cfg)
    db = sqlite3.connect(index.store.path)
    db.execute("CREATE VIRTUAL TABLE temp.v USING fts5vocab(main, 'fts', 'row')")
    vocab = {t for (t,) in db.execute("SELECT term FROM temp.v")}
    assert "data" in vocab and "end" in vocab
    assert not [t for t in vocab if len(t) > 60], "no base64 run became a word"
    assert blob[:40].lower() not in vocab


_B64_CHARS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.one_of(
            st.text(alphabet=_B64_CHARS, min_size=90, max_size=110),  # runs about the length that counts
            st.text(alphabet=_B64_CHARS + "=", min_size=0, max_size=8),
            st.text(max_size=30),  # any character: accents, CJK, emoji, lone surrogates, NUL
            st.sampled_from([" ", "\n", "é", "登", "\ud800", "=="]),
        ),
        max_size=12,
    )
)
def test_base64_runs_are_found_as_the_pattern_alone_finds_them(parts):
    from huddle.search.text import _BASE64, strip_base64

    text = "".join(parts)
    assert strip_base64(text) == _BASE64.sub(" ", text)


def test_the_index_lives_in_huddles_home_only(tmp_path):
    from conftest import fingerprint

    cfg, _sid, _main = web_corpus.one_session(tmp_path)
    before = fingerprint(Path(cfg.folders["claude"]))
    one_shot(cfg)
    assert fingerprint(Path(cfg.folders["claude"])) == before
    assert os.path.exists(index_path(cfg.huddle_home, cfg.folders))
    shutil.rmtree(cfg.huddle_home)
    h, index = one_shot(cfg)
    attach(h, index)
    assert search(h, "project")["results"]
    db = sqlite3.connect(index.store.path)  # a new index merges its segments 16 at a time (store.AUTOMERGE)
    assert [db.execute(f"SELECT v FROM {t}_config WHERE k = 'automerge'").fetchone() for t in ("fts", "stem")] == [
        (16,),
        (16,),
    ]


def test_an_index_removed_or_damaged_while_serving_is_built_again(tmp_path):
    cfg, _sid, _main = web_corpus.one_session(tmp_path)
    with ServerThread(web_corpus.core(cfg), watch_options=FAST) as srv, httpx.Client(base_url=srv.url) as c:
        assert srv.state.indexer.idle.wait(60)
        assert c.get("/api/search", params={"q": "project"}).json()["results"]
        path = index_path(cfg.huddle_home, cfg.folders)
        for suffix in ("", "-wal", "-shm"):
            if os.path.exists(path + suffix):
                os.remove(path + suffix)
        _wait_for(
            lambda: os.path.exists(path) and c.get("/api/search", params={"q": "project"}).json()["results"],
            "a rebuild",
        )
        # damaged under the server: the answer says so (never a 500) and the index comes back
        srv.state.indexer.index.store.close()
        with open(path, "r+b") as f:
            f.write(b"garbage!" * 512)
        for suffix in ("-wal", "-shm"):
            if os.path.exists(path + suffix):
                os.remove(path + suffix)
        r = c.get("/api/search", params={"q": "project"})
        assert r.status_code == 200
        _wait_for(lambda: c.get("/api/search", params={"q": "project"}).json()["results"], "a rebuild after damage")


def test_a_big_first_build_on_a_terminal_shows_a_progress_bar(monkeypatch):
    import io

    from rich.console import Console

    from huddle.cli import search as cli_search

    out = io.StringIO()
    console = Console(file=out, force_terminal=True, width=100)
    make, state = cli_search._progress_factory(console)
    big = cli_search.BIG_BUILD * 2
    monkeypatch.setattr(sys.stderr, "isatty", lambda: False)
    assert make("building the search index", big) is None, "not on a terminal: no bar"
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    assert make("building the search index", 1000) is None, "a small build: no bar"
    assert make("reading sessions", 10) is None
    read = make("reading sessions", cli_search.BIG_READ)
    step = make("building the search index", big)
    assert read is not None and step is not None
    read(cli_search.BIG_READ, cli_search.BIG_READ)
    step(big // 2, big)
    state["bar"].refresh()
    state["bar"].stop()
    shown = out.getvalue()
    assert "reading sessions" in shown and "building the search index" in shown


def test_the_command_builds_with_progress_callbacks(tmp_path):
    """one_shot reports both phases to whoever asks (the command's bars)."""
    cfg = web_corpus.build(tmp_path, vibe=False)
    heard: dict[str, list] = {}

    def progress(what, total):
        heard[what] = [total]
        return lambda done, _total: heard[what].append(done)

    one_shot(cfg, progress)
    assert heard["reading sessions"][0] > 10 and heard["reading sessions"][-1] == heard["reading sessions"][0]
    assert heard["building the search index"][0] > 0 and heard["building the search index"][-1] > 0


def test_a_lost_handle_cache_never_hides_new_lines(tmp_path):
    """Without the search's own handle cache the sessions are read afresh: what the index
    holds is checked against the files, never taken on a version number."""
    cfg, sid, main = web_corpus.one_session(tmp_path)
    one_shot(cfg)
    os.remove(os.path.join(cfg.huddle_home, "cache", "search-handles.db"))
    web_corpus.append_say(main, "after the cache went the pelicanfrost came")
    h, index = one_shot(cfg)
    attach(h, index)
    assert [r["session"] for r in search(h, "pelicanfrost")["results"]] == [sid]
    assert index.store.stats()["dead_rows"] == 0, "nothing indexed twice"
