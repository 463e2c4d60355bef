"""`huddle push` and the `--hub DSN` side of status, usage and serve."""

from __future__ import annotations

import socket

import click

from huddle.errors import HuddleError
from huddle.oneshot import say_json


def _fail(exc: HuddleError) -> click.ClickException:
    return click.ClickException(str(exc))


@click.command()
@click.argument("dsn", metavar="DSN")
@click.option("--watch", is_flag=True, help="Keep pushing what sessions add, within seconds; reconnects with back-off.")
@click.option(
    "--machine", default=None, metavar="NAME", help="This machine's name on the hub (default: its host name)."
)
@click.option(
    "--with-content", is_flag=True, help="Include prompt text (full titles, what a state is doing). Off by default."
)
@click.option(
    "--every", default=2.0, show_default=True, type=click.FloatRange(0.1, 3600), help="--watch: seconds between looks."
)
def push(dsn: str, watch: bool, machine: str | None, with_content: bool, every: float) -> None:
    """Write this machine's sessions, agents and model responses to a PostgreSQL hub
    (DSN: a libpq connection string or postgresql:// URL; the password may come from
    PGPASSFILE or PGPASSWORD instead). Pushing again writes only what changed; the
    same session pushed twice, or from a copy of its files, counts once."""
    from huddle.core import Huddle, Keeper
    from huddle.hub import describe
    from huddle.hub.push import Pusher

    name = machine or socket.gethostname()
    # (a board's keeper: settled sessions stay asleep in the cache; the push wakes what it must)
    p = Pusher(Huddle(keep=Keeper()), dsn, name, with_content=with_content)
    where = describe(dsn)
    try:
        if not watch:
            n, r = p.run()
            click.echo(f"huddle: pushed {n:,} sessions, {r:,} responses to {where} as {name}", err=True)
            return

        def pushed(n: int, r: int) -> None:
            click.echo(f"huddle: pushed {n:,} sessions, {r:,} responses", err=True)

        def failed(msg: str, delay: float) -> None:
            click.echo(f"huddle: {msg}; trying again in {delay:.0f} s", err=True)

        try:  # (said inside: a Ctrl-C right after the line stops it as well as any later)
            click.echo(f"huddle: pushing to {where} as {name} (Ctrl+C to stop)", err=True)
            p.watch(every=every, on_push=pushed, on_error=failed)
        except KeyboardInterrupt:
            click.echo("huddle: stopped", err=True)
    except HuddleError as exc:
        raise _fail(exc) from None
    finally:
        p.close()


def hub_board(dsn: str, machine: str | None, since: float | None = None) -> dict:
    from huddle.hub import connect
    from huddle.hub.read import board

    try:
        conn = connect(dsn)
        try:
            got = board(conn, machine, since=since)
            got.pop("changed_at", None)
            return got
        finally:
            conn.close()
    except HuddleError as exc:
        raise _fail(exc) from None


def hub_usage(dsn: str, by: str, since: float | None, table, machine: str | None, until: float | None = None) -> dict:
    from huddle.hub import connect, describe, driver, scrub
    from huddle.hub.read import usage_report

    try:
        conn = connect(dsn)
        try:
            return usage_report(conn, by, since, table, machine, until=until)
        except driver().Error as exc:
            raise _fail(HuddleError(f"the hub ({describe(dsn)}): {scrub(str(exc), dsn)}")) from None
        finally:
            conn.close()
    except HuddleError as exc:
        raise _fail(exc) from None


def hub_doctor(dsn: str) -> dict:
    """`huddle doctor --hub`: the hub's rows no view takes as they stand (huddle.hub.check)."""
    from huddle.hub import connect, describe, driver, scrub
    from huddle.hub.check import problems

    try:
        conn = connect(dsn)
        try:
            return {"hub": describe(dsn), "problems": problems(conn)}
        except driver().Error as exc:
            raise _fail(HuddleError(f"the hub ({describe(dsn)}): {scrub(str(exc), dsn)}")) from None
        finally:
            conn.close()
    except HuddleError as exc:
        raise _fail(exc) from None


def hub_watcher(dsn: str, telemetry: bool = False):
    """For `huddle serve --hub`: a board source reading the hub, and what to call it.
    `telemetry` (with --otlp): what the receiver takes is pushed to the hub too, as the
    machine `otlp@HOST`."""
    from huddle.hub import describe, driver
    from huddle.hub.watcher import HubWatcher

    try:
        driver()
    except HuddleError as exc:
        raise _fail(exc) from None
    machine = f"otlp@{socket.gethostname()}" if telemetry else None
    return (
        lambda h, publish: HubWatcher(h, publish, dsn, telemetry_as=machine)
    ), f"every machine's sessions from {describe(dsn)}"


@click.group()
def hub() -> None:
    """Set up a PostgreSQL hub: its schema and who may do what (run as its owner)."""


@hub.command("init")
@click.argument("dsn", metavar="DSN")
def hub_init(dsn: str) -> None:
    """Make the hub's schema and its two group roles: huddle_machine (pushes) and
    huddle_lead (reads the board and usage, never a prompt). Safe to run again."""
    from huddle.hub import HubError, connect, describe, driver, scrub
    from huddle.hub.roles import init

    try:
        conn = connect(dsn)
        try:
            for line in init(conn):
                click.echo(f"huddle: {line}", err=True)
        except driver().Error as exc:
            raise HubError(f"the hub ({describe(dsn)}): {scrub(str(exc), dsn)} (the hub's owner runs this)") from None
        finally:
            conn.close()
    except HuddleError as exc:
        raise _fail(exc) from None
    click.echo(f"huddle: {describe(dsn)} is ready: huddle push DSN --watch on each machine", err=True)


@hub.command("grant")
@click.argument("dsn", metavar="DSN")
@click.argument("name")
@click.option("--lead", "as_lead", is_flag=True, help="Read the board and every usage report, never a prompt.")
@click.option("--machine", "as_machine", is_flag=True, help="Push this machine's sessions.")
def hub_grant(dsn: str, name: str, as_lead: bool, as_machine: bool) -> None:
    """Make a login role NAME on the hub, a lead or a machine (run as its owner, after
    `huddle hub init`). Prints its new password, once."""
    from huddle.hub import HubError, connect, describe, driver, scrub
    from huddle.hub.roles import grant

    if as_lead == as_machine:
        raise click.UsageError("say --lead or --machine")
    try:
        conn = connect(dsn)
        try:
            password = grant(conn, name, lead=as_lead)
        except ValueError as exc:
            raise click.BadParameter(str(exc), param_hint="NAME") from None
        except driver().Error as exc:
            raise HubError(f"the hub ({describe(dsn)}): {scrub(str(exc), dsn)} (the hub's owner runs this)") from None
        finally:
            conn.close()
    except HuddleError as exc:
        raise _fail(exc) from None
    click.echo(
        f"huddle: {name} may {'read the hub (no prompts)' if as_lead else 'push to the hub'}; its password:", err=True
    )
    click.echo(password)


def emit(data) -> None:
    say_json(data)


COMMANDS = [push, hub]
