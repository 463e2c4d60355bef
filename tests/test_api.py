"""huddle.views.api: the routes as library functions, on the real samples."""

from __future__ import annotations

import json
import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import web_corpus
from conftest import SAMPLES, fingerprint
from huddle.errors import BadRequest, Forbidden, HuddleError, NotFound
from huddle.model import events as ev
from huddle.model.doing import doing
from huddle.views import api, operations
from said import as_json


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    root = tmp_path_factory.mktemp("corpus")
    s = web_corpus.build(root)
    return s, web_corpus.core(s), root


def test_every_route_on_every_sample_session(corpus):
    _, h, _ = corpus
    board = as_json(api.sessions(h))
    assert len(board["sessions"]) == len(h.sessions()) > 20
    sources = {s["source"] for s in board["sessions"]}
    assert "claude" in sources
    for row in board["sessions"]:
        sid = row["id"]
        d = api.session_detail(h, sid)
        json.dumps(d)
        assert d["id"] == sid and d["tree"][0]["parent"] is None
        assert {a["id"] for a in d["tree"]} == {a["id"] for a in row["agents"]}
        evs = api.events(h, sid, limit=operations.EVENTS_MAX)
        assert [e["seq"] for e in evs["events"]] == list(range(len(evs["events"])))
        lanes = api.transcripts(h, sid)
        for a in lanes["agents"]:
            t = api.transcript(h, sid, agent=a["id"], limit=operations.TRANSCRIPT_MAX)
            assert t["total"] == a["messages"]
            json.dumps(t)
            for m in t["messages"][:5]:
                if "ref" in m:
                    got = api.content(h, sid, m["ref"])
                    assert got["ref"] == m["ref"] and got["event"]["seq"] == m["seq"]


def test_the_read_only_promise(corpus, tmp_path):
    _s, h, root = corpus
    before = fingerprint(root)
    for row in as_json(api.sessions(h))["sessions"]:
        for m in api.transcript(h, row["id"])["messages"]:
            if "ref" in m:
                api.content(h, row["id"], m["ref"])
    assert fingerprint(root) == before


def test_transcript_pages_backwards_and_forwards_cover_every_line(tmp_path):
    s, sid, main = web_corpus.one_session(tmp_path)
    web_corpus.lengthen(main, 137)
    h = web_corpus.core(s)
    full = api.transcript(h, sid, limit=operations.TRANSCRIPT_MAX)
    total = full["total"]
    assert total > 137 and not full["has_more"]
    # the default page is the latest 50
    page = api.transcript(h, sid)
    assert len(page["messages"]) == 50 and page["last_line"] == total - 1 and page["has_more"]
    assert page["messages"][-1]["text"] == "history message 136"
    lines = [m["line"] for m in page["messages"]]
    while page["has_more"]:
        page = api.transcript(h, sid, before=page["first_line"], limit=50)
        lines = [m["line"] for m in page["messages"]] + lines
    assert lines == list(range(total))
    page = api.transcript(h, sid, before=40, limit=40)
    forward = [m["line"] for m in page["messages"]]
    while True:
        page = api.transcript(h, sid, after=page["last_line"], limit=40)
        forward += [m["line"] for m in page["messages"]]
        if not page["has_more"]:
            break
    assert forward == list(range(total))
    # nothing new after the last line; a new message comes after it
    assert api.transcript(h, sid, after=total - 1)["messages"] == []
    web_corpus.append_say(main, "brand new")
    h.refresh()
    new = api.transcript(h, sid, after=total - 1)
    assert [m["text"] for m in new["messages"]] == ["brand new"] and new["first_line"] == total


def test_events_paging_cursors(tmp_path):
    s, sid, main = web_corpus.one_session(tmp_path)
    h = web_corpus.core(s)
    seen, after = [], -1
    while True:
        page = api.events(h, sid, after=after, limit=7)
        seen += [e["seq"] for e in page["events"]]
        after = page["next_after"]
        if not page["has_more"]:
            break
    assert seen == list(range(page["total"]))
    assert api.events(h, sid, after=after)["events"] == [] and api.events(h, sid, after=after)["next_after"] == after
    web_corpus.append_say(main, "one more")
    h.refresh()
    assert [e["kind"] for e in api.events(h, sid, after=after)["events"]][-2:] == ["say", "turn_end"]


def test_a_sub_agent_transcript_opens_with_its_order(tmp_path):
    s, sid, _ = web_corpus.one_session(tmp_path)
    h = web_corpus.core(s)
    detail = api.session_detail(h, sid)
    subs = [a for a in detail["tree"] if a["parent"]]
    assert len(subs) == 3 and max(a["depth"] for a in subs) == 2
    for a in subs:
        t = api.transcript(h, sid, agent=a["id"])
        first = t["messages"][0]
        assert first["kind"] == ev.ORDER and first["target"] == a["id"] and first["agent"] == a["parent"]
        assert all(m["agent"] == a["id"] for m in t["messages"][1:])
    lead = api.transcript(h, sid, limit=500)["messages"]
    calls = [m for m in lead if m["kind"] == ev.ORDER]
    assert calls and all("result" in m for m in calls)


def test_harness_context_is_its_own_lane_never_the_human(corpus):
    _, h, _ = corpus
    seen = 0
    for row in as_json(api.sessions(h))["sessions"]:
        for m in api.transcript(h, row["id"], limit=500)["messages"]:
            if m["kind"] == ev.CONTEXT:
                seen += 1
                assert m["lane"] == "context"
            if m["lane"] == "human":
                assert m["kind"] == ev.PROMPT
    assert seen > 0


def test_unknown_agent_is_empty_unknown_session_is_not_found(corpus):
    _, h, _ = corpus
    sid = as_json(api.sessions(h))["sessions"][0]["id"]
    t = api.transcript(h, sid, agent="no-such-agent")
    assert t["messages"] == [] and t["total"] == 0 and t["first_line"] is None and not t["has_more"]
    for fn in (api.session_detail, api.events, api.transcripts, api.transcript):
        with pytest.raises(NotFound):
            fn(h, "0000-no-such-session")
    with pytest.raises(NotFound):
        api.content(h, "0000-no-such-session", "0-0-1")


@pytest.mark.parametrize("bad", ["", "../etc", "a/b", "x" * 300, "-lead", "a b", "é", "a\x00"])
def test_bad_ids_are_refused(corpus, bad):
    _, h, _ = corpus
    sid = as_json(api.sessions(h))["sessions"][0]["id"]
    with pytest.raises(BadRequest):
        api.session_detail(h, bad)
    if bad:
        with pytest.raises(BadRequest):
            api.transcript(h, sid, agent=bad)


@pytest.mark.parametrize(
    "params",
    [
        {"limit": "0"},
        {"limit": "501"},
        {"after": "-1"},
        {"before": "x"},
        {"after": "1", "before": "2"},
        {"limit": "1e3"},
    ],
)
def test_bad_paging_is_refused(corpus, params):
    _, h, _ = corpus
    sid = as_json(api.sessions(h))["sessions"][0]["id"]
    with pytest.raises(BadRequest):  # (read where every door reads it: views/operations.py)
        operations.BY_NAME["transcript"].answer(h, id=sid, **params)


def test_content_refs_are_checked(corpus):
    _, h, _ = corpus
    sid = as_json(api.sessions(h))["sessions"][0]["id"]
    good = next(m["ref"] for m in api.transcript(h, sid)["messages"] if "ref" in m)
    fi, off, ln = good.split("-")
    for bad in ["", "x", "0-0", "../0-0-1", "0-0-1-2-3", "1.5-0-1", good + "/", "99999-0-1"]:
        with pytest.raises(BadRequest):
            api.content(h, sid, bad)
    for missing in [f"999-{off}-{ln}", f"{fi}-{off}-{ln}-99", f"{fi}-{int(off) + 1}-{ln}", f"{fi}-{off}-{int(ln) + 1}"]:
        with pytest.raises(NotFound):
            api.content(h, sid, missing)


def test_a_symlink_out_of_the_agent_folders_is_never_read_back(tmp_path):
    s, sid, main = web_corpus.one_session(tmp_path)
    outside = tmp_path / "outside"
    outside.mkdir()
    secret = outside / "secret.jsonl"
    sub = next((main.parent / sid / "subagents").glob("agent-*.jsonl"))
    secret.write_bytes(sub.read_bytes())
    evil = sub.parent / "agent-aevil0000000000000.jsonl"
    os.symlink(secret, evil)
    h = web_corpus.core(s)
    # the source does not follow it: the linked file is no agent of the session
    assert api.transcript(h, sid, agent="aevil0000000000000")["messages"] == []
    # and a file swapped for a link after it was read is refused at read-back
    agent = sub.stem[len("agent-") :]
    refs = [m["ref"] for m in api.transcript(h, sid, agent=agent)["messages"] if "ref" in m]
    assert refs
    sub.unlink()
    os.symlink(secret, sub)
    with pytest.raises(Forbidden):
        api.content(h, sid, refs[-1])


def test_content_gives_the_whole_input_and_output(tmp_path):
    s, sid, _ = web_corpus.one_session(tmp_path)
    h = web_corpus.core(s)
    sub = next(a for a in api.session_detail(h, sid)["tree"] if a["type"] == "reviewer")
    call = next(m for m in api.transcript(h, sid, agent=sub["id"])["messages"] if m["kind"] == ev.TOOL_CALL)
    got = api.content(h, sid, call["ref"])
    assert got["input"]["file_path"].endswith("src/app.py")
    out = api.content(h, sid, call["result"]["ref"])
    assert "def greet(name):" in out["text"] and out["images"] == []
    assert call["doing"] == "reading app.py"


def test_doing_says_it_in_plain_words():
    assert doing("Bash", "Run the tests: npm test") == "running npm test"
    assert doing("Edit", "/home/x/src/app.py") == "editing app.py"
    assert doing("Write", "/a/b/notes.md") == "writing notes.md"
    assert doing("TodoWrite", "3 todos") == "updating the todo list"
    assert doing("exec_command", "pytest -q") == "running pytest -q"
    assert doing("Frobnicate", "x") == "using Frobnicate: x"


@settings(max_examples=200, deadline=None)
@given(
    sid=st.text(max_size=80),
    agent=st.one_of(st.none(), st.text(max_size=40)),
    limit=st.one_of(st.none(), st.text(max_size=6), st.integers(-5, 600)),
    ref=st.text(max_size=40),
)
def test_hostile_parameters_give_a_clear_error_never_a_crash(corpus, sid, agent, limit, ref):
    _, h, _ = corpus
    real = as_json(api.sessions(h))["sessions"][0]["id"]
    for target in (sid, real):
        for call in (
            lambda target=target: operations.BY_NAME["transcript"].answer(h, id=target, agent=agent, limit=limit),
            lambda target=target: operations.BY_NAME["events"].answer(h, id=target, after=limit, limit=limit),
            lambda target=target: api.content(h, target, ref),
        ):
            try:
                json.dumps(call())
            except HuddleError as exc:
                assert str(exc) and "\n" not in str(exc)


def test_the_demo_plays_five_agents_and_asks_permission(tmp_path):
    from huddle.demo import Demo
    from huddle.sources import Settings

    d = Demo(Settings.from_env(), speed=0)
    assert d.dir.startswith(os.environ["HUDDLE_HOME"])
    d.play(until="permission")
    h = d.huddle()
    h.refresh()
    rows = as_json(api.sessions(h))["sessions"]
    live = next(r for r in rows if r["id"] == d.session_id)
    assert live["state"] == "needs_you" and "permission" in (live["waiting_for"] or "")
    detail = api.session_detail(h, d.session_id)
    assert len(detail["tree"]) == 5 and max(a["depth"] for a in detail["tree"]) == 2
    assert len(rows) == 2 and live["skipped_lines"] == 0
    d.stop()
    assert not os.path.exists(d.dir)


def test_the_sample_folders_are_untouched():
    before = fingerprint(SAMPLES / "claude" / web_corpus.NESTED)
    h = web_corpus.core(
        web_corpus.Settings(
            folders={
                "claude": str(SAMPLES / "claude" / web_corpus.NESTED / "config"),
                "codex": "/nonexistent",
                "vibe": "/nonexistent",
            }
        )
    )
    sid = h.sessions()[0].id
    for m in api.transcript(h, sid, limit=500)["messages"]:
        if "ref" in m:
            api.content(h, sid, m["ref"])
    assert fingerprint(SAMPLES / "claude" / web_corpus.NESTED) == before


def test_a_cached_core_answers_like_a_cold_one(tmp_path):
    """A core loaded from its handle cache holds only the usage events of each session:
    the routes read the session asked about whole (Huddle.complete), once."""
    from huddle.core import Huddle, Keeper, WholeMode

    settings, sid, _main = web_corpus.one_session(tmp_path)
    cold = web_corpus.core(settings)
    Huddle(settings, keep=Keeper(WholeMode())).refresh()  # leaves the cache
    cached = Huddle(settings, keep=Keeper(WholeMode()))
    cached.refresh()
    assert cached.session(sid).complete is False  # from the cache: usage events only
    for fn, args in [
        (api.session_detail, ()),
        (api.events, ()),
        (api.transcripts, ()),
        (api.transcript, ()),
    ]:
        assert fn(cached, sid, *args) == fn(cold, sid, *args), fn.__name__
    assert cached.session(sid).complete is True
    assert len(api.events(cached, sid)["events"]) == len(cold.session(sid).events) > 20


def test_the_inspection_commands_use_the_cached_core(tmp_path):
    """`huddle events` on a cached core gives what the route gives, read from the cache
    and the one session (here, after `huddle status` left the cache)."""
    from click.testing import CliRunner

    from huddle.cli import main

    settings, sid, _main = web_corpus.one_session(tmp_path)
    env = {**os.environ, **settings.env(), "HUDDLE_SOURCES": "claude"}
    runner = CliRunner()
    assert runner.invoke(main, ["status", "--json"], env=env).exit_code == 0
    assert (tmp_path / "hh" / "cache" / "handles.db").exists()
    out = runner.invoke(main, ["events", sid, "--json", "--limit", "5000"], env=env)
    assert out.exit_code == 0, out.output
    assert json.loads(out.output) == api.events(web_corpus.core(settings), sid, limit=5000)


def test_a_sessions_live_signals_say_every_field_even_unknown(corpus):
    """Scripts read `live.alive` and `live.agents` of every session (as before signals
    were typed): an unknown one is null or empty, never missing."""
    _, h, _ = corpus
    for row in as_json(api.sessions(h))["sessions"]:
        live = api.session_detail(h, row["id"])["live"]
        assert {"alive", "pid", "status", "pending", "agents", "background"} <= set(live), row["id"]


def test_each_agents_live_signals_carry_the_state_the_rules_gave_it(tmp_path):
    """`live.agents[id]` said each agent's state, since and waiting_for before sources
    reported signals only: they are there still, as the rules decided them."""
    from huddle.core import Huddle
    from huddle.sources import Settings

    home = SAMPLES / "codex-live" / "01-working-streaming-tui" / "codex_home"
    h = Huddle(Settings(folders={"codex": str(home)}, huddle_home=str(tmp_path / "hh")), sources=["codex"])
    h.refresh()
    sid = as_json(api.sessions(h))["sessions"][0]["id"]
    detail = api.session_detail(h, sid)
    said = detail["live"]["agents"][sid]
    lead = next(a for a in detail["agents"] if a["id"] == sid)
    assert (said["state"], said["waiting_for"]) == (lead["state"], lead.get("waiting_for"))
    assert isinstance(said["since"], float) and "alive" in said
