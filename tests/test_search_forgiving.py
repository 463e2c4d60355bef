"""Search that forgives: a stemmed match beside the exact one (`reinstal` finds
"reinstall", `tests` finds "test"), words of scripts written without spaces found
inside their runs (Chinese, Japanese, Korean), and the hits said one row per session
with their count; `huddle search --json` is still GET /api/search."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import httpx
import pytest

import web_corpus
from huddle.search import SearchIndex, attach
from huddle.search.text import spaced, word_list, words
from huddle.server import ServerThread
from huddle.views.search import search

SAID = [
    "I will reinstall the package and run it again",
    "the test passed on the second try",
    "修复登录错误，然后重新部署",
    "ログインの不具合を修正しました",
    "로그인을 고쳤습니다",
    "naïve résumé parsing",
    "the migration is written",
]


@pytest.fixture(scope="module")
def said(tmp_path_factory):
    """One Claude session with the sentences above said in it, another without them."""
    root = tmp_path_factory.mktemp("forgiving")
    cfg, sid, main = web_corpus.one_session(root / "a")
    other = main.with_name("0badc0de-0000-4000-8000-000000000001.jsonl")
    shutil.copy(main, other)
    other.write_text(other.read_text().replace(sid, other.stem))
    for text in SAID:
        web_corpus.append_say(main, text)
    web_corpus.append_say(other, "the migrations ran: both migrations applied in a minute")
    h = web_corpus.core(cfg)
    index = SearchIndex(cfg.huddle_home, cfg.folders)
    index.update(h)
    attach(h, index)
    return cfg, h, sid, other.stem


def texts_of(d: dict) -> list[str]:
    return [r["snippet"]["text"] for r in d["results"]]


def marked(r: dict) -> list[str]:
    return [r["snippet"]["text"][a:b] for a, b in r["snippet"]["marks"]]


@pytest.mark.parametrize(
    "q, said_word",
    [("reinstal", "reinstall"), ("tests", "test"), ("passing", "passed"), ("packages", "package")],
)
def test_a_stem_finds_the_word_as_it_was_said(said, q, said_word):
    _cfg, h, sid, _ = said
    d = search(h, q, limit=50)
    stem = [r for r in d["results"] if r["match"] == "stem" and r["session"] == sid]
    assert stem, d
    assert any(m.lower() == said_word for r in stem for m in marked(r)), [marked(r) for r in stem]
    assert d["terms"][0]["stems"] and d["match"] == "exact+stem"
    assert search(h, q, exact=True, session=sid)["results"] == [] or q == "tests"


def test_exact_hits_come_first_and_exact_turns_stems_off(said):
    _cfg, h, _sid, other = said
    d = search(h, "migrations", limit=50)
    kinds = [r["match"] for r in d["results"]]
    assert kinds == sorted(kinds) and kinds[0] == "exact" and "stem" in kinds  # ("exact" < "stem")
    assert {r["session"] for r in d["results"] if r["match"] == "exact"} == {other}
    only = search(h, "migrations", limit=50, exact=True)
    assert {r["match"] for r in only["results"]} == {"exact"} and only["match"] == "exact"


@pytest.mark.parametrize(
    "q, found",
    [
        ("登录", "登录"),
        ("登", "登"),
        ("错误", "错误"),
        ("重新部署", "重新部署"),
        ("ログイン", "ログイン"),
        ("修正", "修正"),
        ("로그인", "로그인"),
        ('"登录错误"', "登录错误"),
    ],
)
def test_words_of_scripts_without_spaces_are_found_inside_their_runs(said, q, found):
    _cfg, h, sid, _ = said
    d = search(h, q, limit=20, exact=True)
    assert [r["session"] for r in d["results"]] == [sid], d
    assert found in marked(d["results"][0]), d["results"][0]["snippet"]


def test_a_run_of_characters_not_said_together_is_not_found(said):
    _cfg, h, _sid, _ = said
    assert search(h, "登错", exact=True)["results"] == []  # both are there, never side by side
    assert search(h, "登 错", exact=True)["results"]  # both words, anywhere


def test_the_index_and_the_words_cut_alike():
    assert word_list("修复登录 fix") == ["修", "复", "登", "录", "fix"]
    assert [w for w, _, _ in words("로그인을 test")] == ["로", "그", "인", "을", "test"]
    assert spaced("ok 登录") == "ok  登  录 " and spaced("plain ascii") == "plain ascii"


def test_one_row_per_session_with_its_hits_counted(said):
    _cfg, h, sid, other = said
    d = search(h, "migrations", limit=50)
    rows = {g["session"]: g for g in d["sessions"]}
    assert set(rows) == {sid, other}
    for s, g in rows.items():
        mine = [r for r in d["results"] if r["session"] == s]
        assert g["hits"] == len(mine) == g["exact"] + g["stem"]
        assert g["exact"] == sum(r["match"] == "exact" for r in mine)
        assert g["hit"]["session"] == s and g["hit"]["snippet"]["text"]
    assert next(g["session"] for g in d["sessions"]) == other  # exact hits first
    assert rows[sid]["exact"] == 0 and rows[sid]["stem"] >= 1


def test_the_command_is_the_route(tmp_path):
    cfg, _sid, main = web_corpus.one_session(tmp_path)
    for text in SAID:
        web_corpus.append_say(main, text)
    env = {**os.environ, **web_corpus.env_of(cfg)}
    with ServerThread(web_corpus.core(cfg)) as srv:
        assert srv.state.indexer.idle.wait(60)
        for q, extra in (("tests", []), ("登录", []), ("reinstal", ["--exact"])):
            params = {"q": q, **({"exact": "1"} if extra else {})}
            api = httpx.get(srv.url + "api/search", params=params, timeout=30).json()
            out = subprocess.run(
                [sys.executable, "-m", "huddle", "search", q, "--json", *extra],
                capture_output=True,
                text=True,
                env=env,
                timeout=120,
            )
            assert out.returncode == 0, out.stderr
            cli = json.loads(out.stdout)
            api["index"].pop("bytes"), cli["index"].pop("bytes")
            assert cli == api, q
        shown = subprocess.run(
            [sys.executable, "-m", "huddle", "search", "tests", "--sessions"], capture_output=True, text=True, env=env
        )
        assert shown.returncode == 0 and "hit" in shown.stdout, shown.stderr
