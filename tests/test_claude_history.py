"""Every Claude Code version a user's history holds, on real files of six versions
(1.0.128 to 2.1.332, tests/fixtures/samples/claude-history): sessions, sub-agents in
each version's layout, trees, titles, prompts, and usage equal to a count made straight
from the records (each message.id once, at the largest of each field)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import SAMPLES
from helpers import NOWHERE, claude_huddle, grow_in_pieces
from huddle.core import Huddle, Keeper, WholeMode
from huddle.cost.pricing import current
from huddle.model import events as ev
from huddle.sources import Settings
from huddle.usage.index import counted_from_index
from huddle.usage.report import aggregate, collect, report
from huddle.views import api
from huddle.views.board import board_json
from said import as_json

HISTORY = SAMPLES / "claude-history"
VERSIONS = ("1.0.128", "2.0.14", "2.0.77", "2.1.50", "2.1.105", "2.1.332")
CONFIGS = sorted(p for v in VERSIONS for p in (HISTORY / v).glob("*/config"))
FIELDS = ("input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")


def cfg(version: str, scenario: str) -> Path:
    (path,) = (HISTORY / version).glob(f"{scenario}*/config")
    return path


def largest_per_id(paths) -> dict[str, list[int]]:
    """Straight from the records: message.id -> the largest of each usage field."""
    out: dict[str, list[int]] = {}
    for p in paths:
        for line in Path(p).read_bytes().splitlines():
            d = json.loads(line)
            m = d.get("message")
            if d.get("type") != "assistant" or not m.get("id") or m.get("model") == "<synthetic>":
                continue
            cur = out.setdefault(m["id"], [0, 0, 0, 0])
            for i, f in enumerate(FIELDS):
                cur[i] = max(cur[i], m["usage"].get(f) or 0)
    return out


def total(ids: dict[str, list[int]]) -> dict[str, int]:
    return dict(
        zip(("input", "output", "cache_read", "cache_write"), (sum(u[i] for u in ids.values()) for i in range(4)))
    )


def usage4(u) -> dict[str, int]:
    d = u.to_dict() if hasattr(u, "to_dict") else dict(u)
    return {k: d.get(k, 0) for k in ("input", "output", "cache_read", "cache_write")}


def listed(h) -> dict[str, dict]:
    return {r["id"]: r for r in as_json(board_json(h))["sessions"]}


def by_prefix(rows: dict[str, dict], prefix: str) -> dict:
    (row,) = [r for k, r in rows.items() if k.startswith(prefix)]
    return row


# -- usage ------------------------------------------------------------------------------


@pytest.mark.parametrize("config", CONFIGS, ids=lambda p: f"{p.parent.parent.name}/{p.parent.name}")
def test_usage_is_the_largest_count_of_each_response_once(config):
    h = claude_huddle(config)
    truth = total(largest_per_id(config.glob("projects/**/*.jsonl")))
    rows = listed(h)
    # every response of every file counts once, in one listed session
    board = {k: sum(usage4(r["usage"])[k] for r in rows.values()) for k in truth}
    assert board == truth
    for s in h.sessions():
        assert s.error is None and s.skipped_lines == 0, s.problems
        assert usage4(s.usage) == {k: sum(usage4(a.usage)[k] for a in s.agents.values()) for k in truth}
    # `huddle usage` counts the same, session by session
    rep = report(h, by="session")
    assert {r["session"]: r["total_tokens"] for r in rep["rows"]} == {
        sid: r["tokens"] for sid, r in rows.items() if r["tokens"]
    }
    assert rep["totals"]["total_tokens"] == sum(truth.values())


def usage_only(config: Path) -> Huddle:
    h = Huddle(
        Settings(
            folders={"claude": str(config), "codex": NOWHERE, "vibe": NOWHERE}, huddle_home=NOWHERE, usage_only=True
        ),
        sources=["claude"],
    )
    h.refresh()
    return h


@pytest.mark.parametrize("config", CONFIGS, ids=lambda p: f"{p.parent.parent.name}/{p.parent.name}")
def test_a_usage_only_read_names_and_starts_as_a_full_read(config):
    """`huddle usage` reads token counts and what names things: every agent's label,
    every session's title and start, every counted row are a full read's."""
    full, quick = claude_huddle(config), usage_only(config)
    assert collect(quick.sessions(), per_session=True) == collect(full.sessions(), per_session=True)
    for s in full.sessions():
        q = quick.session(s.id)
        assert (q.title, q.started_at, q.cwd) == (s.title, s.started_at, s.cwd)
        assert {a.id: (a.kind, a.usage.to_dict()) for a in q.agents.values()} == {
            a.id: (a.kind, a.usage.to_dict()) for a in s.agents.values()
        }


def test_lines_in_another_json_hand_are_read_as_claude_codes_own(tmp_path):
    """A transcript written with spaces after the colons (by a tool, not Claude Code):
    the usage-only prefilter cannot judge it, so it reads it whole, never passes it over."""
    for config in (cfg("2.0.77", "02"), cfg("1.0.128", "04")):
        dst = tmp_path / config.parent.name / "config"
        shutil.copytree(config, dst)
        for f in dst.glob("projects/**/*.jsonl"):
            f.write_text("".join(json.dumps(json.loads(x)) + "\n" for x in f.read_text().splitlines()))
        full, quick = claude_huddle(dst), usage_only(dst)
        assert collect(quick.sessions()) == collect(full.sessions())
        assert report(quick)["totals"] == report(claude_huddle(config))["totals"]


@pytest.mark.parametrize("config", [c for c in CONFIGS if "04-resume" not in str(c)], ids=str)
def test_each_session_counts_exactly_its_own_files(config):
    h = claude_huddle(config)
    for s in h.sessions():
        files = h.handle(s.key).files()
        assert usage4(s.usage) == total(largest_per_id(files)), s.id


def test_a_copied_history_counts_where_it_first_appeared():
    # 1.0.128 forks into a new file with the whole history copied, nothing marks the copies
    h = claude_huddle(cfg("1.0.128", "04"))
    rows = listed(h)
    orig, fork = by_prefix(rows, "4949eb19"), by_prefix(rows, "fcdc041b")
    d = Path(h.handle(fork["key"] if "key" in fork else "claude:" + fork["id"]).path).parent
    own = largest_per_id([d / f"{orig['id']}.jsonl"])
    forked = largest_per_id([d / f"{fork['id']}.jsonl"])
    assert usage4(orig["usage"]) == total(own)
    assert usage4(fork["usage"]) == total({k: v for k, v in forked.items() if k not in own})
    copies = [e for e in h.session(fork["id"]).events if e.kind == ev.USAGE and e.counted_in]
    assert copies and {e.counted_in for e in copies} == {f"claude:{orig['id']}"}
    # 2.0.77 marks some copies with the original's sessionId: that one counts them
    h = claude_huddle(cfg("2.0.77", "04"))
    rows = listed(h)
    fork = h.session(by_prefix(rows, "0632a4a2")["id"])
    assert fork.lead.usage.output == 12  # the fork's own turn only (its warm-ups apart)


def test_partial_output_counts_take_the_final_record():
    # 2.0.14 writes one record per content block: the early ones carry output_tokens=1
    config = cfg("2.0.14", "01")
    (f,) = config.glob("projects/*/*.jsonl")
    ids: dict[str, list[int]] = {}
    for line in f.read_bytes().splitlines():
        d = json.loads(line)
        if d["type"] == "assistant":
            ids.setdefault(d["message"]["id"], []).append(d["message"]["usage"]["output_tokens"])
    assert any(len(set(v)) > 1 for v in ids.values())  # the case is there
    (s,) = claude_huddle(config).sessions()
    assert s.usage.output == sum(max(v) for v in ids.values())


def test_a_file_that_never_got_the_final_counts_says_so():
    # 2.1.50 keeps the message_start value (1) on every record: no reader can recover it
    rows = listed(claude_huddle(cfg("2.1.50", "01")))
    (row,) = rows.values()
    assert "partial output count" in row["usage_note"] and row["usage"]["output"] < 10
    assert "usage_note" not in next(iter(listed(claude_huddle(cfg("2.1.332", "01"))).values()))


def test_the_live_case_partial_record_then_the_final_one_appended(tmp_path):
    config = tmp_path / "config"
    shutil.copytree(cfg("2.0.14", "01"), config)
    (f,) = config.glob("projects/*/*.jsonl")
    lines = f.read_bytes().splitlines(keepends=True)
    whole = claude_huddle(cfg("2.0.14", "01")).sessions()[0].usage.to_dict()
    # cut right after the first record of a response written as several records
    first_of: dict[str, int] = {}
    cut = None
    for i, line in enumerate(lines):
        d = json.loads(line)
        if d["type"] == "assistant":
            mid = d["message"]["id"]
            if mid in first_of and d["message"]["usage"]["output_tokens"] > 1:
                cut = first_of[mid] + 1
                break
            first_of.setdefault(mid, i)
    assert cut is not None
    f.write_bytes(b"".join(lines[:cut]))
    settings = Settings(
        folders={"claude": str(config), "codex": NOWHERE, "vibe": NOWHERE}, huddle_home=str(tmp_path / "home")
    )
    live = Huddle(settings)  # one process that keeps reading
    live.refresh()
    cached = Huddle(settings, keep=Keeper(WholeMode()))  # and one that leaves its reading state in the cache
    cached.refresh()
    early = live.sessions()[0].usage.output
    assert early == cached.sessions()[0].usage.output < whole["output"]
    with open(f, "ab") as out:
        out.write(b"".join(lines[cut:]))
    live.refresh()
    later = Huddle(settings, keep=Keeper(WholeMode()))  # a new process: the cached events, then the appended bytes
    assert later.handles and not next(iter(later.handles.values())).session.complete
    later.refresh()
    for h in (live, later):
        (s,) = h.sessions()
        assert s.usage.to_dict() == whole
        assert report(h, by="session")["totals"]["output"] == whole["output"]


# -- sessions, sub-agents, trees, titles, prompts ------------------------------------------

# version, scenario -> sessions on the board: (id prefix, prompts, sub-agent types, quiet warm-ups, title)
EXPECTED = {
    ("1.0.128", "02"): [("16fb5131", 1, ["general-purpose", "general-purpose"], 0, "[[scn:h_subagents]] Survey")],
    ("1.0.128", "03"): [("2e9c6c4b", 1, ["general-purpose"], 0, "[[scn:h_bg]] Count")],
    ("1.0.128", "04"): [
        ("4949eb19", 3, [], 0, "Scripted session"),
        ("fcdc041b", 4, [], 0, "[[scn:h_r1]] Run the app."),
    ],
    ("1.0.128", "05"): [("a1da1972", 3, [], 0, "OK")],
    ("2.0.14", "02"): [("698fb847", 1, ["general-purpose", "general-purpose"], 0, "[[scn:h_subagents]] Survey")],
    ("2.0.14", "04"): [("d7bdd932", 3, [], 0, "Run and fix the greeter app"), ("8111fb16", 4, [], 0, "[[scn:h_r1]]")],
    ("2.0.14", "05"): [("b8ef1524", 3, [], 0, "OK")],
    ("2.0.77", "01"): [("16235104", 1, [], 3, "[[scn:h_tools]] Look around")],
    ("2.0.77", "02"): [("460cddc9", 1, ["general-purpose", "Explore"], 3, "[[scn:h_subagents]] Survey")],
    ("2.0.77", "03"): [("b41cf4db", 1, ["general-purpose"], 3, "[[scn:h_bg]] Count")],
    ("2.0.77", "04"): [
        ("0632a4a2", 4, [], 3, "[[scn:h_r1]]"),
        ("ed0c4573", 3, [], 6, "[[scn:h_r1]]"),
        ("dd62b345", 0, [], 3, ""),
    ],
    ("2.0.77", "05"): [("efdf62c5", 3, [], 12, "[[scn:h_c1]] Read the util module.")],
    ("2.1.50", "02"): [("e5e3e549", 1, ["general-purpose", "Explore"], 0, "[[scn:h_subagents]] Survey")],
    ("2.1.105", "02"): [("0ddfbe37", 1, ["general-purpose", "Explore"], 0, "Parallel source survey")],
    ("2.1.105", "06"): [("c1e3df0c", 1, [], 0, "Greeting app check")],
    ("2.1.332", "02"): [("01b3170c", 1, ["general-purpose", "general-purpose", "Explore"], 0, "[[scn:h_subagents]]")],
    ("2.1.332", "06"): [("f11da690", 1, [], 0, "Greeting app check")],
}


@pytest.mark.parametrize("version,scenario", sorted(EXPECTED), ids=lambda x: x)
def test_sessions_sub_agents_prompts_and_titles(version, scenario):
    h = claude_huddle(cfg(version, scenario))
    rows = listed(h)
    want = EXPECTED[(version, scenario)]
    assert len(rows) == len(want), sorted(rows)
    for prefix, prompts, types, quiet, title in want:
        row = by_prefix(rows, prefix)
        s = h.session(row["id"])
        subs = [a for a in row["agents"] if a["parent"] and not a["quiet"]]
        assert s.counts.get(ev.PROMPT, 0) == prompts
        assert sorted(a["type"] for a in subs) == sorted(types)
        assert sum(1 for a in row["agents"] if a["parent"] and a["quiet"]) == quiet
        assert row["title"].startswith(title) and (title or not row["title"])


@pytest.mark.parametrize("version", ["1.0.128", "2.0.14"])
def test_inline_sidechains_are_sub_agents_of_their_task_call(version):
    h = claude_huddle(cfg(version, "02"))
    (s,) = h.sessions()
    lead = s.lead
    calls = [e for e in s.events if e.kind == ev.ORDER and e.agent == lead.id]
    subs = [a for a in s.agents.values() if a.id != lead.id]
    assert len(calls) == 2 and len(subs) == 2
    for a in subs:
        order = next(e for e in calls if e.id == a.tool_use_id)
        assert a.parent == lead.id and order.target == a.id
        assert a.order == order.text  # the sidechain's first user text is its order
        assert a.report and a.usage.total > 0
        own = [e for e in s.events if e.agent == a.id]
        assert {e.kind for e in own} >= {ev.TOOL_CALL, ev.TOOL_RESULT, ev.SAY, ev.USAGE}
    # the lead keeps only its own: no sub-agent tool call, no order read as a prompt
    assert [e.text[:20] for e in s.events if e.kind == ev.PROMPT] == ["[[scn:h_subagents]] "]
    assert not [e for e in s.events if e.kind == ev.TOOL_CALL and e.agent == lead.id and e.name in ("Read", "Bash")]
    detail = api.session_detail(h, s.id)
    assert [d["depth"] for d in detail["tree"]] == [0, 1, 1]


def test_project_level_agent_files_join_their_parent_and_its_task_call():
    h = claude_huddle(cfg("2.0.77", "02"))
    (s,) = h.sessions()  # the agent files are not sessions of their own
    subs = {a.id: a for a in s.agents.values() if a.id != s.lead_id}
    assert len(subs) == 5
    asked = {i: a for i, a in subs.items() if not a.quiet}
    assert sorted(asked) == ["a161a82", "a9b4f02"]
    for a in asked.values():
        order = next(e for e in s.events if e.kind == ev.ORDER and e.id == a.tool_use_id)
        assert order.target == a.id and a.report and a.order.startswith("[[scn:h_sub_")
    warm = [a for a in subs.values() if a.quiet]
    assert len(warm) == 3 and all(a.kind == "warmup" and a.usage.total > 0 for a in warm)


def test_a_warm_up_agent_written_without_its_order_is_quiet_too(tmp_path):
    # 2.0.4x writes some pre-warm agent files with no "Warmup" record: only the greeting
    config = tmp_path / "config"
    shutil.copytree(cfg("2.0.77", "02"), config)
    warm = []
    for p in config.glob("projects/*/agent-*.jsonl"):
        lines = p.read_bytes().splitlines(keepends=True)
        if json.loads(lines[0])["message"]["content"] == "Warmup":
            p.write_bytes(b"".join(lines[1:]))
            warm.append(p.stem[len("agent-") :])
    assert len(warm) == 3
    (s,) = claude_huddle(config).sessions()
    assert {a.id for a in s.agents.values() if a.quiet} == set(warm)
    assert all(s.agents[w].name == "warm-up" and s.agents[w].usage.total > 0 for w in warm)
    assert sorted(a.id for a in s.agents.values() if not a.quiet and a.id != s.lead_id) == ["a161a82", "a9b4f02"]


def test_an_agent_file_whose_parent_is_absent_is_one_orphan_session(tmp_path):
    config = tmp_path / "config"
    shutil.copytree(cfg("2.0.77", "02"), config)
    (main,) = [p for p in config.glob("projects/*/*.jsonl") if not p.name.startswith("agent-")]
    parent = main.stem
    main.unlink()
    h = claude_huddle(config)
    rows = listed(h)
    assert len(rows) == 5 and all(r["id"].startswith("agent-") for r in rows.values())
    assert {r["parent_session"] for r in rows.values()} == {parent}
    assert all(s.error is None for s in h.sessions())
    # all of an orphan's records are its own agent's (they are isSidechain-marked, yet no
    # inline sidechain): one agent, titled by its order, counting its own file
    for s in h.sessions():
        assert list(s.agents) == [s.lead_id] and s.lead.usage.total > 0
        assert usage4(s.usage) == total(largest_per_id(h.handle(s.key).files()))
    titles = [r["title"] for r in rows.values()]
    assert titles.count("Warmup") == 3
    assert sum(t.startswith("[[scn:h_sub_") for t in titles) == 2


def test_summaries_title_the_session_holding_their_leaf_never_another():
    h = claude_huddle(cfg("1.0.128", "05"))
    rows = listed(h)
    assert len(rows) == 1  # three summary-only files: off the board
    for s in h.sessions():
        if s.id not in rows:
            assert not s.has_conversation
            detail = api.session_detail(h, s.id)  # still readable by id
            assert detail["empty"] is True and detail["title"] == ""
    h = claude_huddle(cfg("2.0.14", "04"))
    titles = {r["id"][:8]: r["title"] for r in listed(h).values()}
    # the fork's file opens with a summary of the original's conversation: not the fork's title
    assert titles == {"d7bdd932": "Run and fix the greeter app", "8111fb16": "[[scn:h_r1]] Run the app."}


def test_task_before_2_1_105_and_agent_after_both_start_sub_agents():
    for version, tool in (("2.1.50", "Task"), ("2.1.105", "Agent")):
        (s,) = claude_huddle(cfg(version, "02")).sessions()
        orders = [e for e in s.events if e.kind == ev.ORDER and e.agent == s.lead_id]
        (f,) = cfg(version, "02").glob("projects/*/*.jsonl")
        assert f'"name":"{tool}"' in f.read_text()
        assert len(orders) == 2 and all(e.target in s.agents for e in orders)


def write(tmp_path, records: list[dict]) -> Huddle:
    proj = tmp_path / "config" / "projects" / "-p"
    proj.mkdir(parents=True, exist_ok=True)
    (proj / "0b0e8a3c-0000-4000-8000-000000000001.jsonl").write_text(
        "".join(json.dumps(r, separators=(",", ":")) + "\n" for r in records)
    )
    return claude_huddle(tmp_path / "config")


def user(content, **kw) -> dict:
    return {"type": "user", "timestamp": "2025-06-01T10:00:00Z", "message": {"role": "user", "content": content}, **kw}


def test_ide_blocks_go_to_the_context_lane_and_an_image_with_text_is_one_prompt(tmp_path):
    h = write(
        tmp_path,
        [
            user(
                [
                    {
                        "type": "text",
                        "text": "<ide_opened_file>The user opened the file /w/app.py in the IDE.</ide_opened_file>",
                    },
                    {"type": "text", "text": "Why does this fail?"},
                ]
            ),
            user([{"type": "text", "text": "<ide_selection>lines 3 to 4 of /w/app.py</ide_selection>Fix this"}]),
            user(
                [{"type": "image", "source": {"type": "base64", "data": "AAAA"}}, {"type": "text", "text": "See this"}]
            ),
            user("<ide_opened_file>only the file</ide_opened_file>"),
        ],
    )
    (s,) = h.sessions()
    assert [e.text for e in s.events if e.kind == ev.PROMPT] == [
        "Why does this fail?",
        "Fix this",
        "See this\n\n[image]",
    ]
    ctx = [(e.name, e.text) for e in s.events if e.kind == ev.CONTEXT]
    assert ctx == [
        ("ide_opened_file", "The user opened the file /w/app.py in the IDE."),
        ("ide_selection", "lines 3 to 4 of /w/app.py"),
        ("ide_opened_file", "only the file"),
    ]
    assert s.title == "Why does this fail?"


def test_sessions_with_no_conversation_are_off_the_board_but_readable(tmp_path):
    proj = tmp_path / "config" / "projects" / "-p"
    proj.mkdir(parents=True)
    (proj / "00000000-0000-4000-8000-00000000000a.jsonl").write_bytes(b"")
    (proj / "00000000-0000-4000-8000-00000000000b.jsonl").write_text(
        json.dumps({"type": "file-history-snapshot", "messageId": "x", "snapshot": {}}) + "\n"
    )
    (proj / "00000000-0000-4000-8000-00000000000c.jsonl").write_text(
        json.dumps({"type": "summary", "summary": "Elsewhere", "leafUuid": "nowhere"}) + "\n"
    )
    h = claude_huddle(tmp_path / "config")
    assert len(h.sessions()) == 3 and as_json(board_json(h))["sessions"] == []
    for s in h.sessions():
        assert api.session_detail(h, s.id)["empty"] is True
    assert report(h)["totals"]["total_tokens"] == 0


def test_a_negative_count_is_a_bad_line_never_a_negative_cost(tmp_path):
    good = {"input_tokens": 5, "output_tokens": 7}
    h = write(
        tmp_path,
        [
            user("hello"),
            {"type": "assistant", "message": {"id": "m1", "model": "claude-sonnet-4-5", "usage": good, "content": []}},
            {
                "type": "assistant",
                "message": {"id": "m2", "model": "claude-sonnet-4-5", "usage": {"output_tokens": -40}, "content": []},
            },
            {
                "type": "assistant",
                "message": {"id": "m3", "model": "claude-sonnet-4-5", "usage": {"input_tokens": 1.5}},
            },
        ],
    )
    (s,) = h.sessions()
    assert s.skipped_lines == 2 and s.usage.to_dict() == {"input": 5, "output": 7, "cache_read": 0, "cache_write": 0}
    assert all(":" in p and p.split(":")[1].isdigit() for p in s.problems)
    assert listed(h)[s.id]["cost"]["usd"] > 0


def test_a_usage_only_read_says_a_bad_response_as_a_full_read_does(tmp_path):
    """A usage-only read decodes a response for the fields it uses (records.Response); a
    line that does not decode so is decoded whole, so its problem is the full read's."""

    def response(mid: str, **message) -> dict:
        m = {"id": mid, "role": "assistant", "model": "claude-sonnet-4-5", "usage": {"input_tokens": 5}, "content": []}
        return {"type": "assistant", "timestamp": "2025-06-01T10:00:01.250Z", "message": {**m, **message}}

    records = [
        user("hello"),
        response("m1"),
        response("m2", usage={"output_tokens": -40}),
        response("m3", model=7),
        response("m4", content=[{"type": "tool_use", "id": "c1", "name": 5}]),
        {"type": "assistant", "message": "not one"},
        response("m5", content=[{"type": "text", "text": "done"}]),
    ]
    (full,) = write(tmp_path, records).sessions()
    (quick,) = usage_only(tmp_path / "config").sessions()
    assert quick.problems == full.problems and quick.skipped_lines == full.skipped_lines == 4
    assert quick.usage == full.usage and full.usage.input == 10 and quick.updated_at == full.updated_at


LIVE = [cfg("1.0.128", "02"), cfg("2.0.14", "01"), cfg("2.0.77", "02"), cfg("1.0.128", "04")]


def digest(h):
    out = []
    for s in h.sessions():
        if not s.has_conversation and s.started_at is None:
            continue
        evs = sorted((e.kind, e.agent, e.id, e.text, e.target, e.usage, e.counted_in) for e in s.events)
        agents = sorted((a.id, a.parent, a.kind, a.quiet, a.report, a.usage) for a in s.agents.values())
        out.append((s.id, s.title, s.usage, evs, agents))
    return sorted(out, key=repr)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    which=st.integers(0, len(LIVE) - 1),
    steps=st.lists(st.tuples(st.integers(0, 20), st.floats(0, 1), st.booleans()), max_size=30),
)
def test_appending_in_random_pieces_gives_the_same_sessions(tmp_path_factory, which, steps):
    src = LIVE[which]
    dst = tmp_path_factory.mktemp("live") / "config"
    shutil.copytree(src, dst)
    h = grow_in_pieces(dst, steps)
    assert digest(h) == digest(claude_huddle(src))


def test_a_record_that_names_no_type_is_what_its_message_says(tmp_path):
    # other tools' fixtures leave out "type": the message's role still says what it is
    rec = {"timestamp": "2026-01-09T10:00:00Z", "sessionId": "s", "message": {"role": "assistant", "id": "m1"}}
    rec["message"]["usage"] = {"input_tokens": 100, "output_tokens": 50}
    h = write(tmp_path, [rec])
    (s,) = h.sessions()
    assert s.usage.to_dict() == {"input": 100, "output": 50, "cache_read": 0, "cache_write": 0}
    counted, _notes = counted_from_index(h.settings, current())  # what `huddle usage` reads (usage only)
    assert aggregate(counted)["totals"]["total_tokens"] == 150
