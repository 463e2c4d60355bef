"""The server's one write, POST /api/sessions/{id}/answer, on a real uvicorn: every way
a request that is not huddle's own page asking is refused, on loopback and off it, and
what gets through reaches the route (a 404 for a session that is not there)."""

from __future__ import annotations

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from huddle.core import Huddle
from huddle.server import ServerThread
from huddle.sources import Settings


@pytest.fixture(scope="module")
def srv(tmp_path_factory):
    root = tmp_path_factory.mktemp("answer-security")
    h = Huddle(Settings(folders={}, huddle_home=str(root / "hh")))
    h.refresh()
    with ServerThread(h) as s:
        yield s


def _info(srv) -> dict:
    return httpx.get(f"{srv.url}api/info").json()


def _post(
    srv, path="api/sessions/nosuch/answer", headers=None, body=b'{"request": 3, "choice": "allow"}', method="POST"
):
    base = {
        "content-type": "application/json",
        "origin": srv.url.rstrip("/"),
        "x-huddle-token": _info(srv)["answer_token"],
    }
    base.update(headers or {})
    h = {k: v for k, v in base.items() if v is not None}
    return httpx.request(method, f"{srv.url}{path}", headers=h, content=body, timeout=10)


def test_huddles_own_page_gets_through_to_the_route(srv):
    r = _post(srv)
    assert r.status_code == 404, r.text  # past every rule: the route says there is no such session
    r = _post(srv, body=b"not json")
    assert r.status_code == 400 and "not JSON" in r.json()["error"]
    r = _post(srv, body=b'{"request": 3, "choice": "maybe"}')
    assert r.status_code == 400 and '"choice" must be one of allow, deny, reply' in r.json()["error"]
    r = _post(srv, body=b'{"choice": "allow"}')
    assert r.status_code == 400 and '"request" must name the pending request' in r.json()["error"]
    r = _post(srv, body=b'{"request": 3, "choice": "allow", "input": "rm -rf /"}')
    assert r.status_code == 400 and '"input"' in r.json()["error"]


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
    r = _post(srv, headers=headers)
    assert r.status_code == status and words in r.json()["error"], r.text


def test_the_token_only_counts_in_its_header(srv):
    token = _info(srv)["answer_token"]
    cookie = {"cookie": f"huddle_token_{srv.port}={token}", "x-huddle-token": None}
    assert _post(srv, headers=cookie).status_code == 403
    r = httpx.post(
        f"{srv.url}api/sessions/nosuch/answer?token={token}",
        headers={"content-type": "application/json", "origin": srv.url.rstrip("/")},
        content=b'{"request": 3, "choice": "allow"}',
    )
    assert r.status_code == 403


def test_other_methods_and_paths_stay_read_only(srv):
    for method in ("PUT", "PATCH", "DELETE", "OPTIONS"):
        assert _post(srv, method=method).status_code == 405, method
    assert _post(srv, path="api/sessions/nosuch").status_code == 405
    assert _post(srv, path="api/sessions").status_code == 405
    assert _post(srv, path="api/sessions/x/answer/more").status_code == 405
    assert httpx.get(f"{srv.url}api/sessions/nosuch/answer").status_code == 405


def test_a_body_over_the_limit_is_refused(srv):
    big = b'{"request": 3, "choice": "reply", "text": "' + b"x" * (300 * 1024) + b'"}'
    r = _post(srv, body=big)
    assert r.status_code == 413 and "over" in r.json()["error"]


def test_a_cross_origin_page_cannot_read_the_token(srv):
    r = httpx.get(f"{srv.url}api/info", headers={"origin": "http://evil.example"})
    assert r.status_code == 403 and "answer_token" not in r.text
    r = httpx.get(f"{srv.url}api/info", headers={"sec-fetch-site": "cross-site"})
    assert r.status_code == 403


def test_off_loopback_the_write_wants_the_token_in_its_header(tmp_path):
    h = Huddle(Settings(folders={}, huddle_home=str(tmp_path / "hh")))
    h.refresh()
    with ServerThread(h, host="0.0.0.0", token="Access-Token-123") as s:
        url = f"http://127.0.0.1:{s.port}/"
        base = {"content-type": "application/json", "origin": url.rstrip("/")}
        body = b'{"request": 3, "choice": "allow"}'
        # the access cookie alone (what any request from that browser carries) is not enough
        cookie = {**base, "cookie": f"huddle_token_{s.port}=Access-Token-123"}
        assert httpx.post(f"{url}api/sessions/nosuch/answer", headers=cookie, content=body).status_code == 403
        info = httpx.get(f"{url}api/info", headers={"x-huddle-token": "Access-Token-123"}).json()
        assert info["answer_token"] == "Access-Token-123"
        ok = {**base, "x-huddle-token": "Access-Token-123"}
        assert httpx.post(f"{url}api/sessions/nosuch/answer", headers=ok, content=body).status_code == 404
        evil = {**ok, "origin": "http://evil.example"}
        assert httpx.post(f"{url}api/sessions/nosuch/answer", headers=evil, content=body).status_code == 403


@settings(max_examples=60, deadline=None)
@given(
    origin=st.sampled_from(["same", "", "http://evil.example", "null"]),
    site=st.sampled_from(["", "same-origin", "none", "same-site", "cross-site"]),
    token=st.sampled_from(["right", "", "wrong"]),
    ctype=st.sampled_from(["application/json", "application/json; charset=utf-8", "text/plain", ""]),
)
def test_only_the_whole_set_passes(srv, origin, site, token, ctype):
    headers = {
        "origin": srv.url.rstrip("/") if origin == "same" else (origin or None),
        "sec-fetch-site": site or None,
        "x-huddle-token": _info(srv)["answer_token"] if token == "right" else (token or None),
        "content-type": ctype or None,
    }
    passes = (
        origin == "same" and site in ("", "same-origin") and token == "right" and ctype.startswith("application/json")
    )
    assert (_post(srv, headers=headers).status_code == 404) == passes


def test_a_session_huddle_only_reads_is_not_answerable(tmp_path):
    import web_corpus

    settings, sid, _ = web_corpus.one_session(tmp_path)
    with ServerThread(web_corpus.core(settings)) as s:
        token = httpx.get(f"{s.url}api/info").json()["answer_token"]
        headers = {"content-type": "application/json", "origin": s.url.rstrip("/"), "x-huddle-token": token}
        r = httpx.post(
            f"{s.url}api/sessions/{sid}/answer", headers=headers, content=b'{"request": 1, "choice": "allow"}'
        )
        assert r.status_code == 409 and "huddle only reads this claude session" in r.json()["error"]
        row = next(x for x in httpx.get(f"{s.url}api/sessions").json()["sessions"] if x["id"] == sid)
        assert "answer" not in row  # the card says read-only
