"""`huddle otel`: sessions as OpenTelemetry GenAI traces, to any OTLP/HTTP endpoint."""

from __future__ import annotations

import socket
import sys

import click

from huddle.errors import HuddleError
from huddle.io.visible import visible


def redactor():
    """The exports' redaction (redact.redactor) for --with-content: text leaves the machine
    with its secrets replaced, as an export's would be."""
    from huddle.redact.redactor import Redactor

    return Redactor()


@click.command()
@click.argument("ids", nargs=-1, metavar="[ID]...")
@click.option(
    "--endpoint",
    metavar="URL",
    default=None,
    help="OTLP/HTTP endpoint, e.g. http://127.0.0.1:4318 (/v1/traces is added). "
    "Default: OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, or OTEL_EXPORTER_OTLP_ENDPOINT + /v1/traces.",
)
@click.option("--since", default=None, metavar="DATE", help="Only spans from DATE on (YYYY-MM-DD, UTC, or ISO 8601).")
@click.option("--follow", is_flag=True, help="Keep sending what sessions add; a cursor under $HUDDLE_HOME resumes.")
@click.option(
    "--with-content", is_flag=True, help="Include prompt and output text (redacted as the exports are). Off by default."
)
@click.option("--machine", default=None, metavar="NAME", help="host.name of the traces (default: this host's name).")
@click.option(
    "--every", default=2.0, show_default=True, type=click.FloatRange(0.1, 3600), help="--follow: seconds between looks."
)
def otel(
    ids: tuple[str, ...],
    endpoint: str | None,
    since: str | None,
    follow: bool,
    with_content: bool,
    machine: str | None,
    every: float,
) -> None:
    """Send sessions (all, or the IDs given) as OTLP traces: one trace per session,
    invoke_agent / chat / execute_tool spans with the files' own times and tokens.
    OTEL_EXPORTER_OTLP_HEADERS is honoured (an API key, say); it is never printed."""
    from .usage import time_option

    when = time_option(since, "--since")
    try:
        _otel(list(ids), endpoint, when, follow, with_content, machine or socket.gethostname(), every)
    except HuddleError as exc:
        raise click.ClickException(str(exc)) from None


def _otel(
    ids: list[str], endpoint: str | None, since: float | None, follow: bool, content: bool, machine: str, every: float
) -> None:
    from huddle.core import Huddle, Keeper, WholeMode
    from huddle.otel.cursor import Cursor
    from huddle.otel.export import Exporter, Sender, check_sdk, shown, traces_endpoint

    check_sdk()
    url = traces_endpoint(endpoint)
    if url is None:
        raise HuddleError("no endpoint: give --endpoint URL or set OTEL_EXPORTER_OTLP_ENDPOINT")
    red = redactor() if content else None
    redact = red.text if red is not None else None
    h = Huddle(keep=Keeper(WholeMode()))
    sender = Sender(url, machine)
    cursor = Cursor(h.settings.huddle_home, url) if h.settings.huddle_home else None
    ex = Exporter(h, sender, redact=redact, since=since, cursor=cursor)
    where = shown(url)
    try:
        if not follow:
            ex.run(ids)
            for note in h.notes:
                click.echo(f"huddle: {visible(note)}", err=True)
            click.echo(f"huddle: sent {sender.sent:,} spans of {ex.sessions:,} sessions to {where}", err=True)
            if red is not None and red.replaced:
                click.echo(f"huddle: {red.replaced:,} secrets redacted from the content", err=True)
            return
        last = [0]

        def cycle() -> None:
            if sender.sent != last[0]:
                click.echo(f"huddle: sent {sender.sent - last[0]:,} spans", err=True)
                last[0] = sender.sent

        def failed(msg: str) -> None:
            click.echo(f"huddle: {msg}; trying again", err=True)

        try:  # (said inside: a Ctrl-C right after the line stops it as well as any later)
            click.echo(f"huddle: following sessions into {where} (Ctrl+C to stop)", err=True)
            ex.follow(ids, every=every, on_error=failed, on_cycle=cycle)
        except KeyboardInterrupt:
            click.echo(f"huddle: stopped; {sender.sent:,} spans sent", err=True)
    finally:
        sender.close()
        if cursor is not None:
            cursor.close()
        sys.stderr.flush()


COMMANDS = [otel]
