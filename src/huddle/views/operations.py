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
from dataclasses import dataclass
from typing import Any

JSON = dict[str, Any]


@dataclass(frozen=True)
class Operation:
    name: str  # the CLI command (its --json twin)
    route: str  # GET, its {path} parameters passed first, in order
    params: tuple[str, ...]  # query parameters, by the view's keyword names
    view: str  # "module:function" under huddle.views, imported when first asked
    takes: str = "core"  # what the view is given first: the core, its settings, or nothing
    locked: bool = True  # under the core's lock (a view with its own store takes it itself when it must)
    many: tuple[str, ...] = ()  # repeatable (?kind=a&kind=b): joined with commas, as the CLI's option

    @property
    def path_params(self) -> tuple[str, ...]:
        return tuple(re.findall(r"{(\w+)}", self.route))

    def function(self) -> Callable[..., JSON]:
        module, name = self.view.split(":")
        fn: Callable[..., JSON] = getattr(importlib.import_module(f"huddle.views.{module}"), name)
        return fn

    def answer(self, on: Any, **given: object) -> JSON:
        """The answer to these parameters (path and query, by name; missing ones None),
        from `on`: the core, or the settings for a view that takes them (`takes`)."""
        args = [given.pop(p) for p in self.path_params]
        unknown = set(given) - set(self.params)
        if unknown:
            raise TypeError(f"{self.name} takes no {', '.join(sorted(unknown))}")
        kw = {p: given.get(p) for p in self.params}
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
            given[p] = ",".join(query.getlist(p)) or None if p in self.many else query.get(p)
        return self.answer(h.settings if self.takes == "settings" else h, **given)


SESSION = "/api/sessions/{id}"

OPERATIONS: tuple[Operation, ...] = (
    Operation("show", SESSION, (), "api:session_detail"),
    Operation("events", SESSION + "/events", ("after", "limit"), "api:events"),
    Operation("transcripts", SESSION + "/transcripts", (), "api:transcripts"),
    Operation("transcript", SESSION + "/transcript", ("agent", "limit", "after", "before", "around"), "api:transcript"),
    Operation("content", SESSION + "/content/{ref}", (), "api:content"),
    Operation("usage", "/api/usage", ("by", "since", "until", "agent", "project"), "api:usage"),
    # the index takes the core's lock only to read snippets back: a query waiting on the
    # indexing thread's write never holds up refreshes
    Operation(
        "search",
        "/api/search",
        ("q", "source", "project", "session", "kind", "since", "until", "limit", "rank", "exact"),
        "search:search",
        locked=False,
        many=("kind",),
    ),
    Operation(
        "overview",
        "/api/overview",
        ("agent", "project", "since", "until", "days", "tz"),
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
