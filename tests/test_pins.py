"""Pins: POST /api/sessions/{id}/pin passes every rule the answer write passes (refused
otherwise, on a real uvicorn), the file is under $HUDDLE_HOME only (0600, never in an
agent's folder, a damaged one set aside), `huddle pin` and the route agree, and the board
shows pinned sessions first with a filter for them (Debian's Chromium)."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from playwright.sync_api import expect

import web_corpus
from conftest import fingerprint
from huddle.core import Huddle
from huddle.errors import Forbidden
from huddle.server import ServerThread
from huddle.sources import Settings
from huddle.views import pins
from test_browser import browser, page  # noqa: F401  (the shared Chromium fixtures)


@pytest.fixture(scope="module")
def srv(tmp_path_factory):
    root = tmp_path_factory.mktemp("pins")
    cfg, sid, _main = web_corpus.one_session(root)
    with ServerThread(web_corpus.core(cfg)) as s:
        yield s, cfg, sid


def _info(s) -> dict:
    return httpx.get(f"{s.url}api/info").json()


def _post(s, sid="nosuch", headers=None, body=b'{"pinned": true}', method="POST", path=None):
    base = {"content-type": "application/json", "origin": s.url.rstrip("/"), "x-huddle-token": _info(s)["answer_token"]}
    base.update(headers or {})
    h = {k: v for k, v in base.items() if v is not None}
    return httpx.request(method, f"{s.url}{path or f'api/sessions/{sid}/pin'}", headers=h, content=body, timeout=10)


def test_huddles_own_page_pins_and_unpins(srv):
    s, _cfg, sid = srv
    r = _post(s, sid)
    assert r.status_code == 200, r.text
    key = f"claude:{sid}"
    assert r.json()["pinned"] is True and [p["key"] for p in r.json()["pins"]] == [key]
    assert [p["key"] for p in httpx.get(f"{s.url}api/pins").json()["pins"]] == [key]
    r = _post(s, sid[:8], body=b'{"pinned": false}')  # a unique start of the id names it too
    assert r.status_code == 200 and r.json()["pinned"] is False and r.json()["pins"] == []
    assert _post(s, "nosuch").status_code == 404
    r = _post(s, sid, body=b"not json")
    assert r.status_code == 400 and "not JSON" in r.json()["error"]
    for body in (b'{"pinned": "yes"}', b"{}", b"[true]", b"null"):
        r = _post(s, sid, body=body)
        assert r.status_code == 400 and '{"pinned": true}' in r.json()["error"], body


@pytest.mark.parametrize(
    "headers, status, words",
    [
        ({"origin": None}, 403, "no Origin header"),
        ({"origin": "http://evil.example"}, 403, "cross-origin"),
        ({"origin": "http://localhost.evil.example"}, 403, "cross-origin"),
        ({"sec-fetch-site": "cross-site"}, 403, "cross-site"),
        ({"sec-fetch-site": "same-site"}, 403, "cross-site"),
        ({"sec-fetch-site": "none"}, 403, "same-origin request"),
        ({"x-huddle-token": None}, 403, "answer token"),
        ({"x-huddle-token": "guess"}, 403, "answer token"),
        ({"content-type": "text/plain"}, 415, "JSON body"),
        ({"content-type": "application/x-www-form-urlencoded"}, 415, "JSON body"),
        ({"content-type": "multipart/form-data; boundary=x"}, 415, "JSON body"),
        ({"content-type": None}, 415, "JSON body"),
        ({"host": "evil.example:80"}, 403, "unknown Host"),
    ],
)
def test_every_refusal(srv, headers, status, words):
    s, _cfg, sid = srv
    r = _post(s, sid, headers=headers)
    assert r.status_code == status and words in r.json()["error"], r.text
    assert httpx.get(f"{s.url}api/pins").json()["pins"] == []  # refused: nothing was pinned


def test_the_token_only_counts_in_its_header(srv):
    s, _cfg, sid = srv
    token = _info(s)["answer_token"]
    assert (
        _post(s, sid, headers={"cookie": f"huddle_token_{s.port}={token}", "x-huddle-token": None}).status_code == 403
    )
    r = httpx.post(
        f"{s.url}api/sessions/{sid}/pin?token={token}",
        headers={"content-type": "application/json", "origin": s.url.rstrip("/")},
        content=b'{"pinned": true}',
    )
    assert r.status_code == 403


def test_other_methods_and_paths_stay_read_only(srv):
    s, _cfg, sid = srv
    for method in ("PUT", "PATCH", "DELETE", "OPTIONS"):
        assert _post(s, sid, method=method).status_code == 405, method
    assert _post(s, path="api/pins").status_code == 405
    assert _post(s, path=f"api/sessions/{sid}/pin/more").status_code == 405
    assert _post(s, path=f"api/sessions/{sid}/pins").status_code == 405
    assert httpx.get(f"{s.url}api/sessions/{sid}/pin").status_code == 405


def test_a_body_over_the_limit_is_refused(srv):
    s, _cfg, sid = srv
    r = _post(s, sid, body=b'{"pinned": true, "x": "' + b"x" * (300 * 1024) + b'"}')
    assert r.status_code == 413 and "over" in r.json()["error"]


@settings(max_examples=40, deadline=None)
@given(
    origin=st.sampled_from(["same", "", "http://evil.example", "null"]),
    site=st.sampled_from(["", "same-origin", "none", "same-site", "cross-site"]),
    token=st.sampled_from(["right", "", "wrong"]),
    ctype=st.sampled_from(["application/json", "application/json; charset=utf-8", "text/plain", ""]),
)
def test_only_the_whole_set_passes(srv, origin, site, token, ctype):
    s, _cfg, _sid = srv
    headers = {
        "origin": s.url.rstrip("/") if origin == "same" else (origin or None),
        "sec-fetch-site": site or None,
        "x-huddle-token": _info(s)["answer_token"] if token == "right" else (token or None),
        "content-type": ctype or None,
    }
    passes = (
        origin == "same" and site in ("", "same-origin") and token == "right" and ctype.startswith("application/json")
    )
    assert (_post(s, "nosuch", headers=headers).status_code == 404) == passes


def test_off_loopback_a_pin_wants_the_token_in_its_header(tmp_path):
    cfg, sid, _main = web_corpus.one_session(tmp_path)
    with ServerThread(web_corpus.core(cfg), host="0.0.0.0", token="Access-Token-123") as s:
        url = f"http://127.0.0.1:{s.port}/"
        base = {"content-type": "application/json", "origin": url.rstrip("/")}
        cookie = {**base, "cookie": f"huddle_token_{s.port}=Access-Token-123"}
        assert (
            httpx.post(f"{url}api/sessions/{sid}/pin", headers=cookie, content=b'{"pinned": true}').status_code == 403
        )
        ok = {**base, "x-huddle-token": "Access-Token-123"}
        assert httpx.post(f"{url}api/sessions/{sid}/pin", headers=ok, content=b'{"pinned": true}').status_code == 200


def test_the_file_is_the_users_alone_and_never_in_an_agents_folder(tmp_path):
    cfg, sid, _main = web_corpus.one_session(tmp_path)
    before = fingerprint(tmp_path / "claude")
    env = {**os.environ, **cfg.env()}
    out = subprocess.run([sys.executable, "-m", "huddle", "pin", sid[:8]], capture_output=True, text=True, env=env)
    assert out.returncode == 0 and f"pinned claude:{sid}" in out.stdout, out.stderr
    p = os.path.join(cfg.huddle_home, "pins.json")
    assert stat.S_IMODE(os.stat(p).st_mode) == 0o600
    assert fingerprint(tmp_path / "claude") == before  # nothing written where the agent's files are
    listed = subprocess.run([sys.executable, "-m", "huddle", "pins", "--json"], capture_output=True, text=True, env=env)
    with ServerThread(web_corpus.core(cfg)) as s:
        assert json.loads(listed.stdout) == httpx.get(f"{s.url}api/pins").json()
    assert [p["key"] for p in json.loads(listed.stdout)["pins"]] == [f"claude:{sid}"]
    inside = Settings(folders=cfg.folders, huddle_home=str(tmp_path / "claude" / "hh"))
    with pytest.raises(Forbidden, match="inside claude's folder"):
        pins.set_pin(inside, f"claude:{sid}", True)
    assert not (tmp_path / "claude" / "hh").exists()
    out = subprocess.run(
        [sys.executable, "-m", "huddle", "pin", sid], capture_output=True, text=True, env={**env, **inside.env()}
    )
    assert out.returncode == 1 and "inside claude's folder" in out.stderr and "Traceback" not in out.stderr


def test_a_damaged_file_is_set_aside_not_lost(tmp_path):
    cfg = Settings(folders={"claude": str(tmp_path / "claude")}, huddle_home=str(tmp_path / "hh"))
    os.makedirs(cfg.huddle_home)
    p = os.path.join(cfg.huddle_home, "pins.json")
    with open(p, "w") as f:
        f.write('{"format": "huddle-pins/1", "pins": {')
    assert pins.pins_json(cfg)["notes"] == [f"{p}: not JSON"]
    notes = pins.set_pin(cfg, "claude:abc", True)
    assert notes and "set aside" in notes[0]
    with open(p + ".damaged") as f:
        assert f.read().endswith('"pins": {')
    assert [r["key"] for r in pins.pins_json(cfg)["pins"]] == ["claude:abc"]


def test_pinned_sessions_come_first_and_a_chip_shows_only_them(tmp_path, page):  # noqa: F811
    settings_ = web_corpus.build(tmp_path, codex=False, vibe=False)
    h = Huddle(settings_)
    with ServerThread(h) as s:
        page.goto(s.url)
        page.wait_for_selector("#rows tr")
        ids = page.eval_on_selector_all("#rows tr[data-id]", "trs => trs.map(t => t.dataset.id)")
        last = ids[-1]
        row = page.locator(f'#rows tr[data-id="{last}"]')
        row.hover()
        row.locator("button.pin").click()
        expect(page.locator("#rows tr[data-id]").first).to_have_attribute("data-id", last)
        expect(row.locator("button.pin")).to_have_attribute("aria-pressed", "true")
        assert [p["id"] for p in httpx.get(f"{s.url}api/pins").json()["pins"]] == [last]
        page.locator("#f-pinned").click()
        expect(page.locator("#rows tr[data-id]")).to_have_count(1)
        assert "pinned=1" in page.url
        page.reload()
        expect(page.locator("#rows tr[data-id]")).to_have_count(1)  # the filter lives in the address
        page.locator("#f-pinned").click()
        expect(page.locator("#rows tr[data-id]")).to_have_count(len(ids))
        # from the keyboard: `p` on the selected row (the first, the pinned one) unpins it
        page.locator("body").click(position={"x": 5, "y": 5})
        page.keyboard.press("p")
        expect(page.locator(f'#rows tr[data-id="{last}"] button.pin')).to_have_attribute("aria-pressed", "false")
        assert httpx.get(f"{s.url}api/pins").json()["pins"] == []
