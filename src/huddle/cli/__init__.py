"""The `huddle` command. A thin client: every subcommand asks the core library."""

from __future__ import annotations

import sys

import click

from huddle import __version__
from huddle.io.visible import visible
from huddle.oneshot import board, say_json
from huddle.views.select import RECENT


def _emit_json(data) -> None:
    say_json(data)


# Commands that live in their own modules, by name: a command loads its own module only
# (importing every one cost each `huddle status` a fifth of a second). Each module's
# COMMANDS list is the truth; tests check this table against it.
LAZY = {
    **dict.fromkeys(("serve", "demo", "show", "events", "transcripts", "transcript", "content", "doctor"), "web"),
    **dict.fromkeys(("host", "attach", "send", "stop", "run", "answer"), "host"),
    "watch": "watch",
    "usage": "usage",
    "overview": "overview",
    **dict.fromkeys(("pin", "unpin", "pins"), "pins"),
    "search": "search",
    "export": "export",
    "otel": "otel",
    "push": "hub",
    **dict.fromkeys(("voices", "say", "translate"), "voice"),
    "hub": "hub",
}


class LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(set(self.commands) | set(LAZY))

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in LAZY:
            import importlib

            mod = LAZY[cmd_name]
            try:
                m = importlib.import_module(f"huddle.cli.{mod}")
            except ModuleNotFoundError as exc:
                if exc.name != f"huddle.cli.{mod}":
                    raise
                return None
            for cmd in getattr(m, "COMMANDS", ()):
                if cmd.name not in self.commands:
                    self.add_command(cmd)
        return self.commands.get(cmd_name)

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except click.ClickException as exc:  # a message may name a file, a title, what was typed
            setattr(exc, "message", visible(exc.message))  # noqa: B010 (Final to the type checker only)
            raise

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        # A bare `huddle` is `huddle serve`: it takes the same options (loading serve's
        # module only when no command is named).
        if not args or args[0] not in self.list_commands(ctx):
            serve = self.get_command(ctx, "serve")
            if serve is not None:
                have = {p.name for p in self.params}
                self.params.extend(p for p in serve.params if p.name not in have)
        return super().parse_args(ctx, args)


@click.group(cls=LazyGroup, invoke_without_command=True)
@click.version_option(__version__, prog_name="huddle")
@click.pass_context
def main(ctx: click.Context, **serve_options) -> None:
    """See what all your AI coding agents are doing, live and afterwards.

    With no command, huddle serves its web app and opens it in your browser
    (on built-in demo data when no agent folders exist); serve's options work here too
    (`huddle --port 8000 --no-open`).
    """
    if ctx.invoked_subcommand is None:
        from .web import serve

        ctx.invoke(serve, **serve_options)
    elif any(ctx.get_parameter_source(k) != click.core.ParameterSource.DEFAULT for k in serve_options):
        raise click.UsageError(f"serve's options go without a command, not before {ctx.invoked_subcommand!r}")


@main.command()
@click.option("--json", "as_json", is_flag=True, help="Print the board as JSON (what GET /api/sessions returns).")
@click.option("--at", "at", default=None, help="Evaluate states as of a past time (ISO 8601 or unix seconds).")
@click.option("--watch", is_flag=True, help="Keep the table live in the terminal.")
@click.option("--hub", "hub", default=None, metavar="DSN", help="Every machine's sessions, from a PostgreSQL hub.")
@click.option("--machine", default=None, metavar="NAME", help="With --hub: only the sessions this machine holds.")
@click.option(
    "--all", "show_all", is_flag=True, help="Every session (the table shows the live and recent ones, none archived)."
)
@click.option(
    "--state",
    "states",
    multiple=True,
    metavar="STATE",
    help="Only these states (needs-you, waiting, working, your-turn, idle, ended; repeat or comma-separate).",
)
@click.option("--project", default=None, help="Only sessions whose project or folder contains this.")
@click.option(
    "--since",
    default=None,
    metavar="WHEN",
    help=f"Sessions that moved since WHEN (2h, 3d, 30m, 1w, a date, ISO 8601) and every live one "
    f"[table default: {RECENT}].",
)
def status(
    as_json: bool,
    at: str | None,
    watch: bool,
    show_all: bool,
    states: tuple[str, ...],
    project: str | None,
    since: str | None,
    hub: str | None = None,
    machine: str | None = None,
) -> None:
    """Every session, who needs you first. The table lists the live ones and those that
    moved in the last day (--all for every one); the id column's short ids work wherever
    a session id does. --json prints what GET /api/sessions returns with the same filters."""
    from huddle.errors import HuddleError
    from huddle.views.board import parse_at
    from huddle.views.select import Select

    window = since if since is not None or show_all or as_json else RECENT
    try:  # (the table hides archived sessions but with --all; the JSON is the route's, all of them)
        pick = Select(list(states) or None, project, window, hide_archived=not (show_all or as_json))
    except HuddleError as exc:
        raise click.UsageError(str(exc)) from None
    if hub is not None:
        from .hub import hub_board
        from .table import print_table, short_ids

        # (the table's short ids are unique among every session: it asks for them all)
        whole = hub_board(hub, machine, pick.since if as_json else None)
        data = pick.apply(whole)
        _emit_json(data) if as_json else print_table(data, ids=short_ids(whole["sessions"]))
        return
    if machine is not None:
        raise click.BadParameter("--machine goes with --hub", param_hint="--machine")

    when = None
    if at is not None:
        when = parse_at(at)
        if when is None:
            raise click.BadParameter(f"not a time: {at!r} (use ISO 8601 or unix seconds)", param_hint="--at")
    if watch:
        from huddle.core import FirstRead, Huddle, Keeper, WholeMode

        from .table import watch_table

        h = Huddle(keep=Keeper(WholeMode()) if when is None else None)
        h.refresh(FirstRead())
        h.keeper = None  # from here on the watcher reads appended bytes; no cache to rewrite per change
        watch_table(h, pick=pick)
        return
    data = board(when)  # (huddle.oneshot: `status --json` is answered there before click loads)
    shown = pick.apply(data)
    if as_json:
        _emit_json(shown)
        return
    from .table import print_table, short_ids, shown_line

    archived = sum(1 for r in data["sessions"] if r.archived)
    footer = shown_line(len(shown["sessions"]), len(data["sessions"]), window, pick, since, archived)
    print_table(shown, footer=footer, ids=short_ids(data["sessions"]))  # short ids unique among all


@main.command(context_settings={"ignore_unknown_options": True})
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON (for tmux, shell prompts).")
def statusline(as_json: bool) -> None:
    """One line for Claude Code's status bar: this session's cost and context use, who
    needs you across all sessions. (The `huddle` command runs it before loading click,
    on the standard library only; this entry is for --help and `python -m huddle.cli`.)"""
    from huddle.statusline import main as run

    sys.exit(run(["--json"] if as_json else []))


if __name__ == "__main__":
    sys.exit(main())
