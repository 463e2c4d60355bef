"""The security middleware on hostile headers: only the served loopback Host and
same-origin requests get through; with a token, nothing gets through without it."""

from __future__ import annotations

import asyncio

import httpx
from hypothesis import given, settings
from hypothesis import strategies as st

from huddle.server.security import Security, allowed_hosts

PORT = 8123
SERVED = allowed_hosts("127.0.0.1", PORT)


async def _ok_app(scope, receive, send):
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b"ok"})


def _status(app, headers: dict, path: str = "/api/sessions") -> int:
    async def go():
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url=f"http://127.0.0.1:{PORT}") as c:
            return (await c.get(path, headers=headers)).status_code

    return asyncio.run(go())


header_text = st.text(alphabet=st.characters(min_codepoint=33, max_codepoint=126), min_size=1, max_size=40)


@settings(max_examples=150, deadline=None)
@given(host=header_text)
def test_only_the_served_hosts_pass(host):
    app = Security(_ok_app, hosts=SERVED, token=None, port=PORT)
    assert (_status(app, {"host": host}) == 200) == (host in SERVED)


@settings(max_examples=150, deadline=None)
@given(origin=header_text, site=st.sampled_from(["", "same-origin", "none", "same-site", "cross-site"]))
def test_only_same_origin_passes(origin, site):
    app = Security(_ok_app, hosts=SERVED, token=None, port=PORT)
    headers = {"host": f"127.0.0.1:{PORT}", "origin": origin}
    if site:
        headers["sec-fetch-site"] = site
    ok = origin == f"http://127.0.0.1:{PORT}" and site not in ("same-site", "cross-site")
    assert (_status(app, headers) == 200) == ok


@settings(max_examples=150, deadline=None)
@given(
    given_token=st.text(alphabet=st.characters(min_codepoint=33, max_codepoint=126), max_size=40),
    where=st.sampled_from(["header", "bearer", "cookie", "query"]),
)
def test_a_token_server_wants_the_exact_token(given_token, where):
    token = "T0ken-abc"
    app = Security(_ok_app, hosts=None, token=token, port=PORT)
    headers, path = {"host": "192.168.1.9:8123"}, "/api/sessions"
    if where == "header":
        headers["x-huddle-token"] = given_token
    elif where == "bearer":
        headers["authorization"] = f"Bearer {given_token}"
    elif where == "cookie":
        headers["cookie"] = f"huddle_token_{PORT}={given_token}"
    else:
        path += "?" + httpx.QueryParams({"token": given_token}).__str__()
    status = _status(app, headers, path)
    if where == "cookie":
        given_token = given_token.split(";")[0]  # what follows a ";" is another cookie
    if given_token == token:
        assert status == (303 if where == "query" else 200)
    else:
        assert status == 401
