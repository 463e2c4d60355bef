"""Nothing from a file reaches the terminal raw (issue 34): session titles, agent names,
commands and paths printed by `status`, `show`, `events`, `transcript`, `search`,
`watch`, `usage`, `export` and errors pass through one sanitiser (huddle.io.visible),
which writes control characters and escape sequences as visible escapes. The commands
run for real with their output not a terminal, so any escape byte in it came from the
files. A Markdown export's headings hold no raw HTML either (notifications: test_notify)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conftest import SAMPLES
from huddle.io.visible import visible
from said import row

SID = "bc6a7de7-81b1-4ce5-a3f7-e765ced7cc00"
PROJ = "-home-dev-work-02-subagents-proj"
OSC52 = "\x1b]52;c;ZXZpbA==\x07"  # writes "evil" to the clipboard
CLEAR = "\x1b[2J\x1b[H"
LINK = "\x1b]8;;https://evil.example/\x1b\\click\x1b]8;;\x1b\\"
UP = "\x1b[10A"
CSI8 = "\x9b2J"  # an 8-bit CSI
RLO = "\u202e"
RAW = ("\x1b", "\x9b", "\x07", RLO)


def _json_str(s: str) -> str:
    return json.dumps(s)[1:-1]


@pytest.fixture(scope="module")
def hostile(tmp_path_factory) -> dict[str, str]:
    """The 02-subagents sample with escape sequences in the title, the project folder,
    a sub-agent's description and type, and a command."""
    root = tmp_path_factory.mktemp("terminal")
    config = root / "claude"
    shutil.copytree(SAMPLES / "claude" / "02-subagents" / "config", config)
    proj = config / "projects" / PROJ
    swaps = {
        "/home/dev/work/02-subagents/proj": "/home/dev/work/02-subagents/pr" + CLEAR + "oj",
        "Survey source files": "Survey" + OSC52 + " files <img src=z onerror=alert(3)>",
        '"general-purpose"': '"general' + CSI8 + 'purpose"',
        '"agentType":"Explore"': '"agentType":"Explore<img src=x onerror=alert(1)>"',
        '"command":"ls -la': '"command":"' + UP + "ls -la",
        "Same survey again": "Same " + LINK + " survey" + RLO + " again",
    }
    for p in proj.rglob("*.json*"):
        text = p.read_text()
        for a, b in swaps.items():
            text = text.replace(a, _json_str(b) if not a.startswith('"') else b.replace("\x1b", "\\u001b"))
        p.write_text(text)
    main = proj / f"{SID}.jsonl"
    with open(main, "a") as f:
        title = "Deploy " + OSC52 + CLEAR + LINK + UP + CSI8 + RLO + " notes"
        f.write(json.dumps({"type": "custom-title", "customTitle": title, "sessionId": SID}) + "\n")
    (root / "home").mkdir()
    none = str(root / "none")
    return {
        **os.environ,
        "HOME": str(root / "home"),
        "HUDDLE_HOME": str(root / "hh"),
        "CLAUDE_CONFIG_DIR": str(config),
        "CODEX_HOME": none,
        "VIBE_HOME": none,
        "GEMINI_CLI_HOME": none,
        "HUDDLE_OPENCODE_DIR": none,
        "COLUMNS": "200",
    }


def _run(env: dict[str, str], *args: str, ok: bool = True, stdout: bool = False) -> str:
    out = subprocess.run([sys.executable, "-m", "huddle", *args], capture_output=True, env=env, timeout=120)
    if ok:
        assert out.returncode == 0, out.stderr.decode(errors="replace")[-800:]
    return (out.stdout if stdout else out.stdout + out.stderr).decode("utf-8", errors="replace")


def _shown_not_obeyed(out: str) -> None:
    for raw in RAW:
        assert raw not in out, f"{raw!r} reached the terminal: {out[:600]!r}"


def test_the_fixture_holds_what_it_should(hostile):
    board = json.loads(_run(hostile, "status", "--json", stdout=True))
    (row,) = [r for r in board["sessions"] if r["id"] == SID]
    assert "\x1b]52" in row["title"] and CLEAR in row["cwd"]


@pytest.mark.parametrize(
    "args",
    [
        ("status", "--all"),
        ("show", SID),
        ("events", SID),
        ("transcripts", SID),
        ("transcript", SID),
        ("search", "survey"),
        ("usage", "--by", "session"),
        ("usage", "--by", "project"),
        ("usage", "--by", "agent"),
    ],
    ids=lambda a: "-".join(a[:3]),
)
def test_every_command_shows_escapes_as_text(hostile, args):
    out = _run(hostile, *args)
    _shown_not_obeyed(out)
    if args[0] in ("status", "show", "search"):
        assert "\\x1b]52;c;ZXZpbA==\\x07" in out


def test_an_export_says_its_title_as_text(hostile, tmp_path):
    out = _run(hostile, "export", SID, "--format", "md", "-o", str(tmp_path / "s.md"))
    _shown_not_obeyed(out)


def test_an_error_naming_what_was_asked_shows_it_as_text(hostile):
    out = _run(hostile, "show", "x" + CLEAR + "y", ok=False)
    _shown_not_obeyed(out)
    out = _run(hostile, "content", SID, "1-2-3" + OSC52, ok=False)
    _shown_not_obeyed(out)


def test_notes_naming_a_path_show_it_as_text(hostile):
    fifo = Path(hostile["CLAUDE_CONFIG_DIR"]) / "projects" / PROJ / ("x" + CLEAR + ".jsonl")
    os.mkfifo(fifo)  # a note names it: not a regular file
    try:
        out = _run(hostile, "status", "--all")
        assert "\\x1b[2J" in out
        _shown_not_obeyed(out)
    finally:
        fifo.unlink()


def test_watch_lines_show_titles_and_why_as_text():
    from huddle.cli.watch import Lines

    said: list[str] = []
    lines = Lines(echo=said.append)
    lines.rows([row(source="claude", id="ab" + CLEAR, title="t" + OSC52, state="needs_you", waiting_for=LINK)], [])
    (line,) = said
    _shown_not_obeyed(line)
    assert "\\x1b]52" in line


def test_the_status_line_shows_a_title_as_text():
    from huddle.statusline import render

    line = render(
        {
            "session": {"id": "me", "cost_usd": 1.0, "context_percent": 3},
            "needs_you": [{"id": "x", "source": "claude", "title": OSC52 + "t", "waiting_for": "y"}],
            "working": 0,
            "sessions": 2,
            "stale": False,
        }
    )
    _shown_not_obeyed(line)


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("plain words", "plain words"),
        ("a\x1b[2Jb", "a\\x1b[2Jb"),
        ("a\nb\tc", "a\\nb\\tc"),
        ("\x9b\x00\x7f", "\\x9b\\x00\\x7f"),
        ("txt\u202eexe.", "txt\\u202eexe."),
        ("café ✓ 日本", "café ✓ 日本"),
    ],
)
def test_visible(text, shown):
    assert visible(text) == shown


def test_visible_keeps_lines_when_asked():
    assert visible("a\nb\tc\x1b", lines=True) == "a\nb\tc\\x1b"


def test_markdown_headings_hold_no_raw_html(hostile):
    from huddle.core import Huddle
    from huddle.sources import Settings
    from huddle.views.export import Options, export_data
    from huddle.views.export_md import markdown

    h = Huddle(Settings.from_env(hostile))
    h.refresh()
    data, _ = export_data(h, SID, Options(redact=False))
    data["session"]["project"] = "a`b <img src=y onerror=alert(2)>`c"
    md = markdown(data)
    assert "Explore" in md
    from markdown_it import MarkdownIt  # (rich's own dependency) as a viewer that renders HTML does

    html = MarkdownIt("commonmark", {"html": True}).render(md)
    assert "<img" not in html and "<script" not in html, [x for x in html.splitlines() if "<img" in x]


_OBEYED = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069]")  # what a terminal obeys
_NAMED = {"\n": "\\n", "\t": "\\t", "\r": "\\r", "\x1b": "\\x1b"}


def _escaped(text: str, kept: str) -> str:
    """The sanitiser's meaning, as a regular expression says it."""

    def escape(m: re.Match[str]) -> str:
        c = m.group()
        if c in kept:
            return c
        return _NAMED.get(c) or (f"\\x{ord(c):02x}" if ord(c) < 0x100 else f"\\u{ord(c):04x}")

    return _OBEYED.sub(escape, text)


@given(st.text(alphabet=st.characters(max_codepoint=0x2100) | st.sampled_from("\u2066\u2069\u206a\U0001f600")))
def test_visible_shows_every_character_a_terminal_obeys_and_keeps_the_rest(text):
    assert visible(text) == _escaped(text, "")
    assert visible(text, lines=True) == _escaped(text, "\n\t")
