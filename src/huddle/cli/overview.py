"""`huddle overview`: a history at a glance (what GET /api/overview returns)."""

from __future__ import annotations

import click

from huddle.oneshot import say_json
from huddle.views.overview_tables import TABLES


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print what GET /api/overview returns.")
@click.option("--agent", default=None, metavar="NAME", help="Only this agent's sessions (claude, codex, vibe...).")
@click.option("--project", default=None, metavar="NAME", help="Only sessions of this project (the folder's name).")
@click.option("--since", default=None, metavar="DATE", help="From this UTC day on (YYYY-MM-DD).")
@click.option("--until", default=None, metavar="DATE", help="Before this UTC day (YYYY-MM-DD).")
@click.option("--days", default=None, type=int, metavar="N", help="The last N UTC days, today's included.")
@click.option(
    "--tz", default=None, metavar="ZONE", help="Hours and weekdays in this time zone (default: this machine's)."
)
@click.option("--csv", "csv_table", default=None, type=click.Choice(TABLES), help="Print one table as CSV.")
def overview(as_json, agent, project, since, until, days, tz, csv_table) -> None:
    """Sessions, messages, active days and cost; activity by day, hour and weekday; the
    top sessions; tool use; cost over time by model, agent and project."""
    from huddle.errors import BadRequest
    from huddle.oneshot import prices
    from huddle.sources import Settings
    from huddle.views.operations import BY_NAME
    from huddle.views.overview import overview as run
    from huddle.views.overview_tables import to_csv

    settings = Settings.from_env()
    table = prices(settings)
    if table is None:
        raise SystemExit(1)
    try:
        given = BY_NAME["overview"].read(agent=agent, project=project, since=since, until=until, days=days, tz=tz)
        data = run(settings, table, **given)
    except BadRequest as exc:
        raise click.UsageError(str(exc)) from None
    if csv_table:
        click.echo(to_csv(data, csv_table), nl=False)
    elif as_json:
        say_json(data)
    else:
        show(data)


def _usd(v: float | None) -> str:
    return "?" if v is None else f"${v:,.2f}"


def _span(seconds: float) -> str:
    m = int(seconds // 60)
    return f"{m // 60}h{m % 60:02d}" if m >= 60 else f"{m} min"


def show(data: dict, console=None) -> None:
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    console = console or Console()
    st, f = data["stats"], data["filters"]
    where = " · ".join(x for x in (f["agent"], f["project"]) if x) or "every agent and project"
    since = (f["since"] or "the start")[:10]
    until = (f["until"] or "now")[:10]
    console.print(Text(f"{where}, {since} to {until} (hours in {f['tz']})", style="dim"))
    console.print(
        Text(
            f"{st['sessions']:,} sessions · {st['messages']:,} messages · {st['active_days']:,} active days · "
            f"{st['tool_calls']:,} tool calls ({st['tool_errors']:,} failed) · {st['tokens']:,} tokens · "
            f"{_usd(st['cost_usd'])}",
            style="bold",
        )
    )
    peak = max(data["hours"], key=lambda h: h["activity"])
    busiest = max(data["weekdays"], key=lambda d: d["activity"])
    if peak["activity"]:
        console.print(f"busiest hour {peak['hour']:02d}:00, busiest day {busiest['name']}")
    for what, label in (("tokens", "tokens"), ("cost", "cost"), ("duration", "time active")):
        rows = data["top_sessions"][what][:5]
        if not rows:
            continue
        t = Table(title=f"top sessions by {label}", title_justify="left", box=None, header_style="bold")
        for col in ("session", "agent", "tokens", "cost", "active"):
            t.add_column(col, justify="right" if col in ("tokens", "cost", "active") else "left")
        for r in rows:
            name = (r["title"] or r["id"])[:60]
            t.add_row(name, r["source"], f"{r['tokens']:,}", _usd(r["cost_usd"]), _span(r["active_s"]))
        console.print(t)
    if data["tools"]:
        t = Table(title="tool use", title_justify="left", box=None, header_style="bold")
        for col in ("tool", "agent", "calls", "errors"):
            t.add_column(col, justify="right" if col in ("calls", "errors") else "left")
        for r in data["tools"][:10]:
            t.add_row(r["tool"], r["agent"], f"{r['calls']:,}", f"{r['errors']:,}")
        console.print(t)
    for n in data["notes"]:
        console.print(Text(n, style="dim"))


COMMANDS = [overview]
