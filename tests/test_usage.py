"""`huddle usage` on the real Claude samples: totals against the records themselves,
sub-agents included, fork copies counted once, grouping, --since, and the CLI."""

from __future__ import annotations

import json
import math
import shutil
from fractions import Fraction
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers import claude_huddle
from huddle.cli import main
from huddle.core import Huddle, Keeper, WholeMode
from huddle.cost.pricing import load
from huddle.model.events import USAGE, Event, Usage
from huddle.model.session import Session
from huddle.model.times import parse_time
from huddle.usage.report import GROUPS, counted_usage, report
from huddle.views.when import parse_since
from said import as_json

CLAUDE = Path(__file__).parent / "fixtures" / "samples" / "claude"
SCENARIOS = sorted(p.name for p in CLAUDE.iterdir() if (p / "config").is_dir())
TOKENS = ("input", "output", "cache_read", "cache_write")


def raw_responses(config: Path, files=None) -> dict[str, dict]:
    """Usage straight from the transcripts: one entry per message.id (every content
    block of a response repeats the same final usage), first seen wins."""
    out: dict[str, dict] = {}
    for f in files or sorted(config.glob("projects/**/*.jsonl")):
        for line in f.read_bytes().splitlines():
            d = json.loads(line)
            m = d.get("message") if d.get("type") == "assistant" else None
            if not m or not m.get("id") or not m.get("usage") or m["id"] in out:
                continue
            u = m["usage"]
            out[m["id"]] = {
                "input": u.get("input_tokens") or 0,
                "output": u.get("output_tokens") or 0,
                "cache_read": u.get("cache_read_input_tokens") or 0,
                "cache_write": u.get("cache_creation_input_tokens") or 0,
                "t": parse_time(d.get("timestamp")),
                "model": m.get("model"),
            }
    return out


def summed(responses) -> dict[str, int]:
    return {k: sum(r[k] for r in responses) for k in TOKENS}


def tokens(row: dict) -> dict[str, int]:
    return {k: row[k] for k in TOKENS}


@pytest.mark.parametrize("name", SCENARIOS)
def test_totals_equal_the_records_counted_once_per_response(name):
    config = CLAUDE / name / "config"
    raw = raw_responses(config)
    data = report(claude_huddle(config))
    assert tokens(data["totals"]) == summed(raw.values())
    assert data["totals"]["responses"] == len(raw)
    for by in GROUPS:  # every grouping adds up to the same totals
        rows = report(claude_huddle(config), by=by)["rows"]
        assert summed(rows) == tokens(data["totals"]), by


def test_fork_copies_are_not_counted_again():
    config = CLAUDE / "04-resume-continue-fork" / "config"
    proj = next((config / "projects").iterdir())
    original = proj / "4ca800ee-fc00-4bfc-aeab-426576b25ac2.jsonl"
    fork = proj / "dc76988d-8232-412a-a35d-7f14774c557b.jsonl"
    in_original = raw_responses(config, [original])
    in_fork = raw_responses(config, [fork])
    copied = in_original.keys() & in_fork.keys()
    assert copied, "the fork file carries the original's responses"
    rows = {r["session"]: r for r in report(claude_huddle(config), by="session")["rows"]}
    # The fork is charged only for the responses its own process made.
    own = [r for mid, r in in_fork.items() if mid not in copied]
    assert own
    assert tokens(rows["dc76988d-8232-412a-a35d-7f14774c557b"]) == summed(own)
    assert tokens(rows["4ca800ee-fc00-4bfc-aeab-426576b25ac2"]) == summed(in_original.values())
    naive = summed(list(in_original.values()) + list(in_fork.values()))
    total = report(claude_huddle(config))["totals"]
    assert total["cache_read"] < naive["cache_read"]  # counting the copies would inflate it
    assert tokens(total) == summed(raw_responses(config).values())


@pytest.mark.parametrize("name", ["02-subagents", "12-nested-and-custom-agents"])
def test_sub_agents_are_included_by_type(name):
    config = CLAUDE / name / "config"
    sub_files = sorted(config.glob("projects/*/*/subagents/**/agent-*.jsonl"))
    assert sub_files
    in_subs = raw_responses(config, sub_files)
    rows = report(claude_huddle(config), by="agent")["rows"]
    subs = [r for r in rows if r["agent"] != "lead"]
    assert subs and all(r["source"] == "claude" for r in subs)
    assert summed(subs) == summed(in_subs.values())
    types = {json.loads(p.read_text())["agentType"] for p in config.glob("projects/*/*/subagents/**/*.meta.json")}
    assert {r["agent"] for r in subs} == types


def test_nested_agent_types_are_rows_of_their_own():
    rows = report(claude_huddle(CLAUDE / "12-nested-and-custom-agents" / "config"), by="agent")["rows"]
    keys = [r["key"] for r in rows]
    assert "claude:lead" in keys and "claude:reviewer" in keys  # the custom agent type
    assert len(keys) == len(set(keys))


def test_cost_of_sonnet_matches_ccusage_and_the_price_list():
    # ccusage 20.0.24 `daily --json --offline` on this config: totalCost 0.13129934999999998.
    config = CLAUDE / "01-basic-tools" / "config"
    data = report(claude_huddle(config))
    raw = summed(raw_responses(config).values())
    by_hand = (raw["input"] * 3 + raw["output"] * 15 + raw["cache_read"] * 0.3 + raw["cache_write"] * 3.75) / 1e6
    assert data["totals"]["cost_usd"] == pytest.approx(by_hand, abs=1e-6)
    assert data["totals"]["cost_usd"] == pytest.approx(0.13129934999999998, abs=1e-6)
    assert data["unpriced"] == []


def test_opus_5_5_is_priced_from_the_published_rates():
    # ccusage 20.0.24 --offline lists claude-opus-5-5 as unpriced (cost 0): its LiteLLM
    # snapshot predates the model. Anthropic publishes $4 in / $20 out / $0.20 cache
    # read / $5 5-minute cache write per million tokens; huddle's total is that price.
    config = CLAUDE / "02-subagents" / "config"
    raw = summed(raw_responses(config).values())
    data = report(claude_huddle(config))
    by_hand = (raw["input"] * 4 + raw["output"] * 20 + raw["cache_read"] * 0.2 + raw["cache_write"] * 5) / 1e6
    assert data["totals"]["cost_usd"] == pytest.approx(by_hand, abs=1e-6)
    assert data["totals"]["models"] == ["claude-opus-5-5"]


def _rename_model(src: Path, dst: Path, old: str, new: str) -> None:
    shutil.copytree(src, dst)
    for f in dst.glob("projects/**/*.jsonl"):
        f.write_text(f.read_text().replace(f'"model":"{old}"', f'"model":"{new}"'))


def test_unknown_models_are_listed_unpriced_not_guessed(tmp_path):
    config = tmp_path / "config"
    _rename_model(CLAUDE / "01-basic-tools" / "config", config, "claude-sonnet-4-5", "claude-sonnet-4-5-turbo-x")
    shutil.copytree(CLAUDE / "02-subagents" / "config" / "projects", config / "projects", dirs_exist_ok=True)
    data = report(claude_huddle(config), by="model")
    rows = {r["key"]: r for r in data["rows"]}
    assert rows["claude-sonnet-4-5-turbo-x"]["cost_usd"] is None
    assert rows["claude-opus-5-5"]["cost_usd"] > 0
    assert data["totals"]["unpriced"] == ["claude-sonnet-4-5-turbo-x"]
    assert data["unpriced"] == [
        {"model": "claude-sonnet-4-5-turbo-x", "tokens": rows["claude-sonnet-4-5-turbo-x"]["total_tokens"]}
    ]
    # the total cost is the priced part only
    assert data["totals"]["cost_usd"] == pytest.approx(rows["claude-opus-5-5"]["cost_usd"], abs=1e-6)


def test_since_keeps_usage_at_or_after_the_time():
    config = CLAUDE / "04-resume-continue-fork" / "config"
    raw = raw_responses(config)
    times = sorted({r["t"] for r in raw.values()})
    cut = times[len(times) // 2]
    kept = [r for r in raw.values() if r["t"] >= cut]
    assert 0 < len(kept) < len(raw)
    data = report(claude_huddle(config), since=cut)
    assert tokens(data["totals"]) == summed(kept)
    assert data["since"] is not None
    assert report(claude_huddle(config), since=parse_since("2026-12-01"))["rows"] == []
    assert tokens(report(claude_huddle(config), since=parse_since("2026-11-30"))["totals"]) == summed(raw.values())


def test_since_accepts_dates_and_iso_times():
    assert parse_since("2026-11-30") == parse_time("2026-11-30T00:00:00Z")
    assert parse_since("20261130") == parse_since("2026-11-30")
    assert parse_since("2026-11-30T03:04:10Z") == parse_time("2026-11-30T03:04:10.000Z")
    assert parse_since("2026-11-30T04:04:10+01:00") == parse_time("2026-11-30T03:04:10Z")
    assert parse_since("yesterday") is None


def test_day_rows_are_utc_dates():
    rows = report(claude_huddle(CLAUDE / "10-interactive-tmux" / "config"), by="day")["rows"]
    assert [r["key"] for r in rows] == ["2026-11-30"]


def test_report_is_plain_json_data():
    data = report(claude_huddle(CLAUDE / "02-subagents" / "config"), by="session")
    assert json.loads(json.dumps(data)) == data
    assert data["pricing"]["as_of"] == load().as_of


# -- the command line ------------------------------------------------------------


@pytest.fixture
def claude_env(monkeypatch):
    def use(name: str) -> Path:
        config = CLAUDE / name / "config"
        monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(config))
        return config

    return use


@pytest.mark.parametrize("by", GROUPS)
def test_cli_json_is_exactly_the_library_report(claude_env, by):
    claude_env("12-nested-and-custom-agents")
    res = CliRunner().invoke(main, ["usage", "--json", "--by", by, "--since", "2026-11-30"])
    assert res.exit_code == 0, res.output
    h = Huddle()
    h.refresh()
    expected = report(h, by=by, since=parse_since("2026-11-30"))
    assert json.loads(res.stdout) == json.loads(json.dumps(expected))


def test_cli_table_shows_totals_prices_date_and_unpriced(claude_env, tmp_path, monkeypatch):
    config = tmp_path / "config"
    _rename_model(CLAUDE / "01-basic-tools" / "config", config, "claude-sonnet-4-5", "claude-nova-1")
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(config))
    res = CliRunner().invoke(main, ["usage", "--by", "model"], env={"COLUMNS": "120"})
    assert res.exit_code == 0, res.output
    assert "claude-nova-1" in res.stdout
    assert "unpriced, not in the cost: claude-nova-1" in res.stdout
    assert f"prices as of {load().as_of}" in res.stdout
    assert "total" in res.stdout


def test_cli_session_titles_are_shown_as_text_not_markup(claude_env):
    claude_env("01-basic-tools")
    res = CliRunner().invoke(main, ["usage", "--by", "session"], env={"COLUMNS": "160"})
    assert res.exit_code == 0, res.output
    assert "[[scn:basic]]" in res.stdout  # rich would eat "[scn:basic]" as a style tag


def test_a_report_asked_again_is_kept_until_the_core_moves(tmp_path):
    """The route's report (a page asks whenever it opens) is added up once per change of
    the core and question, not per request: the same rows while nothing moved, a
    response appended counted in the next."""
    config = tmp_path / "config"
    shutil.copytree(CLAUDE / "01-basic-tools" / "config", config)
    h = claude_huddle(config)
    first, again = report(h), report(h)
    assert first == again and first["rows"] is again["rows"]  # kept, each answer its own dict
    assert report(h, by="model")["rows"] is not first["rows"]  # another question: its own
    f = next(config.glob("projects/*/*.jsonl"))
    line = next(x for x in f.read_text().splitlines() if '"type":"assistant"' in x and '"usage"' in x)
    rec = json.loads(line)
    rec["message"]["id"] = "msg_one_more"
    rec["uuid"] = "5e550000-0000-4000-8000-00000000beef"
    with f.open("a") as out:
        out.write(json.dumps(rec, separators=(",", ":")) + "\n")
    h.refresh()
    moved = report(h)
    assert moved["totals"]["responses"] == first["totals"]["responses"] + 1


def _report(by: str, counts: list[tuple[str, int]]) -> dict:
    """A report as `usage --json` says it: a row per (label, count), every count alike."""

    def row(key: str, n: int) -> dict:
        return {
            "key": key,
            "source": "claude",
            "session": key,
            "title": key,
            "input": n,
            "output": n // 7,
            "cache_read": n * 50,
            "cache_write": n * 2,
            "total_tokens": n * 53 + n // 7,
            "cost_usd": n / 1e5,
            "unpriced": [],
        }

    rows = [row(k, n) for k, n in counts]
    return {
        "by": by,
        "rows": rows,
        "totals": row("total", sum(n for _, n in counts)),
        "pricing": {"as_of": "2026-11-30"},
        "unpriced": [],
        "counted": {"duplicates_skipped": 0},
    }


def test_an_80_column_report_of_a_long_history_keeps_every_column():
    """Two years of cache reads run to billions: exact, they pushed the cost off an
    80-column terminal (rich's Table cut the columns that did not fit); short counts
    keep every column, and a wide terminal still gets the exact ones."""
    import io

    from rich.cells import cell_len
    from rich.console import Console

    from huddle.cli.usage import print_report

    data = _report("day", [("2025-06-08", 104_512_118), ("2025-06-10", 2_024)])
    for width, exact in ((80, False), (140, True)):
        buf = io.StringIO()
        print_report(data, Console(file=buf, width=width))
        lines = buf.getvalue().splitlines()
        assert lines[0].split() == ["day", "input", "output", "cache", "read", "cache", "write", "total", "cost"]
        assert lines[1].split()[0] == "2025-06-08" and lines[1].split()[-1] == "$1,045.12"
        assert lines[3].startswith("total") and lines[3].split()[-1] == "$1,045.14"
        assert ("5,225,707,100" in lines[3]) is exact and ("5225.71M" in lines[3]) is not exact
        assert max(cell_len(x) for x in lines) <= width


@settings(max_examples=100, deadline=None)
@given(
    by=st.sampled_from(["session", "day", "model", "project"]),
    counts=st.lists(
        st.tuples(
            st.text(st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")), max_size=80), st.integers(0, 10**11)
        ),
        min_size=1,
        max_size=5,
    ),
    width=st.integers(40, 200),
)
def test_the_report_is_what_rich_would_draw(by, counts, width):
    """Where its columns fit, the report's lines are what rich's Table drew, character
    for character (a history's 2,100 sessions took it 1.5 s)."""
    import io

    from rich.console import Console

    from huddle.cli.table import Drawn, fits
    from huddle.cli.usage import _wrapped, laid_out

    columns, rows = laid_out(_report(by, counts), width)
    if fits(columns, width):
        printed = []
        for renderable in (Drawn(columns, rows), _wrapped(columns, rows)):
            buf = io.StringIO()
            Console(file=buf, width=width).print(renderable)
            printed.append(buf.getvalue())
        assert printed[0] == printed[1]


def test_cli_rejects_a_bad_since_in_one_line(claude_env):
    claude_env("01-basic-tools")
    res = CliRunner().invoke(main, ["usage", "--since", "last tuesday"])
    assert res.exit_code == 2
    assert "bad since: 'last tuesday' (30m, 2h, 3d, 1w, YYYY-MM-DD" in res.stderr and "Traceback" not in res.output


def test_cli_broken_user_pricing_file_names_file_and_line(claude_env, tmp_path, monkeypatch):
    claude_env("01-basic-tools")
    home = tmp_path / "hh"
    home.mkdir()
    monkeypatch.setenv("HUDDLE_HOME", str(home))
    bad = home / "pricing.json"
    bad.write_text('{\n  "models": {\n    "claude-sonnet-4-5": {"input": 3, "output": 15,}\n  }\n}\n')
    res = CliRunner().invoke(main, ["usage"])
    assert res.exit_code == 1
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith(f"huddle: {bad}:3: not valid JSON")
    assert res.stdout == ""


def test_cli_user_pricing_file_overrides_a_model(claude_env, tmp_path, monkeypatch):
    config = claude_env("01-basic-tools")
    home = tmp_path / "hh"
    home.mkdir()
    monkeypatch.setenv("HUDDLE_HOME", str(home))
    (home / "pricing.json").write_text(
        json.dumps(
            {
                "as_of": "2026-12-01",
                "models": {"claude-sonnet-4-5": {"input": 1, "output": 1, "cache_read": 1, "cache_write": 1}},
            }
        )
    )
    res = CliRunner().invoke(main, ["usage", "--json"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert data["totals"]["cost_usd"] == pytest.approx(data["totals"]["total_tokens"] / 1e6, abs=1e-6)
    assert data["pricing"]["user_file"] == str(home / "pricing.json")
    assert data["pricing"]["user_as_of"] == "2026-12-01"
    assert tokens(data["totals"]) == summed(raw_responses(config).values())


def _one_hour_config(tmp_path: Path) -> Path:
    """A real transcript whose cache writes were all made with the 1-hour TTL."""
    config = tmp_path / "config"
    shutil.copytree(CLAUDE / "02-subagents" / "config", config)
    for f in config.glob("projects/**/*.jsonl"):
        lines = []
        for line in f.read_text().splitlines():
            d = json.loads(line)
            u = (d.get("message") or {}).get("usage") if d.get("type") == "assistant" else None
            if u:
                n = u.get("cache_creation_input_tokens") or 0
                u["cache_creation"] = {"ephemeral_5m_input_tokens": 0, "ephemeral_1h_input_tokens": n}
                line = json.dumps(d, separators=(",", ":"))
            lines.append(line)
        f.write_text("\n".join(lines) + "\n")
    return config


def test_one_hour_cache_writes_cost_twice_input_and_survive_the_cache(tmp_path):
    config = _one_hour_config(tmp_path)
    raw = summed(raw_responses(config).values())
    settings = dict(folders={"claude": str(config)}, huddle_home=str(tmp_path / "hh"))
    from huddle.sources import Settings

    cold = Huddle(Settings(**settings), keep=Keeper(WholeMode()))
    cold.refresh()
    warm = Huddle(Settings(**settings), keep=Keeper(WholeMode()))  # sessions come back from huddle's cache
    warm.refresh()
    assert all(not s.complete for s in warm.sessions())
    by_hand = (raw["input"] * 4 + raw["output"] * 20 + raw["cache_read"] * 0.2 + raw["cache_write"] * 8) / 1e6
    for h in (cold, warm):
        data = report(h, by="session")
        assert data["totals"]["cache_write_1h"] == raw["cache_write"]
        assert data["totals"]["cost_usd"] == pytest.approx(by_hand, abs=1e-6)
    assert report(cold, by="agent") == report(warm, by="agent")


def _usage_session(source: str, sid: str, t0: float, ids: list[str]) -> Session:
    s = Session(source, sid)
    s.agent(sid, parent=None)
    for i, rid in enumerate(ids):
        s.add(Event(kind=USAGE, agent=sid, t=t0 + i, id=rid, name="gpt-5.5", usage=Usage(input=10, output=1)))
    return s


def test_a_response_in_two_sessions_counts_once_in_the_older_one():
    older = _usage_session("codex", "a", 100.0, ["resp_1", "resp_2"])
    newer = _usage_session("codex", "b", 200.0, ["resp_2", "resp_3"])
    other_source = _usage_session("vibe", "c", 300.0, ["resp_2"])
    stats: dict = {}
    got = [(s.id, e.id) for s, e in counted_usage([newer, other_source, older], stats=stats)]
    assert got == [("a", "resp_1"), ("a", "resp_2"), ("b", "resp_3"), ("c", "resp_2")]
    assert stats["duplicates"] == 1


def test_inside_one_session_every_usage_event_counts():
    # e.g. a source that emits each growth of a session's running total under one id
    s = _usage_session("vibe", "v", 100.0, ["stats-v", "stats-v", "stats-v"])
    assert len(list(counted_usage([s]))) == 3
    assert sum(e.usage.input for _, e in counted_usage([s])) == s.model_usage["gpt-5.5"].input


# -- the index `huddle usage` keeps between runs ----------------------------------


def _aged_copy(src: Path, dst: Path, age: float = 3600.0) -> Path:
    """A copy of a sample config whose files and folders last moved an hour ago."""
    shutil.copytree(src, dst)
    import os
    import time

    then = time.time() - age
    for p in sorted(dst.rglob("*"), key=lambda p: -len(p.parts)) + [dst]:
        os.utime(p, (then, then))
    return dst


def _usage_json(args=()) -> dict:
    res = CliRunner().invoke(main, ["usage", "--json", *args])
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)


def _edit_index(home: Path, factor: int) -> None:
    """Multiply what the index says each session counted (its per-day sums)."""
    import marshal
    import sqlite3
    import zlib

    db = sqlite3.connect(home / "cache" / "usage.db")
    for key, row in db.execute("SELECT key, row FROM entries WHERE row IS NOT NULL").fetchall():
        r = marshal.loads(row)
        for g in r.get("groups", ()):
            g[3] *= factor  # input tokens
        rb = marshal.dumps(r)
        db.execute("UPDATE entries SET row=?, row_crc=? WHERE key=?", (rb, zlib.crc32(rb), key))
    db.commit()
    db.close()


def test_a_second_run_reads_the_index_and_a_moved_file_is_read_again(tmp_path, monkeypatch):
    config = _aged_copy(CLAUDE / "02-subagents" / "config", tmp_path / "config")
    home = tmp_path / "hh"
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(config))
    monkeypatch.setenv("HUDDLE_HOME", str(home))
    first = _usage_json(["--by", "session"])
    _edit_index(home, 1000)  # what the index says is what a run that reads nothing reports
    inflated = _usage_json(["--by", "session"])
    assert inflated["totals"]["input"] == first["totals"]["input"] * 1000
    sub = next(config.glob("projects/*/*/subagents/agent-*.jsonl"))
    moved = f"claude:{sub.parent.parent.name}"
    with open(sub, "a") as f:  # a session file moved: that session is read again, the others are not
        f.write("\n")
    again = {r["key"]: r for r in _usage_json(["--by", "session"])["rows"]}
    for want in first["rows"]:
        factor = 1 if want["key"] == moved else 1000
        assert again[want["key"]]["input"] == want["input"] * factor
    library = json.loads(json.dumps(report(claude_huddle(config), by="session")))
    assert library["rows"] == first["rows"]


def _tangled(home: Path) -> set[str]:
    """The sessions the index marks as sharing responses with others."""
    import marshal
    import sqlite3

    db = sqlite3.connect(home / "cache" / "usage.db")
    heads = {key: marshal.loads(head) for key, head in db.execute("SELECT key, head FROM entries")}
    db.close()
    return {k for k, h in heads.items() if h.get("entangled")}


def _respond(path: Path, rid: str) -> None:
    """One more model response at the end of a transcript, compact as Claude Code writes it."""
    usage = {"input_tokens": 3, "output_tokens": 5, "cache_read_input_tokens": 7, "cache_creation_input_tokens": 0}
    message = {"id": rid, "type": "message", "role": "assistant", "model": "claude-sonnet-4-5", "usage": usage}
    message.update(content=[{"type": "text", "text": "more"}], stop_reason="end_turn")
    rec = {"type": "assistant", "sessionId": path.stem, "uuid": f"u-{rid}", "timestamp": "2026-11-30T12:00:00.000Z"}
    with open(path, "a") as f:
        f.write(json.dumps({**rec, "message": message}, separators=(",", ":")) + "\n")


@pytest.mark.parametrize("version", ["1.0.128", "2.0.77", "2.1.50"])
def test_sessions_that_share_responses_sleep_together_and_wake_together(tmp_path, monkeypatch, version):
    """A resumed or forked session holds copies of its parent's responses (each counts
    once, where it was made). While none of them moves, the index answers for all of
    them; when one moves, all of them are read again, and each shared response still
    counts once, as a fresh count says."""
    scenario = CLAUDE.parent / "claude-history" / version / "04-resume-continue-fork" / "config"
    config = _aged_copy(scenario, tmp_path / "config")
    home = tmp_path / "hh"
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(config))
    monkeypatch.setenv("HUDDLE_HOME", str(home))
    first = {r["key"]: r for r in _usage_json(["--by", "session"])["rows"]}
    tangled = _tangled(home)
    assert len(tangled) >= 2
    _edit_index(home, 1000)
    inflated = {r["key"]: r for r in _usage_json(["--by", "session"])["rows"]}
    assert all(inflated[k]["input"] == first[k]["input"] * 1000 for k in first)  # none was read
    one = sorted(tangled)[0].split(":", 1)[1]
    _respond(next(config.glob(f"projects/*/{one}.jsonl")), "msg_more")
    again = {r["key"]: r for r in _usage_json(["--by", "session"])["rows"]}
    monkeypatch.setenv("HUDDLE_HOME", str(tmp_path / "fresh"))
    fresh = {r["key"]: r for r in _usage_json(["--by", "session"])["rows"]}
    for k in fresh:
        if k in tangled:  # read again, every one of them
            assert again[k] == fresh[k]
        else:  # (nothing they hold is shared: still the index's)
            assert again[k]["input"] == first[k]["input"] * 1000
    assert (
        set(again) == set(fresh)
        and sum(r["input"] for r in fresh.values()) == sum(r["input"] for r in first.values()) + 3
    )  # (one more response, counted once)


def test_files_that_moved_around_the_read_are_not_trusted_next_time(tmp_path, monkeypatch):
    config = tmp_path / "config"
    shutil.copytree(CLAUDE / "02-subagents" / "config", config, copy_function=shutil.copy)  # written just now
    home = tmp_path / "hh"
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(config))
    monkeypatch.setenv("HUDDLE_HOME", str(home))
    first = _usage_json()
    _edit_index(home, 1000)
    assert _usage_json() == first  # read again, not taken from the index


def test_a_corrupt_index_is_said_once_and_built_again(tmp_path, monkeypatch):
    config = _aged_copy(CLAUDE / "12-nested-and-custom-agents" / "config", tmp_path / "config")
    home = tmp_path / "hh"
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(config))
    monkeypatch.setenv("HUDDLE_HOME", str(home))
    first = _usage_json(["--by", "agent"])
    db = home / "cache" / "usage.db"
    good = db.read_bytes()
    for junk in (b"\x00garbage", b"[]", good[: len(good) // 2], good[:200] + b"\xff" * 5000 + good[5200:]):
        for extra in ("-wal", "-shm"):
            (home / "cache" / f"usage.db{extra}").unlink(missing_ok=True)
        db.write_bytes(junk)
        got = _usage_json(["--by", "agent"])
        assert {k: v for k, v in got.items() if k != "notes"} == {k: v for k, v in first.items() if k != "notes"}
        assert len([n for n in got["notes"] if "usage.db" in n]) <= 1
    assert _usage_json(["--by", "agent"]) == first  # built again: nothing to say


def test_a_day_bound_is_answered_from_the_sums_and_a_time_bound_from_the_responses(tmp_path, monkeypatch):
    config = _aged_copy(CLAUDE / "02-subagents" / "config", tmp_path / "config")
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(config))
    monkeypatch.setenv("HUDDLE_HOME", str(tmp_path / "hh"))
    library = claude_huddle(config)
    for args, since, until in (
        (["--since", "2026-11-30"], "2026-11-30", None),
        (["--until", "2026-11-30"], None, "2026-11-30"),
        (["--since", "2026-11-30T10:30:00Z"], "2026-11-30T10:30:00Z", None),
    ):
        _usage_json()  # the index is there
        got = _usage_json(args)
        want = report(library, since=parse_since(since) if since else None, until=parse_since(until) if until else None)
        want = json.loads(json.dumps(want))
        assert {k: v for k, v in got.items() if k != "notes"} == {k: v for k, v in want.items() if k != "notes"}


@pytest.mark.parametrize("name", SCENARIOS)
def test_the_board_and_the_usage_report_price_a_session_alike(name):
    """One cost function: a session's cost on the board is the sum the report makes of
    the same responses (by session), whatever the models and their long-context rates."""
    from huddle.views.board import board_json

    h = claude_huddle(CLAUDE / name / "config")
    by_session = {r["key"]: r for r in report(h, by="session")["rows"]}
    for row in as_json(board_json(h))["sessions"]:
        got = by_session.get(f"claude:{row['id']}")
        if got is None or row.get("continues"):
            continue  # nothing counted, or a fork whose copied responses count in the original
        assert row["cost"]["usd"] == pytest.approx(got["cost_usd"], abs=1e-6)  # (the report rounds to 6 places)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(min_value=0, max_value=1e4, allow_nan=False), max_size=60), st.randoms())
def test_a_cost_summed_in_any_order_or_grouping_is_the_same(costs, rnd):
    """The index adds per-day sums, the library single responses: both give one number."""
    import math

    from huddle.usage.report import add_exact

    one: list[float] = []
    for c in costs:
        add_exact(one, c)
    shuffled = costs[:]
    rnd.shuffle(shuffled)
    groups: list[list[float]] = []
    for c in shuffled:
        if not groups or rnd.random() < 0.3:
            groups.append([])
        add_exact(groups[-1], c)
    total: list[float] = []
    for g in groups:
        for p in g:
            add_exact(total, p)
    assert math.fsum(one) == math.fsum(total) == math.fsum(costs)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.floats(min_value=-1e30, max_value=1e30, allow_nan=False), max_size=60))
def test_exact_partials_hold_the_exact_sum_as_add_exact_does(costs):
    from huddle.usage.report import add_exact, exact_partials

    one: list[float] = []
    for c in costs:
        add_exact(one, c)
    got = exact_partials(list(costs))
    assert sum(map(Fraction, got)) == sum(map(Fraction, costs)) == sum(map(Fraction, one))
    assert math.fsum(got) == math.fsum(costs)
    merged = list(got)
    for c in costs:  # partials merge with add_exact as its own do
        add_exact(merged, c)
    assert sum(map(Fraction, merged)) == 2 * sum(map(Fraction, costs))


def _group_rows_as_it_was(rows, table):
    from huddle.model.events import Usage
    from huddle.usage.report import _day, add_exact

    out = {}
    for r in rows:
        t, agent, model = r[0], r[1], r[2]
        key = (_day(t), agent, model)
        g = out.get(key)
        if g is None:
            g = out[key] = [key[0], agent, model, 0, 0, 0, 0, 0, 0, [], t]
        for i in range(5):
            g[3 + i] += r[3 + i]
        g[8] += 1
        cost = table.cost(model, Usage(*r[3:8]))
        if cost is None or g[9] is None:
            g[9] = None
        else:
            add_exact(g[9], cost)
        if t is not None and (g[10] is None or t < g[10]):
            g[10] = t
    return list(out.values())


_NEAR_MIDNIGHT = st.one_of(
    st.none(),
    st.floats(min_value=0, max_value=7e9, allow_nan=False),
    st.builds(
        lambda d, e: d * 86400.0 + e,
        st.integers(min_value=0, max_value=80000),
        st.sampled_from([-1e-6, -5e-7, -4e-7, -1e-7, 0.0, 1e-7, 5e-7, 1e-3, -1e-3, 0.0011, -0.0011]),
    ),
)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(
            _NEAR_MIDNIGHT,
            st.sampled_from(["lead", "Explore"]),
            st.sampled_from(["claude-sonnet-4-5", "gpt-5.5", "no-such-model"]),
            st.lists(st.integers(min_value=0, max_value=10**6), min_size=5, max_size=5),
        ),
        max_size=40,
    )
)
def test_the_index_groups_rows_by_day_as_single_responses_would(rows):
    """The first write works out each day once, not per response: the same days (also a
    hair before or after midnight), sums, counts and exact costs."""
    from huddle.cost.pricing import current
    from huddle.usage.index import group_rows

    rows = [[t, a, m, *u[:3], u[3], min(u[4], u[3])] for t, a, m, u in rows]
    got, was = group_rows(rows, current()), _group_rows_as_it_was(rows, current())
    assert [g[:9] + g[10:] for g in got] == [g[:9] + g[10:] for g in was]
    for g, w in zip(got, was, strict=True):  # the same exact cost, whatever its partials
        assert (g[9] is None) == (w[9] is None)
        if g[9] is not None:
            assert sum(map(Fraction, g[9])) == sum(map(Fraction, w[9]))
            assert all(abs(a) <= abs(b) for a, b in zip(g[9], g[9][1:]))  # smallest first


@given(
    st.lists(
        st.one_of(st.integers(), st.booleans(), st.floats(), st.none(), st.text(max_size=3)), min_size=5, max_size=5
    )
)
def test_a_usage_problem_is_found_as_by_the_loop(values):
    from huddle.model.events import COUNT_MAX, USAGE_FIELDS, Usage, _short

    u = Usage(*values)
    want = ""
    for name in USAGE_FIELDS:
        v = getattr(u, name)
        if type(v) is not int or v < 0:
            want = f"usage {name} is {_short(v)}, not a count"
            break
        if v > COUNT_MAX:  # (issue 34: past any model's window, and every sum's overflow)
            want = f"usage {name} is {_short(v)}, out of range (more than {COUNT_MAX:.0e} tokens)"
            break
    assert u.problem() == want
