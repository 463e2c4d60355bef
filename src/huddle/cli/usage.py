"""`huddle usage`: tokens and cost of all sessions, as a table or as JSON."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from huddle.oneshot import say_json
from huddle.usage.report import GROUPS

if TYPE_CHECKING:
    from .table import Cell, Column


def time_option(given: str | None, option: str) -> float | None:
    """A --since/--until time as unix seconds (None: not given), in the routes' wording."""
    from huddle.errors import BadRequest
    from huddle.views.when import user_time

    try:
        return user_time(given, option.lstrip("-"))
    except BadRequest as exc:
        raise click.BadParameter(str(exc), param_hint=option) from None


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON (what usage.report() returns).")
@click.option(
    "--by",
    "by",
    type=click.Choice((*GROUPS, "machine")),
    default="day",
    show_default=True,
    help="Group by UTC day, session, project, model or agent type (or machine, with --hub).",
)
@click.option(
    "--since",
    "since",
    default=None,
    metavar="DATE",
    help="Only usage at or after DATE (YYYY-MM-DD, UTC) or an ISO 8601 time.",
)
@click.option("--until", "until", default=None, metavar="DATE", help="Only usage before DATE (same forms as --since).")
@click.option("--agent", default=None, metavar="NAME", help="Only this agent's sessions (claude, codex, vibe...).")
@click.option("--project", default=None, metavar="NAME", help="Only sessions of this project (the folder's name).")
@click.option("--hub", "hub", default=None, metavar="DSN", help="Every machine's usage, from a PostgreSQL hub.")
@click.option("--machine", default=None, metavar="NAME", help="With --hub: only the sessions this machine holds.")
@click.option("--limits", is_flag=True, help="Each agent's plan quota (5-hour, 7-day): used, reset, pace.")
@click.pass_context
def usage(
    ctx: click.Context,
    as_json: bool,
    by: str,
    since: str | None,
    until: str | None,
    agent: str | None = None,
    project: str | None = None,
    hub: str | None = None,
    machine: str | None = None,
    limits: bool = False,
) -> None:
    """Token totals (input, output, cache read, cache write) and cost, for every
    agent, sub-agents included, each model response counted once. --limits: each
    agent's plan quota as the agent said it (Claude Code's status line, Codex's
    rollouts), when the window resets and where its pace leads."""
    from huddle.oneshot import prices
    from huddle.oneshot import usage as report
    from huddle.sources import Settings

    when = time_option(since, "--since")
    before = time_option(until, "--until")
    if hub is not None and (agent or project):
        raise click.BadParameter("not with --hub yet", param_hint="--agent / --project")
    if hub is None and (by == "machine" or machine is not None):
        raise click.BadParameter("machines are the hub's: add --hub DSN", param_hint="--by machine / --machine")
    settings = Settings.from_env()
    if limits:
        from huddle.views.operations import BY_NAME

        data = BY_NAME["limits"].answer(settings)
        say_json(data) if as_json else print_limits(data)
        return
    table = prices(settings)
    if table is None:
        ctx.exit(1)
        return
    if hub is not None:
        from .hub import hub_usage

        data = hub_usage(hub, by, when, table, machine, until=before)
        if as_json:
            say_json(data)
        else:
            print_report(data)
        return
    # (huddle.oneshot: `usage --json` is answered there)
    data = report(settings, table, by, when, before, agent=agent or None, project=project or None)
    if as_json:
        say_json(data)
    else:
        print_report(data)


def print_limits(data: dict, console=None) -> None:
    from rich.console import Console
    from rich.text import Text

    from huddle.io.quota import clock
    from huddle.model.times import parse_time

    console = console or Console()
    if not data["agents"]:
        console.print(Text("No agent has said a quota yet (Claude Code's: `huddle statusline` keeps it).", style="dim"))
    for a in data["agents"]:
        for w in a["windows"]:
            line = Text(f"{a['name']:12} {w['label']:7} ", style="bold")
            if w["used_percent"] is None:
                line.append("reset since its last reading")
            else:
                line.append(f"{w['used_percent']:5.1f}% used" + (" (estimate)" if w["estimate"] else ""))
            reset = parse_time(w.get("resets_at"))
            if reset is not None and not w.get("reset"):
                line.append(f" · resets {clock(reset)}")
            if w["pace"]["says"] and not w.get("reset"):
                line.append(f" · {w['pace']['says']}", style="yellow" if w["pace"]["runs_out_at"] else "dim")
            console.print(line, soft_wrap=True)
    for n in data["notes"]:
        console.print(Text(n, style="dim"))


def _usd(v: float | None, unpriced: list[str]) -> str:
    if v is None:
        return "?"
    return f"${v:,.2f}" + ("+?" if unpriced else "")


def _wrapped(columns: list[Column], rows: list[list[Cell]]) -> Any:
    """The report as rich's Table lays it out where its columns do not fit the width."""
    from rich.table import Table
    from rich.text import Text

    t = Table(box=None, pad_edge=False, header_style="bold")
    label, *numbers = columns
    t.add_column(label.key, overflow="ellipsis", no_wrap=True, max_width=label.width)
    for col in numbers:
        t.add_column(col.key, justify="right", no_wrap=True, min_width=col.width)
    for row in rows:
        t.add_row(*(Text.assemble(*cell) for cell in row))
    return t


def laid_out(data: dict, width: int) -> tuple[list[Column], list[list[Cell]]]:
    """The report's columns (cli.table.Column) and rows (a cell per column) in `width`
    cells: the counts exact while they leave the label 12 cells, else short (1.25M: a
    history's billions of cache reads pushed the cost off an 80-column terminal); the
    label takes what is left, up to 60."""
    from rich.cells import cell_len

    from huddle.io.visible import visible
    from huddle.views.numbers import short_tokens

    from .table import Column

    by = data["by"]
    names = ("input", "output", "cache read", "cache write", "total", "cost")
    keys = ("input", "output", "cache_read", "cache_write", "total_tokens")
    for count in (lambda n: f"{n:,}", short_tokens):
        body = [[*(count(d[k]) for k in keys), _usd(d["cost_usd"], d["unpriced"])] for d in data["rows"]]
        t = data["totals"]
        foot = [*(count(t[k]) for k in keys), _usd(t["cost_usd"], t["unpriced"])]
        widths = [max(len(n), len(foot[i]), *(len(c[i]) for c in body)) for i, n in enumerate(names)]
        room = width - sum(widths) - 2 * len(widths)  # what the label may take
        if room >= 12:
            break
    rows = data["rows"]
    labels = [
        visible(f"{d['source']} · {d.get('title') or d['session']}" if by == "session" else d["key"]) for d in rows
    ]
    label_w = min(max(12, min(60, room)), max(cell_len(x) for x in (by, "total", *labels)))
    columns = [Column(by, label_w), *(Column(n, w, right=True) for n, w in zip(names, widths, strict=True))]
    table = [[[(label, "")], *([(x, "")] for x in c)] for label, c in zip(labels, body, strict=True)]
    table.append([[("total", "bold")], *([(x, "bold")] for x in foot)])
    return columns, table


def print_report(data: dict, console=None) -> None:
    from rich.console import Console
    from rich.text import Text

    from huddle.io.visible import visible

    from .table import Drawn, fits

    console = console or Console()
    if not data["rows"]:
        console.print(Text("No token usage found.", style="dim"))
        _print_own(data, console)
        return
    columns, table = laid_out(data, console.width)
    # (a history's sessions are thousands of rows: rich's Table took 1.5 s for 2,100)
    console.print(Drawn(columns, table) if fits(columns, console.width) else _wrapped(columns, table))
    p = data["pricing"]
    where = "built-in" + (f" + {p['user_file']}" if p.get("user_file") else "")
    console.print(Text(f"prices as of {p['as_of']} ({where}), USD list prices", style="dim"))
    if data["unpriced"]:
        models = ", ".join(f"{visible(u['model'])} ({u['tokens']:,} tokens)" for u in data["unpriced"])
        console.print(Text(f"unpriced, not in the cost: {models}", style="yellow"))
    if data["counted"]["duplicates_skipped"]:
        n = data["counted"]["duplicates_skipped"]
        console.print(Text(f"{n} response(s) seen in more than one session, counted once", style="dim"))
    _print_own(data, console)


def _print_own(data: dict, console) -> None:
    """huddle's own tokens (translation it was asked to do), apart from the sessions'."""
    from rich.text import Text

    for r in (data.get("huddle_own") or {}).get("rows") or ():
        console.print(
            Text(
                f"huddle's own ({r['key']}, {r['model']}, not in the total): {r['total_tokens']:,} tokens "
                f"in {r['responses']:,} response(s), {_usd(r['cost_usd'], r['unpriced'])}"
            )
        )


COMMANDS = [usage]
