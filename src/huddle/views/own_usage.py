"""huddle's own tokens: what huddle itself asked a model for (translation, opted in),
shown apart from every session's usage and never summed into it.

`huddle usage` (and GET /api/usage) carry it as `huddle_own`: its rows by what and
model, priced by the same table (views/pricing), and its totals. Read from
$HUDDLE_HOME/translate/cache.db (translate/store.py); nothing there, nothing shown.
"""

from __future__ import annotations

from typing import Any

from huddle.model.events import Usage
from huddle.translate.store import spent

from .pricing import Table


def own_usage(home: str, table: Table, since: float | None = None, until: float | None = None) -> dict[str, Any]:
    from .usage import Line

    lines: dict[tuple[str, str], Line] = {}
    total = Line()
    for r in spent(home, since, until) if home else ():
        u = Usage(input=r["input"], output=r["output"], cache_read=r["cache_read"], cache_write=r["cache_write"])
        cost = table.cost(r["model"], u)
        key = (r["what"], r["model"])
        line = lines.get(key)
        if line is None:
            line = lines[key] = Line({"what": r["what"], "via": r["via"]})
        line.add("huddle", r["t"], r["model"], u, cost)
        total.add("huddle", r["t"], r["model"], u, cost)
    rows = []
    for (what, model), line in sorted(lines.items()):
        d = {"key": what, "model": model, **line.info, **line.to_dict()}
        d.pop("sessions", None)
        d.pop("models", None)
        rows.append(d)
    totals = total.to_dict()
    totals.pop("sessions", None)
    return {"rows": rows, "totals": totals}


def with_own(
    data: dict[str, Any], home: str, table: Table, since: float | None = None, until: float | None = None
) -> dict[str, Any]:
    """The usage report with huddle's own tokens beside it (never in its rows or totals)."""
    data["huddle_own"] = own_usage(home, table, since, until)
    return data
