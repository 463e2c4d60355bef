"""The one attention-rule table (huddle.model.attention) and its use by the board
(views/states.classify), the status line's overlay and the pages' timeline states.
Every rule of the table is exercised here on real sessions built from events."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from huddle.io import procs
from huddle.io.boardfile import board_path, read_board
from huddle.model import attention as rules
from huddle.model import events as ev
from huddle.model.attention.session import classify
from huddle.model.attention.trail import state_changes
from huddle.model.events import Event
from huddle.model.session import Session
from huddle.model.signals import AgentLive, Call, Live, Pending

T0 = 1_700_000_000.0


def session(*events: Event, subs: tuple[str, ...] = ()) -> Session:
    s = Session("test", "lead")
    s.agent("lead")
    for sub in subs:
        a = s.agent(sub, parent="lead")
        a.description = f"the {sub} task"
    s.add_all(list(events))
    return s


def e(kind: str, t: float, agent: str = "lead", **kw) -> Event:
    return Event(kind=kind, agent=agent, t=T0 + t, **kw)


def prompt(t: float = 0, agent: str = "lead") -> Event:
    return e(ev.PROMPT, t, agent, text="do it")


def state(s: Session, live: Live | None = None, after: float = 5) -> str:
    return classify(s, live, now=T0 + after)[0].state


# -- the transcript rules, one by one ---------------------------------------------------


def test_an_open_permission_prompt_needs_you():
    s = session(prompt(), e(ev.TOOL_CALL, 1, id="c1", name="Bash"), e(ev.WAITING, 2, id="w1", name="Bash"))
    st, per = classify(s, now=T0 + 5)
    assert st.state == rules.NEEDS_YOU and per["lead"].since == T0 + 2


def test_an_open_question_tool_needs_you_whatever_the_agent_calls_it():
    for name in ("AskUserQuestion", "request_user_input", "ui.ask_user_question"):
        s = session(prompt(), e(ev.TOOL_CALL, 1, id="q", name=name, detail="which colour?"))
        st, _ = classify(s, now=T0 + 5)
        assert (st.state, st.waiting_for) == (rules.NEEDS_YOU, "which colour?"), name


def test_an_open_order_waits_on_its_sub_agent():
    s = session(prompt(), e(ev.ORDER, 1, id="o1", target="sub"), prompt(2, "sub"), subs=("sub",))
    st, per = classify(s, now=T0 + 5)
    assert (st.state, st.waiting_for) == (rules.WAITING, "the sub task")
    assert per["sub"].state == rules.WORKING  # the lead's wait is what the session shows


def test_an_exited_process_has_ended():
    s = session(prompt(), e(ev.TURN_END, 1), e(ev.CONTEXT, 2, name="session_end"))
    assert state(s) == rules.ENDED


def test_a_sub_agent_that_reported_has_ended_but_never_hides_its_lead():
    s = session(
        prompt(),
        e(ev.ORDER, 1, id="o1", target="sub"),
        prompt(2, "sub"),
        e(ev.TURN_END, 3, "sub"),
        e(ev.REPORT, 4, id="o1", target="sub", text="done"),
        subs=("sub",),
    )
    s.agents["sub"].report = "done"
    st, per = classify(s, now=T0 + 5)
    assert per["sub"].state == rules.ENDED
    assert st.state == rules.WORKING  # the lead's turn goes on


def test_an_open_turn_is_working_and_says_what_it_does():
    s = session(prompt(), e(ev.TOOL_CALL, 1, id="c1", name="Bash", detail="tests: npm test"))
    st, _ = classify(s, now=T0 + 5)
    assert (st.state, st.doing) == (rules.WORKING, "running npm test")


def test_a_finished_turn_is_your_turn_then_idle():
    s = session(prompt(), e(ev.SAY, 1, text="done"), e(ev.TURN_END, 2))
    assert state(s, after=60) == rules.YOUR_TURN
    assert state(s, after=rules.IDLE_AFTER + 60) == rules.IDLE


def test_work_nothing_vouches_for_goes_idle_but_a_live_process_keeps_it():
    s = session(prompt(), e(ev.TOOL_CALL, 1, id="c1", name="Bash"))
    long_after = rules.IDLE_AFTER + 60
    assert state(s, after=long_after) == rules.IDLE  # no liveness, files quiet for long
    assert state(s, Live(alive=True), after=long_after) == rules.WORKING


def test_a_session_time_made_idle_has_no_agent_still_at_work():
    """A year-old session whose lead was thinking and whose sub-agent never reported back:
    the session is idle, and so is each agent (the tree and `show` said "working:
    thinking" a year on). Its turn over for long, the lead's "your turn" goes idle too;
    a process alive keeps them as the transcript says."""
    s = session(
        prompt(),
        e(ev.ORDER, 1, id="o1", target="sub"),
        e(ev.PROMPT, 2, "sub", text="the task"),
        e(ev.TOOL_CALL, 3, "sub", id="c1", name="Bash"),
        subs=("sub",),
    )
    assert {a: st.state for a, st in classify(s, now=T0 + 60)[1].items()} == {"lead": "waiting", "sub": "working"}
    st, per = classify(s, now=T0 + rules.IDLE_AFTER + 60)
    assert st.state == rules.IDLE
    assert {a: (p.state, p.since, p.doing) for a, p in per.items()} == {
        "lead": (rules.IDLE, T0 + 1, ""),  # (each since its own last word; doing nothing)
        "sub": (rules.IDLE, T0 + 3, ""),
    }
    alive = classify(s, Live(alive=True), now=T0 + rules.IDLE_AFTER + 60)[1]
    assert {a: p.state for a, p in alive.items()} == {"lead": "waiting", "sub": "working"}
    done = session(prompt(), e(ev.SAY, 1, text="done"), e(ev.TURN_END, 2))
    assert classify(done, now=T0 + 60)[1]["lead"].state == rules.YOUR_TURN
    assert classify(done, now=T0 + rules.IDLE_AFTER + 60)[1]["lead"].state == rules.IDLE
    # an agent's own word on its turn (no process known) is not time's to overrule
    own = Live(agents={"sub": AgentLive(turn="open", turn_since=T0 + 3)})
    st, per = classify(s, own, now=T0 + rules.IDLE_AFTER + 60)
    assert st.state == rules.IDLE
    assert (per["lead"].state, per["sub"].state) == (rules.IDLE, rules.WORKING)


# -- liveness and the process's own status ----------------------------------------------


def test_a_gone_process_ends_every_agent():
    s = session(prompt(), e(ev.TOOL_CALL, 1, id="c1", name="Bash"))
    st, per = classify(s, Live(alive=False, status="busy"), now=T0 + 5)
    assert st.state == rules.ENDED and per["lead"].state == rules.ENDED


@pytest.mark.parametrize(
    ("status", "before", "after"),
    [
        ("busy", "your_turn", "working"),  # a new turn under way before its first line
        ("busy", "waiting", "waiting"),  # a pending order stays what it is
        ("idle", "working", "your_turn"),
        ("shell", "working", "your_turn"),
        ("waiting", "working", "needs_you"),
    ],
)
def test_a_process_status_over_the_transcript(status, before, after):
    events = {
        "your_turn": [prompt(), e(ev.TURN_END, 1)],
        "waiting": [prompt(), e(ev.ORDER, 1, id="o1", target="sub")],
        "working": [prompt(), e(ev.TOOL_CALL, 1, id="c1", name="Bash")],
    }[before]
    s = session(*events, subs=("sub",))
    assert state(s) == before
    pending = Pending(words="permission prompt") if status == "waiting" else None
    assert state(s, Live(alive=True, status=status, pending=pending)) == after
    assert rules.with_process_status(before, status) == after  # the table the status line uses too


def test_busy_on_background_work_after_the_turn_is_still_your_turn():
    s = session(
        prompt(),
        e(ev.TOOL_CALL, 1, id="b1", name="Bash"),
        e(ev.TOOL_RESULT, 2, id="b1", detail="background"),
        e(ev.TURN_END, 3),
    )
    st, _ = classify(s, Live(alive=True, status="busy"), now=T0 + 5)
    assert st.state == rules.YOUR_TURN and st.background == ["Bash in background"]
    assert rules.with_process_status(rules.YOUR_TURN, "busy", background=True) == rules.YOUR_TURN


def test_background_work_nothing_vouches_for_goes_idle_once_the_files_stand_still():
    """A year-old session whose background work never reported back is not "your turn"
    forever: with no process known and its files untouched past the idle time, idle;
    a live process (or files that moved lately) keeps it your turn."""
    s = session(
        prompt(),
        e(ev.TOOL_CALL, 1, id="b1", name="Bash"),
        e(ev.TOOL_RESULT, 2, id="b1", detail="background"),
        e(ev.TURN_END, 3),
    )
    later = T0 + 3 + rules.IDLE_AFTER + 60
    assert classify(s, now=T0 + 60)[0].state == rules.YOUR_TURN
    st = classify(s, now=later)[0]
    assert st.state == rules.IDLE and st.since == T0 + 3
    assert classify(s, Live(alive=True), now=later)[0].state == rules.YOUR_TURN
    assert rules.after_quiet(rules.YOUR_TURN, 10**6, 10**6, True, False) == rules.IDLE
    assert rules.after_quiet(rules.YOUR_TURN, 10**6, 60, True, False) == rules.YOUR_TURN


def test_an_agents_own_signals_win_over_its_transcript():
    s = session(prompt(), e(ev.TOOL_CALL, 1, id="c1", name="exec_command"))
    seen = Call(id="c1", runs=False, words="approve command: ls")  # no process runs it
    live = Live(alive=True, agents={"lead": AgentLive(calls=(seen,))})
    st, _ = classify(s, live, now=T0 + 5)
    assert (st.state, st.waiting_for) == (rules.NEEDS_YOU, "approve command: ls")


def test_every_rule_of_the_table_is_reachable():
    seen = set()
    for sig in (
        rules.Signals(asks=True),
        rules.Signals(orders=True),
        rules.Signals(exited=True),
        rules.Signals(ordered=True, is_lead=False),
        rules.Signals(done=True, is_lead=False),
        rules.Signals(turn_open=True),
        rules.Signals(),
    ):
        seen.add(rules.transcript_rule(sig))
    assert seen == set(rules.TRANSCRIPT)
    assert [rules.urgency(s) for s in rules.STATES] == sorted(rules.urgency(s) for s in rules.STATES)


# -- the pages: each event that moves a state carries it --------------------------------


def test_the_timeline_states_are_the_rules_at_each_event():
    s = session(
        prompt(0),
        e(ev.TOOL_CALL, 1, id="c1", name="Bash"),
        e(ev.WAITING, 2, id="w1", name="Bash"),
        e(ev.RESOLVED, 3, id="w1"),
        e(ev.TOOL_RESULT, 4, id="c1"),
        e(ev.TURN_END, 5),
    )
    changes = state_changes(s)
    assert [(s.events[i].kind, st) for i, st in sorted(changes.items())] == [
        (ev.PROMPT, "working"),
        (ev.WAITING, "needs_you"),
        (ev.RESOLVED, "working"),
        (ev.TURN_END, "your_turn"),
    ]
    s.add(prompt(6))  # incremental: the new event alone is looked at
    assert state_changes(s)[len(s.events) - 1] == "working"


# -- the status line: the board's rules over Claude Code's live registry ----------------


def run_statusline(env: dict) -> dict:
    r = subprocess.run(
        [sys.executable, "-m", "huddle", "statusline", "--json"],
        input=json.dumps({"session_id": "me"}),
        capture_output=True,
        text=True,
        env={**os.environ, **env},
        timeout=60,
    )
    return json.loads(r.stdout)


@pytest.fixture
def registry_home(tmp_path: Path):
    """A board file whose one row is working, and a Claude registry beside it."""
    home, claude = tmp_path / "hh", tmp_path / "claude"
    (claude / "sessions").mkdir(parents=True)
    row = {"id": "s1", "source": "claude", "title": "t", "state": "working", "background": False, "files": []}
    from huddle.io.boardfile import write_rows

    write_rows(str(home), [row], [], {"claude": str(claude)})
    assert read_board(board_path(str(home))) is not None
    return home, claude


def write_registry(claude: Path, **fields) -> None:
    rec = {"sessionId": "s1", "pid": os.getpid(), "procStart": str(procs.start_time(os.getpid())), **fields}
    (claude / "sessions" / f"{os.getpid()}.json").write_text(json.dumps(rec))


@pytest.mark.parametrize(
    ("fields", "needs"),
    [
        ({"status": "waiting", "waitingFor": "permission prompt"}, ["permission prompt"]),
        ({"status": "idle"}, []),
        # another pid namespace: liveness unknown, so the status still tells (as on the board)
        ({"status": "waiting", "waitingFor": "a question", "pidDomain": "pid:[1]"}, ["a question"]),
    ],
)
def test_the_status_line_overlay_follows_the_board_rules(registry_home, fields, needs):
    home, claude = registry_home
    write_registry(claude, **fields)
    out = run_statusline({"HUDDLE_HOME": str(home), "HUDDLE_STATUSLINE_BUDGET": "0.05"})
    assert [n["waiting_for"] for n in out["needs_you"]] == needs
    assert out["working"] == (1 if fields["status"] != "idle" and not needs else 0)


def test_the_status_line_overlay_ends_a_reused_pid(registry_home):
    home, claude = registry_home
    write_registry(claude, status="waiting", waitingFor="permission prompt", procStart="1")  # not our start
    out = run_statusline({"HUDDLE_HOME": str(home), "HUDDLE_STATUSLINE_BUDGET": "0.05"})
    assert out["needs_you"] == [] and out["working"] == 0


# -- when time alone moves a state next ----------------------------------------------------


@pytest.mark.parametrize(
    ("state", "background", "known", "clock"),
    [
        (rules.YOUR_TURN, False, False, "since"),  # goes idle IDLE_AFTER after it began
        (rules.YOUR_TURN, False, True, "since"),
        (rules.YOUR_TURN, True, False, "last"),  # background work nothing vouches for: once its files stood still
        (rules.YOUR_TURN, True, True, None),  # background work a live process vouches for: only its end
        (rules.WORKING, False, False, "last"),  # nothing vouches: idle once its files stood still
        (rules.NEEDS_YOU, True, False, "last"),
        (rules.WORKING, False, True, None),  # a live process vouches: a signal moves it, not time
        (rules.IDLE, False, False, None),
        (rules.ENDED, False, False, None),
    ],
)
def test_next_change_is_the_moment_after_quiet_moves_the_state(state, background, known, clock):
    since, last = T0 + 10, T0 + 20
    at = rules.next_change(state, since, last, background, known)
    assert at == {"since": since + rules.IDLE_AFTER, "last": last + rules.IDLE_AFTER, None: None}[clock]
    for now in (T0 + 100, T0 + 20 + rules.IDLE_AFTER - 1, T0 + 20 + rules.IDLE_AFTER + 1, T0 + 10 * rules.IDLE_AFTER):
        moved = rules.after_quiet(state, now - since, now - last, background, known) != state
        assert moved == (at is not None and now > at), (state, now)


def test_a_rows_next_change_is_decided_with_its_state():
    s = session(prompt(), e(ev.TURN_END, 1))
    st, _ = classify(s, now=T0 + 5)
    assert st.state == rules.YOUR_TURN and st.next_change == T0 + 1 + rules.IDLE_AFTER
    assert classify(s, now=st.next_change + 1)[0].next_change is None  # idle now: nothing moves it
    assert classify(s, Live(alive=False), now=T0 + 5)[0].next_change is None  # ended


def test_a_quick_calls_timer_is_a_next_change():
    s = session(prompt(), e(ev.TOOL_CALL, 1, id="p", name="apply_patch"))
    quick = Call(id="p", since=T0 + 1, asks_after=1.0, words="approve file change")
    live = Live(alive=True, agents={"lead": AgentLive(calls=(quick,))})
    st, _ = classify(s, live, now=T0 + 1.5)
    assert st.state == rules.WORKING and st.next_change == T0 + 2.0
    st, _ = classify(s, live, now=T0 + 2.5)
    assert st.state == rules.NEEDS_YOU and st.next_change is None


@pytest.mark.parametrize(
    ("state", "pid", "agents", "again"),
    [
        ("idle", None, ["working", "working"], None),  # 2.0's warm-ups never reported: a file moves it
        ("ended", None, ["waiting"], None),
        ("your_turn", None, ["working"], 1.0),  # background work under way: looked at each second
        ("idle", 4242, ["working"], 1.0),  # a process known: what it shows moves with no file
        ("working", None, [], 1.0),
    ],
)
def test_a_settled_session_is_not_looked_at_again_for_agents_that_never_reported(state, pid, agents, again):
    """A server looks at a live row every second (views.states.look_again_in); a session
    settled by time, whose agents still say they work, is not live: it was looked at
    every second for as long as it stayed awake."""
    from huddle.views.states import look_again_in
    from said import row

    fields = {"state": state, "agents": [{"id": f"a{i}", "state": s} for i, s in enumerate(agents)]}
    if pid is not None:
        fields["pid"] = pid
    assert look_again_in(row(**fields), now=1.8e9, hot_every=1.0) == again
