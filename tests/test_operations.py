"""Operations declared once (views/operations.py): the server's JSON routes are the
table's, the CLI's --json twins answer what the routes answer, and a time a user types
is refused in one wording through every door."""

from __future__ import annotations

import json
import os

import httpx
import pytest

import incli
import web_corpus
from huddle.core import Huddle
from huddle.server import ServerThread, create_app
from huddle.sources import Settings
from huddle.views.operations import BY_NAME, OPERATIONS
from huddle.views.when import FORMS

# the JSON routes that are more than a view's answer (server/app.py says why)
HAND_WRITTEN = {"/api/info", "/api/sessions", "/api/overview.csv", "/api/sessions/{id}/export", "/api/stream"}
POSTS = {"/api/sessions/{id}/answer", "/api/sessions/{id}/pin"}


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """A server and the command line on the same environment: the samples' agents, and a
    home of their own for every other agent's default folder."""
    root = tmp_path_factory.mktemp("ops")
    env = {**web_corpus.env_of(web_corpus.build(root)), "HOME": str(root / "home")}
    with pytest.MonkeyPatch.context() as mp:
        for k, v in env.items():
            mp.setenv(k, v)
        h = Huddle(Settings.from_env())
        h.refresh()
    with ServerThread(h, watch_options={"poll_watched": 0.5}) as srv, httpx.Client(base_url=srv.url, timeout=60) as c:
        yield env, srv, c


def _cli(env, *args, ok=True):
    out = incli.huddle(*args, env={**os.environ, **env})
    if ok:
        assert out.returncode == 0, out.stderr
        return json.loads(out.stdout)
    return out


def test_the_routes_are_the_table_and_the_hand_written_ones(tmp_path):
    app = create_app(web_corpus.core(Settings(folders={}, huddle_home=str(tmp_path))))
    api = {r.path for r in app.routes if getattr(r, "path", "").startswith("/api/")}
    extras = {p for p in api if p.startswith(("/api/voice", "/api/translation")) or p.endswith("/translation")}
    table = {op.route for op in OPERATIONS}
    assert len(table) == len(OPERATIONS) and len({op.name for op in OPERATIONS}) == len(OPERATIONS)
    assert api - extras == table | HAND_WRITTEN | POSTS
    for op in OPERATIONS:
        assert callable(op.function()), op.view


def test_every_cli_twin_prints_what_its_route_returns(served):
    env, _srv, client = served
    board = client.get("/api/sessions").json()
    row = next(r for r in board["sessions"] if len(r["agents"]) == 4)
    sid, sub = row["id"], row["agents"][2]["id"]
    base = f"/api/sessions/{sid}"
    page = client.get(base + "/transcript", params={"agent": sub, "limit": 3}).json()
    ref = next(m["ref"] for m in page["messages"] if "ref" in m)
    twins = [
        (["show", sid], base, {}),
        (["events", sid, "--after", "2", "--limit", "4"], base + "/events", {"after": 2, "limit": 4}),
        (["transcripts", sid], base + "/transcripts", {}),
        (["transcript", sid, "--agent", sub, "--limit", "3"], base + "/transcript", {"agent": sub, "limit": 3}),
        (["content", sid, ref], f"{base}/content/{ref}", {}),
        (["doctor"], "/api/doctor", {}),
        (["pins"], "/api/pins", {}),
        (["usage", "--limits"], "/api/limits", {}),
    ]
    for args, route, params in twins:
        assert _timeless(_cli(env, *args, "--json")) == _timeless(client.get(route, params=params).json()), args


def _timeless(data: dict) -> dict:
    """An answer without what moves with the clock alone (the quotas' `at`, paces, and an
    estimate's `seen_at`: the estimate is made now)."""
    if "at" in data and "agents" in data:
        data = {**data, "at": None}
        data["agents"] = [
            {
                **a,
                "windows": [
                    {**w, "pace": None, "seen_at": w["estimate"] or w["seen_at"]} for w in a.get("windows", [])
                ],
            }
            for a in data["agents"]
        ]
    return data


@pytest.mark.parametrize("value", ["soonish", "2026-13-01"])
def test_a_bad_time_is_said_alike_through_every_door(served, value):
    env, _srv, client = served
    said = f"bad since: {value!r} ({FORMS})"
    for route in ("/api/sessions", "/api/usage", "/api/search", "/api/overview"):
        r = client.get(route, params={"since": value, "q": "hello"})
        assert r.status_code == 400 and r.json()["error"] == said, route
    for args in (["status", "--since", value], ["usage", "--since", value], ["overview", "--since", value]):
        out = _cli(env, *args, ok=False)
        assert out.returncode == 2 and said in out.stderr and "Traceback" not in out.stderr, args


def test_every_declared_parameter_is_a_keyword_of_its_view():
    """The table reads each parameter once and gives it to the view by name: every name it
    declares is one the view takes (the overview takes them as **given and checks them
    together: its own tests say them)."""
    import inspect

    for op in OPERATIONS:
        sig = inspect.signature(op.function())
        assert not (op.by_hand and op.params), op.name  # (a hand-written route reads its own)
        if any(p.kind is p.VAR_KEYWORD for p in sig.parameters.values()):
            continue
        assert {p.name for p in op.params} <= set(sig.parameters) - set(op.path_params), op.name
    from huddle.usage.report import GROUPS

    assert BY_NAME["usage"].params[0].choices == GROUPS


def test_the_stored_answers_are_the_tables():
    """Each stored answer is named once, by the operation it answers (io/answers.py keeps
    the file names; the caches drop the ones their entries feed)."""
    from huddle.core.cache import ANSWERS
    from huddle.io import answers

    stored = {op.name: op.stored for op in OPERATIONS if op.stored}
    assert stored == {"status": answers.STATUS, "usage": answers.USAGE}
    assert set(ANSWERS.values()) == set(stored.values())


@pytest.mark.parametrize(
    "op, given, said",
    [
        ("events", {"limit": "0"}, "bad limit: 0 (want 1 to 5000)"),
        ("events", {"after": "x"}, "bad after: 'x' (want a whole number)"),
        ("transcript", {"limit": "501"}, "bad limit: 501 (want 1 to 500)"),
        ("search", {"limit": "9999"}, "bad limit: 9999 (want 1 to 500)"),
        ("usage", {"by": "week"}, "bad by: 'week' (want day, session, project, model, agent)"),
        ("overview", {"days": "0"}, "bad days: 0 (want 1 to 3660)"),
    ],
)
def test_a_bad_parameter_is_said_by_the_table_for_the_route_and_the_command(served, op, given, said):
    """The table reads a parameter before any view: the route answers 400 with its words,
    and `Operation.answer` (what the CLI twins call) raises the same."""
    from huddle.errors import BadRequest

    _env, _srv, client = served
    o = BY_NAME[op]
    sid = client.get("/api/sessions").json()["sessions"][0]["id"]
    route = o.route.replace("{id}", sid)
    r = client.get(route, params=given)
    assert r.status_code == 400 and r.json()["error"] == said, (route, r.text)
    with pytest.raises(BadRequest) as exc:
        o.read(**given)
    assert str(exc.value) == said
