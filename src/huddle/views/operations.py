"""Each JSON operation declared once: its name (the command whose `--json` prints its
answer), its route, the parameters it takes and the view function that answers.

The server makes its routes from this table (server/app.py) and the command line's
twins answer through `Operation.answer` (cli/), so a parameter is read, checked and
worded in one place, and "the CLI's `--json` is exactly what the route returns" holds
by construction (tests/test_operations.py keeps it so). Times a user types are read by
one parser with one wording (views/when.py).

The routes that are more than a view's answer stay hand-written in server/app.py: the
board (`/api/sessions`: the watcher's rows, `?at=`, a hub's `?machine=`), `/api/info`,
the CSV and export downloads, the stream and the two POSTs.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

from huddle.io import answers

JSON = dict[str, Any]

# The bounds and defaults of the counts a route takes (the views' own defaults too).
EVENTS_LIMIT, EVENTS_MAX = 1000, 5000
TRANSCRIPT_LIMIT, TRANSCRIPT_MAX = 50, 500
SEARCH_LIMIT, SEARCH_MAX = 20, 500
DAYS_MAX = 3660
NAME_MAX = 300  # an agent's or a project's name as a filter
TRUE = (True, "1", "true", "yes")


# (NamedTuples, not dataclasses: `status --json` said from its stored answer reads its
# name here, and dataclasses would cost that path 20 ms of imports)
class Param(NamedTuple):
    """A query parameter, by the view's keyword name, and what it is: read and checked
    here once, whichever door it came through, and given to the view typed.
    `kind`: text (as given), int (lo..hi, `default` when absent), time (views/when.py:
    unix seconds), flag (a bool), name (a filter: text up to NAME_MAX), or choice (one
    of `choices`, `default` when absent)."""

    name: str
    kind: str = "text"
    lo: int = 0
    hi: int = 1 << 53
    default: Any = None
    choices: tuple[str, ...] = ()

    def read(self, value: object) -> Any:
        from huddle.errors import BadRequest

        from .lookup import check_int
        from .when import user_time

        if value is None or value == "":
            return self.default if self.kind != "flag" else False
        if self.kind == "int":
            return check_int(value, self.name, self.lo, self.hi, default=self.default)
        if self.kind == "time":
            return (
                float(value)
                if isinstance(value, (int, float)) and not isinstance(value, bool)
                else user_time(value, self.name)
            )
        if self.kind == "flag":
            return value in TRUE
        if self.kind == "name" and not (isinstance(value, str) and len(value) <= NAME_MAX):
            raise BadRequest(f"bad {self.name}: {str(value)[:40]!r}")
        if self.kind == "choice" and value not in self.choices:
            raise BadRequest(f"bad {self.name}: {str(value)[:40]!r} (want {', '.join(self.choices)})")
        return value


class Operation(NamedTuple):
    name: str  # the CLI command (its --json twin)
    route: str  # GET, its {path} parameters passed first, in order
    params: tuple[Param, ...]  # query parameters
    view: str  # "module:function" under huddle.views, imported when first asked
    takes: str = "core"  # what the view is given first: the core, its settings, or nothing
    locked: bool = True  # under the core's lock (a view with its own store takes it itself when it must)
    many: tuple[str, ...] = ()  # repeatable (?kind=a&kind=b): joined with commas, as the CLI's option
    stored: str = ""  # the stored answer it is said from while nothing it hangs on moved (io/answers.py)
    by_hand: bool = False  # its route written by hand (the board: the watcher's rows, views/select.py's filters)

    @property
    def path_params(self) -> tuple[str, ...]:
        return tuple(re.findall(r"{(\w+)}", self.route))

    def function(self) -> Callable[..., JSON]:
        module, name = self.view.split(":")
        fn: Callable[..., JSON] = getattr(importlib.import_module(f"huddle.views.{module}"), name)
        return fn

    def read(self, **given: object) -> dict[str, Any]:
        """The query parameters given (by name; missing ones absent), read and checked
        (Param.read): what the view is given."""
        unknown = set(given) - {p.name for p in self.params}
        if unknown:
            raise TypeError(f"{self.name} takes no {', '.join(sorted(unknown))}")
        return {p.name: p.read(given.get(p.name)) for p in self.params}

    def answer(self, on: Any, **given: object) -> JSON:
        """The answer to these parameters (path and query, by name; missing ones None),
        from `on`: the core, or the settings for a view that takes them (`takes`)."""
        args = [given.pop(p) for p in self.path_params]
        kw = self.read(**given)
        fn = self.function()
        first = () if self.takes == "none" else (on,)
        if self.takes != "core" or not self.locked:
            return fn(*first, *args, **kw)
        with on.lock:
            return fn(*first, *args, **kw)

    def from_query(self, h: Any, path: Mapping[str, str], query: Any) -> JSON:
        """The answer to a request: `path` its path parameters, `query` its query string
        (a starlette QueryParams: `get`, `getlist`)."""
        given: dict[str, object] = {p: path[p] for p in self.path_params}
        for p in self.params:
            given[p.name] = ",".join(query.getlist(p.name)) or None if p.name in self.many else query.get(p.name)
        return self.answer(h.settings if self.takes == "settings" else h, **given)


SESSION = "/api/sessions/{id}"
AFTER, BEFORE = Param("after", "int"), Param("before", "int")
SINCE, UNTIL = Param("since", "time"), Param("until", "time")
AGENT, PROJECT = Param("agent", "name"), Param("project", "name")
GROUPS = ("day", "session", "project", "model", "agent")  # huddle.usage.report's groupings

OPERATIONS: tuple[Operation, ...] = (
    # the board: its filters (?state=&project=&since=, the same options) are views/select.py's
    Operation("status", "/api/sessions", (), "api:sessions", stored=answers.STORED["status"], by_hand=True),
    Operation("show", SESSION, (), "api:session_detail"),
    Operation(
        "events",
        SESSION + "/events",
        (Param("after", "int", default=-1), Param("limit", "int", 1, EVENTS_MAX, EVENTS_LIMIT)),
        "api:events",
    ),
    Operation("transcripts", SESSION + "/transcripts", (), "api:transcripts"),
    Operation(
        "transcript",
        SESSION + "/transcript",
        (Param("agent"), Param("limit", "int", 1, TRANSCRIPT_MAX, TRANSCRIPT_LIMIT), AFTER, BEFORE, Param("around")),
        "api:transcript",
    ),
    Operation("content", SESSION + "/content/{ref}", (), "api:content"),
    Operation(
        "usage",
        "/api/usage",
        (Param("by", "choice", default="day", choices=GROUPS), SINCE, UNTIL, AGENT, PROJECT),
        "api:usage",
        stored=answers.STORED["usage"],
    ),
    # the index takes the core's lock only to read snippets back: a query waiting on the
    # indexing thread's write never holds up refreshes
    Operation(
        "search",
        "/api/search",
        (
            Param("q"),
            Param("source"),
            Param("project", "name"),
            Param("session"),
            Param("kind"),
            SINCE,
            UNTIL,
            Param("limit", "int", 1, SEARCH_MAX, SEARCH_LIMIT),
            Param("rank", "flag"),
            Param("exact", "flag"),
        ),
        "search:search",
        locked=False,
        many=("kind",),
    ),
    Operation(
        "overview",
        "/api/overview",
        (Param("agent"), PROJECT, SINCE, UNTIL, Param("days", "int", 1, DAYS_MAX), Param("tz")),
        "overview:served",
        takes="settings",
        locked=False,
    ),
    Operation("doctor", "/api/doctor", (), "doctor:doctor"),
    Operation("limits", "/api/limits", (), "limits:report_for", takes="settings", locked=False),
    Operation("pins", "/api/pins", (), "pins:pins_json", takes="settings", locked=False),
    Operation("agents", "/api/agents", (), "api:agents", takes="none", locked=False),
)

BY_NAME = {op.name: op for op in OPERATIONS}
