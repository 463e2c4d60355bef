"""The adapter contract (docs/adapters.md): a source reports typed live signals
(huddle.model.signals), the attention rules decide the states from them; a scan
accounts for the files it met (huddle.model.files)."""

from __future__ import annotations

import msgspec

from huddle.model import attention as rules
from huddle.model import events as ev
from huddle.model.attention.session import classify
from huddle.model.events import Event
from huddle.model.files import EMPTY, UNKNOWN_VERSION, Files
from huddle.model.rows import Row, plain
from huddle.model.session import Session
from huddle.model.signals import AgentLive, Call, Live, Pending
from huddle.views.states import live_json, said_state

T0 = 1_700_000_000.0


def e(kind: str, t: float, agent: str = "lead", **kw) -> Event:
    return Event(kind=kind, agent=agent, t=T0 + t, **kw)


def running_shell(sub: bool = False) -> Session:
    """A lead whose turn is open on a shell call; with `sub`, a sub-agent it ordered."""
    s = Session("test", "lead")
    s.agent("lead")
    evs = [e(ev.PROMPT, 0, text="build it"), e(ev.TOOL_CALL, 1, id="c1", name="Bash", detail="make")]
    if sub:
        s.agent("sub", parent="lead").description = "the checks"
        evs += [e(ev.ORDER, 2, id="o1", target="sub", name="task", detail="the checks")]
    s.add_all(evs)
    return s


def test_a_gone_process_ends_every_agent():
    st, per = classify(running_shell(), Live(alive=False, ended_at=T0 + 3), now=T0 + 5)
    assert st.state == rules.ENDED and per["lead"].since == T0 + 3


def test_a_waiting_status_with_its_words_needs_you_on_the_newest_call():
    live = Live(alive=True, status="waiting", status_since=T0 + 2, pending=Pending(words="permission"))
    st, _ = classify(running_shell(), live, now=T0 + 5)
    assert st.state == rules.NEEDS_YOU and st.waiting_for == "permission: Bash: make" and st.since == T0 + 2


def test_a_pending_prompt_alone_is_a_waiting_status():
    st, _ = classify(running_shell(), Live(alive=True, pending=Pending(words="permission")), now=T0 + 5)
    assert st.state == rules.NEEDS_YOU


def test_a_call_seen_not_running_waits_for_approval_with_its_words():
    live = Live(alive=True, agents={"lead": AgentLive(calls=(Call(id="c1", since=T0 + 1, runs=False, words="ok?"),))})
    st, per = classify(running_shell(), live, now=T0 + 5)
    assert (st.state, st.waiting_for, per["lead"].since) == (rules.NEEDS_YOU, "ok?", T0 + 1)


def test_a_call_seen_running_is_working_with_what_it_does():
    live = Live(alive=True, agents={"lead": AgentLive(calls=(Call(id="c1", runs=True, doing="running make"),))})
    st, per = classify(running_shell(), live, now=T0 + 5)
    assert (st.state, st.doing) == (rules.WORKING, "running make")
    assert per["lead"].since == T0 + 1  # no time of its own: the transcript's


def test_time_alone_turns_an_unstarted_quick_call_into_an_approval():
    call = Call(id="c1", since=T0 + 1, asks_after=1.0, words="approve file change")
    live = Live(alive=True, agents={"lead": AgentLive(calls=(call,))})
    assert classify(running_shell(), live, now=T0 + 1.5)[0].state == rules.WORKING
    assert classify(running_shell(), live, now=T0 + 2.5)[0].state == rules.NEEDS_YOU


def test_the_most_urgent_call_of_an_agent_wins():
    calls = (Call(id="a", runs=True), Call(id="b", waits_on="the checks"), Call(id="c", question=True, words="which?"))
    st = rules.agent_signal_state(AgentLive(calls=calls), None, True, T0)
    assert st is not None and (st.state, st.waiting_for) == (rules.NEEDS_YOU, "which?")
    st = rules.agent_signal_state(AgentLive(calls=calls[:2]), None, True, T0)
    assert st is not None and (st.state, st.waiting_for) == (rules.WAITING, "the checks")


def test_an_agents_own_word_on_its_turn():
    s = running_shell(sub=True)
    over = Live(alive=True, agents={"sub": AgentLive(turn="open", turn_since=T0 + 3)})
    _, per = classify(s, over, now=T0 + 5)
    assert per["sub"].state == rules.WORKING and per["sub"].since == T0 + 3
    lead = rules.agent_signal_state(AgentLive(turn="over", turn_since=T0 + 4), None, True, T0 + 5)
    sub = rules.agent_signal_state(AgentLive(turn="over", turn_since=T0 + 4), None, False, T0 + 5)
    assert lead is not None and lead.state == rules.YOUR_TURN and sub is None  # a sub-agent's: the transcript's


def test_an_agents_own_thread_gone_ends_it_with_the_reason():
    live = Live(alive=True, agents={"lead": AgentLive(alive=False, gone="no TUI attached")})
    _, per = classify(running_shell(), live, now=T0 + 5)
    assert (per["lead"].state, per["lead"].waiting_for) == (rules.ENDED, "no TUI attached")


def test_a_guess_is_said_with_the_state_it_decided():
    call = Call(id="c1", runs=False, words="approve make", guess="no process table: the call asks for escalation")
    live = Live(alive=True, agents={"lead": AgentLive(calls=(call,))})
    st, _ = classify(running_shell(), live, now=T0 + 5)
    said = running_shell().summary(Row)
    said_state(said, st)
    assert said.guess == call.guess and plain(said)["guess"] == call.guess
    plainly = running_shell().summary(Row)
    said_state(plainly, classify(running_shell(), Live(alive=True), now=T0 + 5)[0])
    assert "guess" not in plain(plainly)


def test_no_signals_leave_the_transcript_to_decide():
    assert classify(running_shell(), Live(), now=T0 + 5)[0].state == rules.WORKING
    assert classify(running_shell(), None, now=T0 + 5)[0].state == rules.WORKING


def test_the_page_shows_the_signals_with_the_sources_facts_beside_them():
    live = Live(alive=True, pid=12, pending=Pending(words="permission"), facts={"permission_mode": "plan"})
    shown = live_json(live)
    said = {"permission_mode": "plan", "alive": True, "pid": 12, "pending": {"words": "permission"}}
    assert {k: shown[k] for k in said} == said
    # every other field of the rules is there too, as unknown (scripts read live.alive, live.agents)
    assert {k: v for k, v in shown.items() if k not in said} == {
        "started": None,
        "ended_at": None,
        "status": "",
        "status_since": None,
        "last_write": None,
        "background": [],
        "agents": {},
        "guess": "",
    }
    assert msgspec.json.decode(msgspec.json.encode(shown)) == shown
    assert live.word() == (True, "", "permission")


def test_signals_compare_by_value_so_a_row_is_built_again_only_when_they_move():
    a = Live(alive=True, agents={"x": AgentLive(calls=(Call(id="c", runs=True),))})
    b = Live(alive=True, agents={"x": AgentLive(calls=(Call(id="c", runs=True),))})
    assert a == b and a != Live(alive=True, agents={"x": AgentLive(calls=(Call(id="c", runs=False),))})


def test_a_scan_accounts_for_the_files_it_did_not_read():
    files = Files()
    files.looked_in("/a")
    files.looked_in("/a")
    files.not_session("/a/x.jsonl", EMPTY)
    files.unread("/a/y.jsonl", f"{UNKNOWN_VERSION}: session_v9")
    assert files.folders == ["/a"] and files.placed() == {"/a/x.jsonl", "/a/y.jsonl"}
    back = msgspec.json.decode(msgspec.json.encode(files), type=Files)
    assert back == files
