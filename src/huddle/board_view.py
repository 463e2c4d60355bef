"""The board as a table in the terminal."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table


def print_table(data: dict, console: Console | None = None) -> None:
    console = console or Console()
    t = Table(box=None, pad_edge=False)
    for col in ("state", "source", "title", "project", "agents", "tokens", "updated"):
        t.add_column(col)
    for s in data.get("sessions", []):
        u = s.get("usage", {})
        tokens = sum(u.get(k, 0) for k in ("input", "output", "cache_read", "cache_write"))
        t.add_row(
            s.get("state", ""),
            s.get("source", ""),
            (s.get("title") or "")[:60] + (" [error]" if s.get("error") else ""),
            s.get("project", ""),
            str(len(s.get("agents", []))),
            f"{tokens:,}",
            (s.get("updated_at") or "")[:19].replace("T", " "),
        )
    console.print(t)
