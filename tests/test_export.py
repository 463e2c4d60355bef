"""Exports: planted secrets of every kind gone from the file and from its compressed
data; the HTML opened from file:// in Chromium with the network blocked shows every
message and sub-agent and runs nothing it carries; Markdown inlines sub-agents;
heavy outputs are trimmed with their size said; every source exports."""

from __future__ import annotations

import copy
import json
import os
import re
import time
import uuid
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import expect

import incli
import web_corpus
from huddle.redact.redactor import MARK
from huddle.server import ServerThread
from huddle.views.export import Options, export_data, render
from huddle.views.export_html import unpack
from planted import PLANTED, all_secrets

FAST = {"poll_watched": 0.5, "poll_unwatched": 0.2}
HOSTILE = '<script>window.__pwned=1</script><img src=x onerror="window.__pwned=2"> hostile words'
PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="


def _records(main: Path) -> list[dict]:
    return [json.loads(line) for line in main.read_text().splitlines()]


def _stamp(rec: dict) -> dict:
    rec = copy.deepcopy(rec)
    rec["uuid"] = str(uuid.uuid4())
    rec["timestamp"] = web_corpus._iso(time.time())
    return rec


def append_tool(main: Path, command: str, output, is_error: bool = False) -> None:
    """A Bash call and its result, shaped like the file's own records."""
    recs = _records(main)
    call = next(
        r for r in recs if r.get("type") == "assistant" and r["message"]["content"][0].get("type") == "tool_use"
    )
    result = next(
        r
        for r in recs
        if r.get("type") == "user"
        and isinstance(r["message"]["content"], list)
        and r["message"]["content"][0].get("type") == "tool_result"
    )
    tid = "toolu_01" + uuid.uuid4().hex[:22]
    c = _stamp(call)
    c["message"]["id"] = "msg_01" + uuid.uuid4().hex[:22]
    c["message"]["content"] = [{"type": "tool_use", "id": tid, "name": "Bash", "input": {"command": command}}]
    r = _stamp(result)
    r["message"]["content"] = [{"tool_use_id": tid, "type": "tool_result", "content": output, "is_error": is_error}]
    r.pop("toolUseResult", None)
    with open(main, "a") as f:
        f.write(json.dumps(c) + "\n" + json.dumps(r) + "\n")


def append_prompt(main: Path, text: str) -> None:
    recs = _records(main)
    p = next(r for r in recs if r.get("type") == "user" and isinstance(r["message"]["content"], str))
    p = _stamp(p)
    p["message"]["content"] = text
    p.pop("promptId", None)
    with open(main, "a") as f:
        f.write(json.dumps(p) + "\n")


@pytest.fixture
def planted(tmp_path):
    """The nested sample, with every planted secret in a reply, a prompt, a tool input
    and a heavy tool output (one of them right at the place the output is cut)."""
    cfg, sid, main = web_corpus.one_session(tmp_path)
    texts = [t.format(s=s) for _, s, t in PLANTED]
    append_prompt(main, "please deploy, the token is " + texts[0])
    for t in texts:
        web_corpus.append_say(main, f"found this: {t}")
    append_tool(main, "env | grep KEY; " + " ; ".join(texts[:6]), "ok")
    cut = 8_000 * 3 // 4  # where the head of a trimmed output ends
    filler = "x" * (cut - 20)
    heavy = filler + " " + texts[1] + " " + ("y" * 50_000) + "\n".join(texts) + "z" * 5_000
    append_tool(main, "cat secrets.txt", heavy)
    append_tool(
        main,
        "screenshot",
        [
            {"type": "text", "text": "the screen"},
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}},
        ],
    )
    web_corpus.append_say(main, HOSTILE)
    return cfg, sid, main


def _no_secret(blob: bytes | str) -> None:
    text = blob if isinstance(blob, str) else blob.decode("utf-8", "replace")
    for s in all_secrets():
        assert s not in text, s


def test_planted_secrets_are_gone_from_every_format(planted):
    cfg, sid, _main = planted
    h = web_corpus.core(cfg)
    data, redactor = export_data(h, sid)
    assert redactor is not None and redactor.replaced >= len(PLANTED) * 2
    assert set(data["redaction"]["by_rule"]) >= {rule for rule, _, _ in PLANTED}
    for fmt in ("html", "md", "json"):
        blob = render(data, fmt)
        _no_secret(blob)
        if fmt != "html":  # (the page's data is compressed: it is read below)
            assert MARK.format("aws-access-key").encode() in blob
    html = render(data, "html").decode()
    packed = re.search(r'<script type="application/octet-stream" id="huddle-data">([^<]*)</script>', html).group(1)
    inner = unpack(packed)
    _no_secret(json.dumps(inner))
    assert MARK.format("aws-access-key") in json.dumps(inner)
    assert inner["redaction"]["replaced"] == data["redaction"]["replaced"]
    # without redaction they are all there: the test plants what it says
    raw, _ = export_data(h, sid, Options(redact=False))
    blob = render(raw, "json").decode()
    assert all(s in blob for s in all_secrets())
    assert raw["redaction"] == {"enabled": False, "replaced": 0, "by_rule": {}}


def test_heavy_outputs_are_trimmed_with_their_size_and_images_follow_the_flag(planted):
    cfg, sid, _main = planted
    h = web_corpus.core(cfg)
    data, _ = export_data(h, sid)
    heavy = next(e for e in data["events"] if e["kind"] == "tool_result" and e.get("output_trimmed"))
    assert heavy["output_trimmed"]["chars"] > 50_000
    assert len(heavy["output"]) < 9_000 and "trimmed:" in heavy["output"] and "in all" in heavy["output"]
    img = next(e for e in data["events"] if e.get("images"))
    assert img["images"][0]["data"] == PNG and data["images"]["kept"] == 1
    dropped, _ = export_data(h, sid, Options(images=False))
    assert data["images"]["kept"] == 1 and dropped["images"] == {"kept": 0, "dropped": 1}
    assert PNG not in render(dropped, "html").decode() and PNG not in render(dropped, "json").decode()


def test_markdown_inlines_sub_agents_and_writes_tags_as_text(planted):
    cfg, sid, _main = planted
    h = web_corpus.core(cfg)
    data, _ = export_data(h, sid)
    md = render(data, "md").decode()
    assert "<script>" not in md and "&lt;script>window.__pwned=1&lt;/script>" in md
    lead_at = md.index("Starting an investigator")
    sub_at = md.index("### ↳ Investigate with helper")
    nested_at = md.index("> ### ↳ Nested README check")
    assert lead_at < sub_at < nested_at, "each sub-agent under the call that started it, one level deeper"
    assert "> > " in md[nested_at : nested_at + 2000], "the grandchild's messages are quoted twice"
    assert re.search(r"^## Turn 1 · [\d.]+k tokens · \$", md, re.M)


def test_user_patterns_and_the_command(planted, tmp_path):
    cfg, sid, main = planted
    web_corpus.append_say(main, "our internal code is ACME-998877 do not share")
    pats = tmp_path / "mine.txt"
    pats.write_text("ACME-[0-9]{6}\n")
    env = {**os.environ, **web_corpus.env_of(cfg)}
    out = tmp_path / "s.md"
    run = incli.huddle("export", sid, "--format", "md", "-o", str(out), "--redact-file", str(pats), env=env)
    assert run.returncode == 0, run.stderr
    text = out.read_text()
    assert "ACME-998877" not in text and "[REDACTED:user-pattern]" in text
    _no_secret(text)
    assert "secrets replaced" in run.stderr and str(out) in run.stderr
    bad = incli.huddle("export", sid, "--redact-file", str(tmp_path / "nope.txt"), env=env)
    assert bad.returncode != 0 and "Traceback" not in bad.stderr


def test_the_download_route_is_the_export(planted):
    cfg, sid, _main = planted
    with ServerThread(web_corpus.core(cfg), watch_options=FAST) as srv:
        r = httpx.get(f"{srv.url}api/sessions/{sid}/export", params={"format": "json"}, timeout=60)
        assert r.status_code == 200
        assert r.headers["content-disposition"].startswith('attachment; filename="huddle-')
        assert "secrets replaced" in r.headers["x-huddle-export"]
        _no_secret(r.content)
        got = r.json()
        want, _ = export_data(srv.state.h, sid)
        got.pop("exported_at"), want.pop("exported_at")
        assert got == json.loads(json.dumps(want))
        assert httpx.get(f"{srv.url}api/sessions/{sid}/export", params={"format": "pdf"}).status_code == 400
        assert httpx.get(f"{srv.url}api/sessions/nope/export").status_code == 404


def test_every_source_exports(tmp_path):
    cfg = web_corpus.build(tmp_path)
    h = web_corpus.core(cfg)
    seen = set()
    for s in h.sessions():
        if s.source in seen or not s.counts.get("say"):
            continue
        seen.add(s.source)
        data, _ = export_data(h, s.key)
        says = [e["text"] for e in data["events"] if e["kind"] == "say"]
        assert says, s.key
        md = render(data, "md").decode()
        assert all(t.strip()[:40].replace("<", "&lt;") in md or "[REDACTED" in t for t in says[:20] if t.strip())
        render(data, "html")
    assert seen >= {"claude", "codex", "vibe"}


# -- the HTML in a browser ---------------------------------------------------------------------


@pytest.mark.browser
def test_the_html_opens_from_file_with_no_network(planted, tmp_path, browser):
    from test_browser import SHOTS

    cfg, sid, _main = planted
    h = web_corpus.core(cfg)
    data, _ = export_data(h, sid)
    path = tmp_path / "export.html"
    path.write_bytes(render(data, "html"))
    ctx = browser.new_context(viewport={"width": 1280, "height": 900})
    asked: list[str] = []

    def block(route):
        asked.append(route.request.url)
        route.abort()

    ctx.route(re.compile(r"^(?!file:|data:).*"), block)
    pg = ctx.new_page()
    problems: list[str] = []
    pg.on("pageerror", lambda e: problems.append(str(e)))
    pg.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
    pg.goto(path.as_uri())
    pg.wait_for_selector("body[data-ready='1']")
    text = pg.evaluate("document.body.textContent")
    flat = " ".join(text.split())
    s = h.session(sid)
    for e in s.events:
        if e.kind in ("prompt", "say", "report") and e.text.strip():
            want = " ".join(data["events"][e.seq]["text"].split())[:200]
            assert want in flat, want[:80]
    names = [a["description"] or a["name"] for a in data["agents"] if a["parent"]]
    assert len(names) == 3 and all(n in flat for n in names)
    assert pg.evaluate("window.__pwned") is None
    assert HOSTILE.split(">")[0] in flat  # shown as text
    # every tool's output is there when opened; the image is drawn from its data URL
    pg.evaluate("document.querySelectorAll('details').forEach((d) => { d.open = true; })")
    expect(pg.locator("details.tool pre.out").first).to_be_visible()
    expect(pg.locator("details.tool img")).to_have_count(1)
    assert "trimmed:" in pg.evaluate("document.body.textContent")
    for s_ in all_secrets():
        assert s_ not in pg.evaluate("document.documentElement.outerHTML")
    # the replay plays from the file too
    pg.click("nav.tabs a[data-tab='replay']")
    expect(pg.locator("#tab-replay .tile").first).to_be_visible()
    pg.keyboard.press("End")
    expect(pg.locator("#tab-replay .clock")).to_contain_text("/")
    SHOTS.mkdir(exist_ok=True)
    pg.screenshot(path=str(SHOTS / "export-replay.png"))
    pg.click("nav.tabs a[data-tab='conversation']")
    pg.screenshot(path=str(SHOTS / "export-conversation.png"))
    assert pg.evaluate("window.__pwned") is None
    assert not asked, asked
    assert not problems, problems
    ctx.close()


WHEN = re.compile(r"^~?[A-Z][a-z]{2}, [A-Z][a-z]{2} \d{1,2}(, \d{4})?, \d{2}:\d{2}:\d{2}$")  # fmtWhen, en-US


def test_the_html_export_looks_like_the_app(tmp_path, browser):
    """Agent text is Markdown as in the app (code, bold, lists), a slash command reads as
    typed, and every time on the page is said one way, its date with it (an export is
    read on another day): the header, each turn, each message and the export's note."""
    cfg, sid, _main = web_corpus.one_session(tmp_path, "10-interactive-tmux")
    h = web_corpus.core(cfg)
    data, _ = export_data(h, sid)
    path = tmp_path / "export.html"
    path.write_bytes(render(data, "html"))
    ctx = browser.new_context(viewport={"width": 1280, "height": 900}, locale="en-US")
    pg = ctx.new_page()
    problems: list[str] = []
    pg.on("pageerror", lambda e: problems.append(str(e)))
    pg.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
    pg.goto(path.as_uri())
    pg.wait_for_selector("body[data-ready='1']")
    md = pg.locator(".export-chat .msg.agent .md")
    assert md.count() > 0
    assert pg.locator(".export-chat .msg.agent .md code").count() > 0  # `greet()` and friends
    assert "`" not in " ".join(md.all_text_contents())  # (text, not innerText: far messages skip rendering)
    typed = pg.locator(".export-chat .msg.human.command .body").all_text_contents()
    assert "/rename Interactive demo session" in typed, typed
    times = pg.locator(
        ".head-meta .s-started, .turn-head .t-when, .export-chat .msg .who .t-when, .export-note .t-when"
    )
    said = [t.strip() for t in times.all_text_contents()]
    assert len(said) > 10
    assert all(WHEN.match(t) for t in said), [t for t in said if not WHEN.match(t)][:5]
    assert not problems, problems
    ctx.close()


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    from test_browser import ARGS, CHROMIUM

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
        yield b
        b.close()


def test_gemini_sessions_search_and_export_through_the_event_model(tmp_path):
    """A source added beside the first three (Gemini CLI) is searched and exported with
    no code of its own in either: both work on events."""
    import shutil

    from conftest import SAMPLES
    from huddle.core import Huddle
    from huddle.search import SearchIndex, attach
    from huddle.sources import Settings
    from huddle.views.search import search

    home = tmp_path / "gemini"
    for scenario in sorted((SAMPLES / "gemini").glob("*/home/.gemini")):
        shutil.copytree(scenario, home, dirs_exist_ok=True)
    cfg = Settings(folders={"gemini": str(home)}, huddle_home=str(tmp_path / "hh"))
    h = Huddle(cfg, sources=["gemini"])
    h.refresh()
    index = SearchIndex(cfg.huddle_home, cfg.folders)
    index.update(h)
    attach(h, index)
    said = 0
    for s in h.sessions():
        data, _ = export_data(h, s.key)
        md = render(data, "md").decode()
        for e in data["events"]:
            if e["kind"] == "say" and len(e["text"].split()) > 3:
                said += 1
                assert " ".join(e["text"].split()[:4]).replace("<", "&lt;") in " ".join(md.split())
                word = max(e["text"].split(), key=len).strip(".,:;!?`'\"()*")
                if word.isalpha():
                    assert any(r["session"] == s.id for r in search(h, word, limit=200)["results"]), word
        render(data, "html")
    assert said > 3


@pytest.mark.browser
def test_a_big_export_opens_at_once_and_draws_the_rest_as_it_is_read(tmp_path, browser):
    cfg, sid, main = web_corpus.one_session(tmp_path)
    web_corpus.lengthen(main, 3200)
    h = web_corpus.core(cfg)
    data, _ = export_data(h, sid)
    assert len(data["events"]) > 3000
    path = tmp_path / "big.html"
    path.write_bytes(render(data, "html"))
    pg = browser.new_page(viewport={"width": 1280, "height": 900})
    pg.goto(path.as_uri())
    pg.wait_for_selector("body[data-ready='1']")
    text = lambda: pg.evaluate("document.body.textContent")  # noqa: E731
    assert "Starting an investigator" in text()
    assert "history message 3199" not in text(), "drawn a chunk at a time"
    sub = pg.locator("details.sub").first
    assert sub.evaluate("d => d.querySelectorAll('.lane').length") == 0, "a sub-agent is drawn when opened"
    sub.evaluate("d => { d.open = true; }")
    expect(sub.locator(".lane .msg").first).to_be_attached()
    deadline = time.monotonic() + 60
    while "history message 3199" not in text() and time.monotonic() < deadline:
        pg.evaluate("window.scrollTo(0, document.body.scrollHeight)")
        pg.wait_for_timeout(50)
    assert "history message 3199" in text()
    pg.close()
