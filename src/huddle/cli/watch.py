"""`huddle watch`: follow every session without a page open; one line per change of
state, and with --notify a desktop notification whenever one needs you."""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Iterable

import click

from huddle.io.visible import visible
from huddle.model.attention import NEEDS_YOU
from huddle.model.rows import Row

LABEL = {"needs_you": "needs you", "your_turn": "your turn"}


class Lines:
    """A watcher listener that says each change of a session's state in one line."""

    def __init__(self, echo=click.echo) -> None:
        self.echo = echo
        self.states: dict[str, str | None] = {}

    def prime(self, rows: Iterable[Row]) -> None:
        for r in rows:
            self.states[r.key] = r.state

    def rows(self, changed: list[Row], removed: list[str]) -> None:
        for r in changed:
            st = r.state
            if self.states.get(r.key) == st:
                continue
            self.states[r.key] = st
            why = r.waiting_for if st in (NEEDS_YOU, "waiting") else (r.doing or None)
            title = " ".join((r.title or r.id).split())[:70]
            line = f"{time.strftime('%H:%M:%S')}  {LABEL.get(st, st):<9}  {title}  ({r.source}, {r.id[:8]})"
            self.echo(visible(line + (f": {' '.join(str(why).split())[:160]}" if why else "")))
        for key in removed:
            self.states.pop(key, None)


@click.command()
@click.option("--notify/--no-notify", default=False, help="A desktop notification when a session needs you.")
@click.option(
    "--url",
    default=None,
    help="The web app's address, so a clicked notification opens the session (with desktop-notifier).",
)
def watch(notify: bool, url: str | None) -> None:
    """Follow every session from the terminal, without a page open: one line per change
    of state; with --notify, one desktop notification per wait (which session, which
    agent, why), closed when it is answered. Ctrl-C stops."""
    from huddle.core import FirstRead, Huddle, Keeper, WholeMode
    from huddle.live.boardfile import BoardFile
    from huddle.live.desktop import Unavailable, pick
    from huddle.live.notify import Notifier
    from huddle.live.watcher import Watcher

    notifier = None
    if notify:
        try:
            backend = pick()
        except Unavailable as exc:  # the lines go on; the why is said once
            click.echo(f"huddle: desktop notifications off: {visible(str(exc))}", err=True)
        else:
            notifier = Notifier(backend, url, on_error=lambda m: click.echo(f"huddle: {visible(m)}", err=True))
    h = Huddle(keep=Keeper(WholeMode()))
    h.refresh(FirstRead())
    h.keeper = None  # the watcher reads appended bytes from here on
    for note in h.notes:
        click.echo(f"huddle: {visible(note)}", err=True)
    w = Watcher(h, lambda msgs: None)
    w.listen(Lines())
    w.listen(BoardFile(w))  # the status line agrees with what this prints
    if notifier is not None:
        w.listen(notifier)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    w.start()
    need = sum(1 for r in w.rows.values() if r.state == NEEDS_YOU)
    try:  # (said inside: a Ctrl-C right after the line stops it as well as any later)
        click.echo(
            f"huddle: watching {len(w.rows)} sessions ({need} need you now)"
            + (f"; notifications through {notifier.backend.name}" if notifier else "")
            + "; Ctrl+C to stop",
            err=True,
        )
        while not stop.wait(1.0):
            pass
    except KeyboardInterrupt:
        pass
    finally:
        w.stop()
        if notifier is not None:
            notifier.close_all()


COMMANDS = [watch]
