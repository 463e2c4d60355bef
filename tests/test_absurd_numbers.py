"""No number stops the board (issue 34): a count, a price or a time out of any sane range
costs its own record (kept out of the sums, said in the session's problems), never a
session, never `status`, `usage`, `show`, the usage index, OTel or the hub's sums.

The Codex attack: one pair of `token_count` records with an absurd cumulative total
(10**400 tokens) made every priced sum raise OverflowError, and `status`, `usage` and
`show` exit 1 for every agent."""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import SAMPLES
from huddle.core import Huddle, Keeper
from huddle.cost import pricing
from huddle.model.events import COUNT_MAX, Event, Usage
from huddle.model.session import Session
from huddle.sources import Settings

CODEX = SAMPLES / "codex" / "shell" / "codex_home"
ABSURD = 10**400


def _absurd_codex(root: Path) -> tuple[Path, str]:
    """A Codex home whose thread ends with two token_count records of absurd totals."""
    shutil.copytree(CODEX, root / "codex")
    (path,) = sorted((root / "codex" / "sessions").rglob("rollout-*.jsonl"))
    lines = path.read_bytes().splitlines()
    last = json.loads(next(x for x in reversed(lines) if b'"token_count"' in x))
    for n in (ABSURD, ABSURD * 10):
        rec = json.loads(json.dumps(last))
        total = rec["payload"]["info"]["total_token_usage"]
        total["input_tokens"] = total["output_tokens"] = n
        lines.append(json.dumps(rec).encode())
    path.write_bytes(b"\n".join(lines) + b"\n")
    sid = json.loads(lines[0])["payload"]["id"]
    return path, sid


def _env(root: Path) -> dict[str, str]:
    none = str(root / "none")
    env = {**os.environ, "HOME": str(root / "home"), "HUDDLE_HOME": str(root / "hh"), "CODEX_HOME": str(root / "codex")}
    env.update(CLAUDE_CONFIG_DIR=none, VIBE_HOME=none, GEMINI_CLI_HOME=none, HUDDLE_OPENCODE_DIR=none)
    return env


def _huddle(env: dict[str, str], *args: str) -> dict:
    out = subprocess.run(
        [sys.executable, "-m", "huddle", *args, "--json"], capture_output=True, text=True, env=env, timeout=120
    )
    assert out.returncode == 0, f"huddle {' '.join(args)}: {out.stderr[-800:]}"
    return json.loads(out.stdout)


def test_an_absurd_codex_total_costs_its_record_not_the_commands(tmp_path):
    (tmp_path / "home").mkdir(exist_ok=True)
    path, sid = _absurd_codex(tmp_path)
    env = _env(tmp_path)
    clean = tmp_path / "clean"
    shutil.copytree(CODEX, clean / "codex")
    (clean / "home").mkdir()
    want = _huddle(_env(clean), "usage")["totals"]
    for _ in range(2):  # the first run reads the files, the second answers from what it kept
        board = _huddle(env, "status")
        (row,) = [r for r in board["sessions"] if r["id"] == sid]
        assert row.get("error") is None
        assert row["cost"]["usd"] is None or math.isfinite(row["cost"]["usd"])
        usage = _huddle(env, "usage")
        assert usage["totals"]["total_tokens"] == want["total_tokens"]
        assert usage["totals"]["cost_usd"] == want["cost_usd"]
    show = _huddle(env, "show", sid)
    said = [p for p in show["problems"] if str(path) in p]
    assert said and all("not a count" in p or "out of range" in p for p in said), show["problems"]


def test_a_count_out_of_range_is_kept_out_of_every_sum():
    s = Session("codex", "s1")
    good = Usage(input=10, output=5)
    s.add_all(
        [
            Event(kind="usage", agent="s1", file="f", offset=1, id="a", name="gpt-5", usage=good),
            Event(kind="usage", agent="s1", file="f", offset=2, id="b", name="gpt-5", usage=Usage(input=ABSURD)),
            Event(
                kind="usage", agent="s1", file="f", offset=3, id="c", name="gpt-5", usage=Usage(output=COUNT_MAX + 1)
            ),
        ]
    )
    assert s.usage.to_tuple() == good.to_tuple()
    assert s.model_usage["gpt-5"].to_tuple() == good.to_tuple()
    assert s.skipped_lines == 2 and len(s.problems) == 1 and s.problems[0].startswith("f:2: ")  # one line a file
    # a later record of the same response cannot raise it out of range either
    first = s.events[0]
    s.raise_usage(first, Usage(input=ABSURD))
    assert s.usage.to_tuple() == good.to_tuple()
    cost = pricing.session_cost(s)
    assert cost["usd"] is None or math.isfinite(cost["usd"])


@pytest.mark.parametrize("rate", ["1e308", "1e400", "NaN", "Infinity", "1e7"])
def test_a_price_out_of_range_is_a_problem_of_the_user_file(tmp_path, rate):
    home = tmp_path / "hh"
    home.mkdir()
    (home / "pricing.json").write_text(
        '{"models": {"gpt-5": {"input": %s, "output": 1, "cache_read": 0, "cache_write": 0}}}' % rate
    )
    table = pricing.load(str(home))
    assert table.problem and "pricing.json" in table.problem and "input" in table.problem
    cost = table.cost("gpt-5", Usage(input=COUNT_MAX, output=COUNT_MAX))
    assert cost is not None and math.isfinite(cost)


def test_otel_attributes_of_a_session_with_an_absurd_total_stay_in_range(tmp_path):
    (tmp_path / "home").mkdir(exist_ok=True)
    _path, sid = _absurd_codex(tmp_path)
    settings = Settings(
        folders={"codex": str(tmp_path / "codex"), "claude": "/nonexistent", "vibe": "/nonexistent"},
        huddle_home=str(tmp_path / "hh"),
    )
    h = Huddle(settings, sources=["codex"])
    h.refresh()
    from huddle.otel.spans import session_spans
    from huddle.usage.report import report

    assert report(h)["totals"]["total_tokens"] < COUNT_MAX
    s = h.session(f"codex:{sid}")
    assert s is not None
    spans = session_spans(s).spans
    assert spans
    for span in spans:
        assert 0 <= span.start <= span.end < 2**63
        for v in span.attrs.values():
            assert not isinstance(v, int) or abs(v) < 2**63
            assert not isinstance(v, float) or math.isfinite(v)


def test_a_server_ends_its_first_read_of_an_absurd_total(tmp_path):
    """The server's first read (in a child, then in-process when the child fails) used to
    raise on the same sum and never end: the board stayed empty, `reading` for ever."""
    import httpx

    from helpers import wait_for
    from huddle.server import ServerThread

    _path, sid = _absurd_codex(tmp_path)
    settings = Settings.from_env(_env(tmp_path))
    h = Huddle(settings, keep=Keeper())
    opts = {"poll_watched": 0.5, "poll_unwatched": 0.2, "read_apart": True}
    with ServerThread(h, watch_options=opts) as srv, httpx.Client(base_url=srv.url, timeout=20) as c:
        wait_for(lambda: srv.state.watcher.started, "the first read's end")
        assert srv.state.watcher.last_error is None
        ids = [r["id"] for r in c.get("/api/sessions").json()["sessions"]]
        assert sid in ids
        assert c.get("/api/usage").status_code == 200
