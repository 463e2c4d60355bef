"""`huddle pin ID`, `huddle unpin ID`, `huddle pins`: sessions kept at the top of the board
(what POST /api/sessions/ID/pin and GET /api/pins do)."""

from __future__ import annotations

import click

from huddle.errors import HuddleError
from huddle.oneshot import say_json


def _set(session_id: str, pinned: bool) -> None:
    from huddle.core.single import one_session_core
    from huddle.views.pins import pin as pin_session

    h = one_session_core(session_id)
    try:
        data = pin_session(h, session_id, {"pinned": pinned})
    except HuddleError as exc:
        raise click.ClickException(str(exc)) from None
    for note in data["notes"]:
        click.echo(f"huddle: {note}", err=True)
    click.echo(f"{'pinned' if data['pinned'] else 'unpinned'} {data['session']}")


@click.command()
@click.argument("session_id")
def pin(session_id: str) -> None:
    """Keep this session at the top of the board (a unique start of its id will do)."""
    _set(session_id, True)


@click.command()
@click.argument("session_id")
def unpin(session_id: str) -> None:
    """Let this session take its place on the board again."""
    _set(session_id, False)


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print what GET /api/pins returns.")
def pins(as_json: bool) -> None:
    """The pinned sessions, the latest pinned first."""
    from huddle.sources import Settings
    from huddle.views.operations import BY_NAME

    data = BY_NAME["pins"].answer(Settings.from_env())
    if as_json:
        say_json(data)
        return
    for note in data["notes"]:
        click.echo(f"huddle: {note}", err=True)
    if not data["pins"]:
        click.echo("No session is pinned (huddle pin ID).")
    for p in data["pins"]:
        click.echo(f"{p['key']}  pinned {p['pinned_at'][:16].replace('T', ' ')}")


COMMANDS = [pin, unpin, pins]
