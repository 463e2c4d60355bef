"""Translation: the real Claude Code CLI (from npm) driven against a scripted model API on
127.0.0.1, the pool (warm, recycled, idle-killed, balanced by queue depth), the cache,
code and paths left alone, the API-key backend, huddle's own tokens apart, the route and
notifications."""

from __future__ import annotations

import json
import os
import stat
import threading
import time

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st

import agent_clis
from fake_model import FakeModel, fake_fr
from huddle.translate.claude import ClaudePool
from huddle.translate.protect import shield, unshield, worth
from huddle.translate.store import db_path, spent
from huddle.translate.translator import SYSTEM, Translator


@pytest.fixture
def model(tmp_path, monkeypatch):
    """The fake model API, and an environment whose `claude` asks it (and nothing else)."""
    with FakeModel() as fm:
        for k, v in agent_clis.translation_env(fm.url, tmp_path / "claude-config").items():
            monkeypatch.setenv(k, v)
        yield fm


@given(st.text(max_size=300))
def test_shielded_text_comes_back_whole(text):
    s, pieces = shield(text)
    assert unshield(s, pieces) == text


def test_code_commands_and_paths_are_set_aside():
    s, pieces = shield("Run `make test`, then:\n$ pytest -q\nsee ./src/app.py and https://x.io/a (well-known).")
    assert pieces == ["`make test`", "$ pytest -q", "./src/app.py", "https://x.io/a"]
    assert "well-known" in s
    assert unshield(s.replace("⟦2⟧", ""), pieces) is None  # a lost marker: the original is shown instead
    assert unshield(s + " ⟦1⟧", pieces) is None
    assert not worth(shield("```py\nprint(1)\n```")[0])


def test_the_claude_cli_translates_once_and_leaves_code_alone(model, tmp_path):
    home = str(tmp_path / "hh")
    tr = Translator(home, "fr")
    try:
        texts = ["Run `make test` then open ./src/app.py and done.", "The tests pass.", "```sh\nrm -rf build\n```"]
        out = tr.translate(texts)
        assert out[0] == "[fr] lance `make test` puis ouvre ./src/app.py et fini."
        assert out[1] == fake_fr("The tests pass.")
        assert out[2] == texts[2]  # nothing but code: never sent
        assert model.translations() == 1  # one batch for both strings
        assert tr.translate(["The tests pass.", texts[0]]) == [out[1], out[0]]  # from the cache
        assert model.translations() == 1
        pids = tr.backend.pids()  # type: ignore[attr-defined]
        assert len(pids) == 1  # a warm worker, kept
        assert tr.translate(["Needs you"]) == ["[fr] a besoin de toi"]
        assert tr.backend.pids() == pids  # type: ignore[attr-defined]
    finally:
        tr.close()
    assert stat.S_IMODE(os.stat(db_path(home)).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(os.path.dirname(db_path(home))).st_mode) == 0o700
    rows = spent(home)
    assert len(rows) == 2 and all(r["via"] == "claude" and r["input"] > 0 and r["output"] > 0 for r in rows)
    # no session of huddle's own was written where Claude Code keeps the user's
    assert not list((tmp_path / "claude-config").glob("projects/**/*.jsonl"))


def test_the_pool_recycles_idles_out_and_balances(model, tmp_path):
    model.delay = 0.6  # a model that takes its time: a second request finds the first worker busy
    pool = ClaudePool(SYSTEM.format(lang="fr"), str(tmp_path / "work"), size=2, recycle_after=2, idle_after=1.0)
    try:
        results: list[str] = []

        def ask(text: str) -> None:
            results.append(pool.ask(json.dumps([text])).text)

        threads = [threading.Thread(target=ask, args=(t,)) for t in ("one", "two")]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        assert sorted(results) == sorted(json.dumps([fake_fr(t)], ensure_ascii=False) for t in ("one", "two"))
        assert pool.started == 2  # the second request went to a second worker, not behind the first
        model.delay = 0
        first = set(pool.pids())
        for i in range(4):
            pool.ask(json.dumps([f"again {i}"]))
        assert pool.started >= 3  # each worker answers at most 2 messages, then a fresh one takes over
        assert not (set(pool.pids()) & first)
        deadline = time.time() + 30
        while pool.pids() and time.time() < deadline:
            time.sleep(0.2)
        assert pool.pids() == []  # idle workers ended
    finally:
        pool.close()


def test_an_api_key_is_used_never_stored_or_printed(tmp_path, monkeypatch):
    from click.testing import CliRunner

    from huddle.cli import main

    key = "sk-ant-api-PLANTED-0123456789"
    home = tmp_path / "hh"
    monkeypatch.setenv("HUDDLE_HOME", str(home))
    with FakeModel() as fm:
        monkeypatch.setenv("HUDDLE_TRANSLATE_API_URL", fm.url)
        monkeypatch.setenv("HUDDLE_TRANSLATE_API_KEY", key)
        r = CliRunner().invoke(main, ["translate", "fr", "--via", "api"])
        assert r.exit_code == 0 and "API key: set" in r.output and key not in r.output
        tr = Translator(str(home), "fr", via="api")
        try:
            assert tr.translate(["The tests pass."]) == [fake_fr("The tests pass.")]
        finally:
            tr.close()
        assert fm.requests[-1]["key"] == key and not fm.requests[-1]["stream"]
        monkeypatch.setenv("HUDDLE_TRANSLATE_API_URL", "http://127.0.0.1:9")  # nothing there
        tr = Translator(str(home), "fr", via="api")
        try:
            assert tr.translate(["Something new."]) == ["Something new."]  # the original, and why
            assert "could not be reached" in tr.last_error and key not in tr.last_error
        finally:
            tr.close()
    for dirpath, _, files in os.walk(home):
        for name in files:
            with open(os.path.join(dirpath, name), "rb") as f:
                assert key.encode() not in f.read(), name


def test_huddles_own_tokens_are_listed_apart(model, tmp_path, monkeypatch):
    from click.testing import CliRunner

    import web_corpus
    from huddle.cli import main
    from huddle.oneshot import answer

    settings, _, _ = web_corpus.one_session(tmp_path)
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", settings.folders["claude"])
    home = os.environ["HUDDLE_HOME"]
    before = json.loads(CliRunner().invoke(main, ["usage", "--json"]).stdout)
    assert before["huddle_own"] == {"rows": [], "totals": before["huddle_own"]["totals"]}
    tr = Translator(home, "fr")
    try:
        tr.translate(["The tests pass.", "Needs you"])
    finally:
        tr.close()
    after = json.loads(CliRunner().invoke(main, ["usage", "--json"]).stdout)
    assert after["totals"] == before["totals"] and after["rows"] == before["rows"]  # the sessions' usage untouched
    own = after["huddle_own"]
    assert [(r["key"], r["via"], r["responses"]) for r in own["rows"]] == [("translation", "claude", 1)]
    assert own["totals"]["total_tokens"] == sum(r["input"] + r["output"] for r in spent(home)) > 0
    table = CliRunner().invoke(main, ["usage"]).output
    assert "huddle's own (translation" in table
    # `usage --json` said before click loads (a stored answer) says the same
    assert answer(["usage", "--json"]) == 0


def test_the_route_translates_a_sessions_words(model, tmp_path, monkeypatch):
    import web_corpus
    from huddle.server import ServerThread

    settings, sid, main_file = web_corpus.one_session(tmp_path)
    web_corpus.append_say(main_file, "The tests pass. Run `make test` again with ./ci.sh then.")
    monkeypatch.setenv("HUDDLE_TRANSLATE", "fr")
    h = web_corpus.core(settings)
    with ServerThread(h) as srv, httpx.Client(base_url=srv.url, timeout=60) as c:
        assert c.get("/api/translation").json()["lang"] == "fr"
        evs = c.get(f"/api/sessions/{sid}/events").json()["events"]
        said = next(e for e in evs if e["kind"] == "say" and "make test" in (e.get("text") or ""))
        tool = next(e for e in evs if e["kind"] == "tool_call")
        r = c.get(f"/api/sessions/{sid}/translation", params=[("seq", said["seq"]), ("seq", tool["seq"])]).json()
        assert r["lang"] == "fr" and len(r["items"]) == 1  # a tool call has no words to translate
        item = r["items"][0]
        assert item["seq"] == said["seq"] and item["translated"]
        assert item["text"] == "[fr] les tests passent. lance `make test` again avec ./ci.sh puis."
        assert c.get(f"/api/sessions/{sid}/translation?seq=x").status_code == 400
    monkeypatch.setenv("HUDDLE_TRANSLATE", "off")
    with ServerThread(web_corpus.core(settings)) as srv, httpx.Client(base_url=srv.url, timeout=20) as c:
        assert c.get("/api/translation").json() == {
            "on": False,
            "lang": None,
            "via": None,
            "error": None,
            "why": c.get("/api/translation").json()["why"],
        }
        r = c.get(f"/api/sessions/{sid}/translation?seq=1")
        assert r.status_code == 404 and "translation is off" in r.json()["error"]


def test_notifications_show_at_once_then_in_the_language(model, tmp_path, monkeypatch):
    from huddle.translate.notify import translated
    from huddle.translate.serving import TranslationDesk

    class Recorder:
        name = "recorder"

        def __init__(self) -> None:
            self.shown: list[tuple[str, str, object]] = []
            self.closed: list[object] = []

        def show(self, summary, body, url, replaces=None):
            self.shown.append((summary, body, replaces))
            return len(self.shown)

        def close(self, handle):
            self.closed.append(handle)

    monkeypatch.setenv("HUDDLE_TRANSLATE", "fr")
    desk = TranslationDesk(str(tmp_path / "hh"))
    rec = Recorder()
    backend = translated(rec, desk)
    try:
        handle = backend.show("Fix parser needs you", "The lead\nApprove the fix", None)
        assert rec.shown[0][:2] == ("Fix parser needs you", "The lead\nApprove the fix")  # not held for a model
        deadline = time.time() + 60
        while len(rec.shown) < 2 and time.time() < deadline:
            time.sleep(0.05)
        assert rec.shown[1] == (fake_fr("Fix parser needs you"), fake_fr("The lead\nApprove the fix"), 1)
        backend.close(handle)
        assert rec.closed == [2]
        backend.show("Fix parser needs you", "The lead\nApprove the fix", None)  # cached: at once
        assert rec.shown[2][:2] == rec.shown[1][:2]
    finally:
        desk.close()
    monkeypatch.setenv("HUDDLE_TRANSLATE", "off")
    assert translated(rec, desk) is rec
