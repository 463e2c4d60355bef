"""`huddle status` in a terminal's width, short ids that every command takes, and which
sessions the table lists (live and recent by default; --all, --state, --project, --since)."""

from __future__ import annotations

import io
import json
import os
import subprocess
import time

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rich.cells import cell_len

import incli
import web_corpus
from huddle.server import ServerThread
from live_agents import ClaudeProcess, claude_live
from said import row

OLD = "2026-01-01"  # before every sample was recorded


def huddle(env: dict, *args: str, columns: int = 120) -> subprocess.CompletedProcess:
    return incli.huddle(*args, env={**os.environ, **env, "COLUMNS": str(columns)})


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    root = tmp_path_factory.mktemp("table")
    settings = web_corpus.build(root)
    return settings, settings.env()


@pytest.fixture
def with_live(tmp_path, corpus):
    """The samples plus one live session that needs you (a real process, its registry file)."""
    _, env = corpus
    _, sid, config = claude_live(tmp_path, "05-needs-you-bash-permission")
    claude = ClaudeProcess(config, sid, "waiting")
    claude.set("waiting", "permission prompt")
    both = {**env, "CLAUDE_CONFIG_DIR": str(config)}
    yield both, sid
    claude.stop()


def lines_of(out: str) -> list[str]:
    return [x for x in out.splitlines() if x.strip()]


@pytest.mark.parametrize("columns", [80, 120])
def test_the_table_fits_its_width(corpus, columns):
    _, env = corpus
    out = huddle(env, "status", "--all", columns=columns)
    assert out.returncode == 0, out.stderr
    lines = lines_of(out.stdout)
    assert len(lines) > 20
    assert max(cell_len(x) for x in lines) <= columns
    head = lines[0].split()
    if columns >= 120:  # complete: every column
        assert head == ["id", "state", "for", "agent", "title", "project", "tokens", "cost"]
    else:  # readable: the project gives way to the title
        assert head == ["id", "state", "for", "agent", "title", "tokens", "cost"]
    for x in lines[1:]:
        assert "$" in x or x.rstrip().endswith("?") or x.split()[-1][0].isdigit()  # tokens and cost are never cut


@pytest.mark.parametrize("columns", [80, 120])
def test_a_session_that_needs_you_says_why_at_any_width(with_live, columns):
    env, sid = with_live
    out = huddle(env, "status", columns=columns)
    assert out.returncode == 0, out.stderr
    lines = lines_of(out.stdout)
    (at,) = [i for i, x in enumerate(lines) if x.startswith(sid[:8])]
    assert "needs you" in lines[at]
    assert "permission prompt: Bash" in lines[at] + lines[at + 1]  # beside the title, or under it
    assert max(cell_len(x) for x in lines_of(out.stdout)) <= columns


def test_the_default_lists_the_live_and_recent(with_live):
    env, sid = with_live
    out = huddle(env, "status")
    rows = [x for x in lines_of(out.stdout)[1:-1] if not x.lstrip().startswith("↳")]
    assert [x.split()[0] for x in rows] == [sid[:8]]  # the samples are days old; the live one shows
    assert "of" in lines_of(out.stdout)[-1] and "--all" in lines_of(out.stdout)[-1]
    every = lines_of(huddle(env, "status", "--all").stdout)
    assert len(every) > 10
    since = lines_of(huddle(env, "status", "--since", OLD).stdout)
    assert len(since) == len(every) and since[1].startswith(sid[:8])
    recent = lines_of(huddle(env, "status", "--since", "2h").stdout)
    assert [x.split()[0] for x in recent[1:-1] if not x.lstrip().startswith("↳")] == [sid[:8]]
    ended = lines_of(huddle(env, "status", "--all", "--state", "ended").stdout)[1:]
    assert ended and all("ended" in x for x in ended[:-1])
    needs = lines_of(huddle(env, "status", "--all", "--state", "needs-you,working").stdout)
    assert [x.split()[0] for x in needs[1:-1] if not x.lstrip().startswith("↳")] == [sid[:8]]
    proj = lines_of(huddle(env, "status", "--all", "--project", "ws").stdout)[1:-1]
    assert proj and all(" ws " in x for x in proj)
    bad = huddle(env, "status", "--state", "sleepy")
    assert bad.returncode == 2 and "bad state" in bad.stderr and "Traceback" not in bad.stderr
    bad = huddle(env, "status", "--since", "soonish")
    assert bad.returncode == 2 and "bad since" in bad.stderr


def test_json_takes_the_same_filters_as_the_route(corpus):
    settings, env = corpus
    args = {"state": "ended", "since": OLD, "project": "proj"}
    out = huddle(env, "status", "--json", "--state", "ended", "--since", OLD, "--project", "proj")
    cli = json.loads(out.stdout)
    assert cli["sessions"] and all(r["state"] == "ended" for r in cli["sessions"])
    whole = json.loads(huddle(env, "status", "--json").stdout)
    assert len(whole["sessions"]) > len(cli["sessions"])  # --json has no default window
    with ServerThread(web_corpus.core(settings)) as srv:
        route = httpx.get(srv.url + "api/sessions", params=args).json()
        assert [r["id"] for r in route["sessions"]] == [r["id"] for r in cli["sessions"]]
        assert httpx.get(srv.url + "api/sessions", params={"state": "nope"}).status_code == 400


def test_every_command_takes_a_unique_prefix(corpus):
    settings, env = corpus
    board = json.loads(huddle(env, "status", "--json").stdout)["sessions"]
    claude = next(r for r in board if r["source"] == "claude")
    sid, short = claude["id"], claude["id"][:8]
    full = huddle(env, "show", sid, "--json")
    assert huddle(env, "show", short, "--json").stdout == full.stdout
    for cmd in (["events"], ["transcripts"], ["transcript"]):
        a, b = huddle(env, *cmd, sid, "--json"), huddle(env, *cmd, short, "--json")
        assert a.returncode == 0 and a.stdout == b.stdout, cmd
    exported = huddle(env, "export", short, "--format", "json", "-o", "-")
    assert exported.returncode == 0 and sid in exported.stdout
    # two Codex sessions start alike: say so, naming them, and ask for more
    codex = sorted(r["id"] for r in board if r["source"] == "codex")
    common = os.path.commonprefix(codex[:2])  # noqa: RUF071  (characters are what a prefix is)
    assert len(common) >= 4
    amb = huddle(env, "show", common)
    assert amb.returncode == 1 and "give more of it" in amb.stderr and codex[0] in amb.stderr
    assert huddle(env, "show", "zzzzzz").returncode == 1
    with ServerThread(web_corpus.core(settings)) as srv:
        assert httpx.get(f"{srv.url}api/sessions/{short}").json()["id"] == sid
        assert httpx.get(f"{srv.url}api/sessions/{common}").status_code == 400


def test_short_ids_grow_until_unique():
    from huddle.cli.table import short_ids

    rows = [row(id="01a22a65-fb46"), row(id="01a22a65-b42b"), row(id="80ec2ba4-1111")]
    assert short_ids(rows) == {
        "01a22a65-fb46": "01a22a65-f",
        "01a22a65-b42b": "01a22a65-b",
        "80ec2ba4-1111": "80ec2ba4",
    }


def test_since_takes_durations():
    from huddle.views.when import parse_since

    now = time.time()
    assert parse_since("2h", now) == now - 7200
    assert parse_since("3d", now) == now - 3 * 86400
    assert parse_since("30m", now) == now - 1800
    assert parse_since("1w", now) == now - 7 * 86400
    assert parse_since("2026-01-01") is not None and parse_since("h") is None


@settings(max_examples=300, deadline=None)
@given(ids=st.lists(st.text("ab-", max_size=12), max_size=12), least=st.integers(0, 10))
def test_a_short_id_is_the_shortest_start_no_other_id_shares(ids, least):
    """As defined: from `least` characters (or the whole id) on, one more while another
    id starts with it. (Sorted neighbours give it at once: 5,000 ids took 11 s.)"""
    from huddle.cli.table import short_ids

    want = {}
    for i in ids:
        n = min(least, len(i))
        while n < len(i) and any(o != i and o.startswith(i[:n]) for o in ids):
            n += 1
        want[i] = i[:n]
    assert short_ids([row(id=i) for i in ids], least) == want


def test_every_short_id_the_table_prints_opens_its_session(tmp_path):
    """Eight sessions whose ids start alike, one of them recent: the table lists that one
    (the last day), and its short id is unique among all eight, not only among the rows
    it shows, so `huddle show` opens it rather than naming eight candidates."""
    import re

    from conftest import SAMPLES

    src = next((SAMPLES / "claude" / "01-basic-tools" / "config" / "projects").glob("*/*.jsonl"))
    folder = tmp_path / "claude" / "projects" / src.parent.name
    folder.mkdir(parents=True)
    text = src.read_text()
    now = time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime(time.time() - 600))
    ids = [f"dcef0a1b-2c3d-4e5f-8a9b-{n:012x}" for n in range(8)]
    for n, sid in enumerate(ids):
        body = text.replace(src.stem, sid)
        if n == 5:  # the recent one
            body = re.sub(r'"timestamp":"[^"]+"', f'"timestamp":"{now}"', body)
        (folder / f"{sid}.jsonl").write_text(body)
    env = {
        "CLAUDE_CONFIG_DIR": str(tmp_path / "claude"),
        "CODEX_HOME": str(tmp_path / "none"),
        "VIBE_HOME": str(tmp_path / "none"),
        "HUDDLE_HOME": str(tmp_path / "hh"),
    }
    for args in (["status"], ["status", "--all"], ["status", "--state", "ended"]):
        out = huddle(env, *args)
        assert out.returncode == 0, out.stderr
        printed = [x.split()[0] for x in lines_of(out.stdout)[1:] if x.split() and x.split()[0].startswith("dcef")]
        assert printed, out.stdout
        for short in printed:
            shown = huddle(env, "show", short, "--json")
            assert shown.returncode == 0, (args, short, shown.stderr)
            assert json.loads(shown.stdout)["id"].startswith(short)


# -- the table's layout: what rich's Table draws, without its cost ------------------


def _shown(renderable, width: int, styled: bool) -> list[list[tuple[str, str]]] | str:
    """What a terminal `width` wide shows of a renderable: its text as printed or, when
    `styled`, each line's characters with the style each one that is not a space is
    drawn in (padding's style is never seen; trailing spaces neither)."""
    from rich.console import Console

    buf = io.StringIO()
    console = Console(file=buf, width=width, force_terminal=styled, color_system="truecolor" if styled else None)
    if not styled:
        console.print(renderable)
        return buf.getvalue()
    out = []
    for line in console.render_lines(renderable, console.options, pad=False):
        chars = [(ch, "" if ch == " " else str(seg.style or "")) for seg in line for ch in seg.text]
        while chars and chars[-1][0] == " ":
            chars.pop()
        out.append(chars)
    return out


def _both(rows: list, width: int, now: float = 1.8e9):
    """The table as huddle lays it out and as rich's Table would, or None when its
    columns do not fit `width` (rich's Table draws it then, wrapping cells)."""
    from huddle.cli import table as t

    cells = t._cells({"sessions": rows}, now, None)
    columns = t._columns(cells, width)
    drawn = t.table({"sessions": rows}, now, width)
    if not isinstance(drawn, t.Drawn):
        assert not t.fits(columns, width)
        return None
    return drawn, t._wrapped(columns, cells)


@pytest.mark.parametrize("width", [72, 80, 100, 120, 140, 200])
def test_the_table_is_what_rich_would_draw(corpus, width):
    """The samples' board, every state, a why under the title and beside it: the same
    characters, and the same style on each, as rich's Table drew (it took a second for
    a two-year history of 2,900 rows; this layout takes a tenth of that)."""
    settings, _ = corpus
    board = web_corpus.core(settings)
    from huddle.views.board import board_json

    rows = board_json(board)["sessions"]
    rows += [
        row(id="needs-1", state="needs_you", waiting_for="permission prompt: Bash", title="t " * 40),
        row(id="err-1", state="idle", error="bad\x1b[31m file", title="日本語のタイトル" * 6, project="p" * 30),
        row(id="busy-1", state="working", doing="Edit src/a.py", background=["npm test"], usage_unknown=True),
    ]
    got = _both(rows, width)
    assert got is not None
    fast, rich_table = got
    assert _shown(fast, width, False) == _shown(rich_table, width, False)
    assert _shown(fast, width, True) == _shown(rich_table, width, True)


_TEXT = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=60)


@settings(max_examples=150, deadline=None)
@given(
    rows=st.lists(
        st.builds(
            dict,
            id=st.text("0123456789abcdef-", min_size=1, max_size=36),
            source=st.sampled_from(["claude", "codex", "gemini", "opencode"]),
            title=st.one_of(st.none(), _TEXT),
            project=_TEXT,
            state=st.sampled_from(["needs_you", "waiting", "working", "your_turn", "idle", "ended", "odd"]),
            waiting_for=st.one_of(st.none(), _TEXT),
            doing=_TEXT,
            error=st.one_of(st.just(""), _TEXT),
            background=st.lists(_TEXT, max_size=2),
            tokens=st.integers(0, 10**13),
            usage_unknown=st.booleans(),
            cost=st.builds(dict, usd=st.one_of(st.none(), st.floats(0, 1e7)), unpriced=st.lists(_TEXT, max_size=1)),
            updated_at=st.sampled_from([None, "2026-12-01T10:00:00Z", "2020-01-01T00:00:00Z", "soon"]),
        ),
        min_size=1,
        max_size=6,
    ),
    width=st.integers(40, 220),
)
def test_any_board_is_laid_out_as_rich_would(rows, width):
    """Any titles, projects and whys (wide, combining, control characters), any width:
    where the columns fit, the same characters and styles as rich's Table; where they
    do not, rich's Table itself."""
    got = _both([row(**r) for r in rows], width)
    if got is not None:
        fast, rich_table = got
        assert _shown(fast, width, False) == _shown(rich_table, width, False)
        assert _shown(fast, width, True) == _shown(rich_table, width, True)


@settings(max_examples=300, deadline=None)
@given(text=_TEXT, width=st.integers(0, 40))
def test_a_cut_keeps_the_longest_start_that_leaves_the_ellipsis_its_cell(text, width):
    from huddle.cli.table import _cut

    want = text
    if cell_len(text) > width:  # (the definition: one character off the end at a time)
        while want and cell_len(want) > width - 1:
            want = want[:-1]
        want += "…"
    assert _cut(text, width) == want
