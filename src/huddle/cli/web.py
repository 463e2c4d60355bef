"""`huddle serve`, `huddle demo`, and the CLI twins of the web API's routes.

Each `--json` twin prints exactly what its route returns (both call huddle.views.api).
"""

from __future__ import annotations

import json
import threading

import click

from huddle.errors import HuddleError
from huddle.io.visible import visible
from huddle.oneshot import say_json

DEFAULT_PORT = 7430


def _emit(data) -> None:
    say_json(data)


def _ask(operation: str, session_id: str, **given):
    """A declared operation about one session (views/operations.py: what its route
    answers), on a core that read that session (from the handle cache, only what moved:
    core.single); a bad request is one clear line."""
    from huddle.core.single import one_session_core
    from huddle.views.operations import BY_NAME

    h = one_session_core(session_id)
    try:
        return BY_NAME[operation].answer(h, id=session_id, **given)
    except HuddleError as exc:
        raise click.ClickException(str(exc)) from None


def _run(
    h,
    host: str,
    port: int,
    open_browser: bool,
    demo=None,
    watcher=None,
    what: str = "",
    notify: bool = False,
    otlp: tuple[str, int] | None = None,
) -> None:
    from huddle.io.heap import return_large_blocks
    from huddle.server import create_app, make_server, url_for
    from huddle.server.security import is_loopback, new_token

    return_large_blocks()  # (a server open all day: a page's big read is not kept as its size)
    token = None if is_loopback(host) else new_token()
    sock = _listen(host, port)
    port = sock.getsockname()[1]
    app = create_app(h, host=host, port=port, token=token, demo=demo, watcher=watcher)
    server = make_server(app)
    url = url_for(host, port, token)
    what = what or ("the built-in demo" if demo is not None else "your sessions")
    click.echo(f"huddle: serving {what} at {url}")
    if token:
        click.echo("huddle: not on loopback, so every request needs the token in that link (or header X-Huddle-Token)")
    rows = app.state.huddle.watcher
    extras = app.state.huddle.extras
    notifier = _notifier(url_for(host, port), h, extras.translation) if notify and hasattr(rows, "listen") else None
    if notifier is not None:
        rows.listen(notifier)
    receiver = _otlp(h, otlp) if otlp is not None else None
    answering = _status_socket(h, rows) if demo is None and watcher is None else None
    if open_browser:
        threading.Timer(0.6, _open, (url,)).start()
    try:  # (said inside: a Ctrl-C right after the line stops it as well as any later)
        click.echo("huddle: press Ctrl+C to stop")
        server.run(sockets=[sock])
    except KeyboardInterrupt:  # uvicorn stops gracefully, then raises the Ctrl-C again: done, not failed
        pass
    finally:
        if notifier is not None:
            notifier.close_all()
        if receiver is not None:
            receiver.stop()
        if answering is not None:
            answering.stop()


def _status_socket(h, rows):
    """`huddle status --json` answered by this server (server.status_socket), or None
    (no home folder, or another server of this home answers; said)."""
    if not h.settings.huddle_home:
        return None
    from huddle.server.status_socket import StatusSocket

    answering = StatusSocket(h, rows)
    if answering.start():
        return answering
    click.echo(f"huddle: not answering `huddle status` here: {answering.last_error}", err=True)
    return None


def _listen(host: str, port: int):
    """The server's socket: on the port asked for, or, the usual one being taken, any free one."""
    from huddle.server import bind

    try:
        return bind(host, port)
    except OSError as exc:
        if port != DEFAULT_PORT:
            raise click.ClickException(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
        return bind(host, 0)


def _open(url: str) -> None:
    from huddle.live.desktop import open_page

    if not open_page(url):
        click.echo("huddle: no graphical browser to open here: open that address in yours")


def _otlp(h, where: tuple[str, int]):
    """The OTLP receiver beside the board (`--otlp`): what it takes is on the board at once."""
    from huddle.otel.receiver import serve_beside

    try:
        return serve_beside(h.settings.huddle_home, where[0], where[1], lambda m: click.echo(f"huddle: {m}", err=True))
    except OSError as exc:
        raise click.ClickException(str(exc.strerror or exc)) from None


def _notifier(url: str, h=None, translation=None):
    """Desktop notifications for the server, or one line saying why there are none. With
    the core `h`, a hosted run's notification carries Allow / Deny (huddle.answer); with
    a `translation`, it is said in the language in force."""
    from huddle.live.desktop import Unavailable, pick
    from huddle.live.notify import Notifier
    from huddle.translate.notify import translated

    try:
        backend = translated(pick(), translation)  # (in the language in force, if any)
    except Unavailable as exc:
        click.echo(f"huddle: desktop notifications off: {exc}", err=True)
        return None
    on_answer = None
    if h is not None:

        def on_answer(sid: str, request: int, choice: str):
            from huddle.answer.session import answer

            return answer(h, sid, {"request": request, "choice": choice}, by="notification", lock=h.lock)

    return Notifier(backend, url, on_error=lambda m: click.echo(f"huddle: {m}", err=True), on_answer=on_answer)


@click.command()
@click.option(
    "--host", default="127.0.0.1", show_default=True, help="Address to listen on (off loopback a token is required)."
)
@click.option(
    "--port", default=DEFAULT_PORT, show_default=True, type=click.IntRange(0, 65535), help="Port; 0 picks a free one."
)
@click.option(
    "--open/--no-open", "open_browser", default=True, show_default=True, help="Open the web app in a browser."
)
@click.option("--demo", "force_demo", is_flag=True, help="Serve the built-in demo instead of your sessions.")
@click.option("--hub", "hub", default=None, metavar="DSN", help="Show every machine's sessions from a PostgreSQL hub.")
@click.option(
    "--notify/--no-notify",
    default=True,
    show_default=True,
    help="A desktop notification when a session needs you (one per wait, closed when answered).",
)
@click.option(
    "--translate",
    "translate",
    default=None,
    metavar="LANG",
    help="Show conversations, calls and notifications in LANG through your own claude CLI (off: the setting's).",
)
@click.option("--otlp", is_flag=True, help="Also receive the agents' own telemetry (OTLP/HTTP: /v1/logs, /v1/metrics).")
@click.option("--otlp-host", default="127.0.0.1", show_default=True, help="--otlp: address (off loopback: a token).")
@click.option("--otlp-port", default=4318, show_default=True, type=click.IntRange(0, 65535), help="--otlp: port.")
def serve(
    host: str,
    port: int,
    open_browser: bool,
    force_demo: bool,
    hub: str | None = None,
    notify: bool = True,
    translate: str | None = None,
    otlp: bool = False,
    otlp_host: str = "127.0.0.1",
    otlp_port: int = 4318,
) -> None:
    """Serve the web app (the demo when no agent folders exist)."""
    from huddle.core import Huddle, Keeper

    if translate is not None:  # (for this server only: huddle.translate.serving reads it)
        import os

        os.environ["HUDDLE_TRANSLATE"] = translate

    h = Huddle()
    receive = (otlp_host, otlp_port) if otlp else None
    if hub is not None:
        from .hub import hub_watcher

        watcher, what = hub_watcher(hub, telemetry=otlp)
        _run(h, host, port, open_browser, watcher=watcher, what=what, otlp=receive)
        return
    if receive is not None:  # (telemetry alone is something to show: no demo for want of agent folders)
        _run(Huddle(keep=Keeper()), host, port, open_browser, notify=notify, otlp=receive)
        return
    if force_demo or not h.has_agent_folders():
        from huddle.demo import Demo

        if not force_demo:
            click.echo("huddle: no agent folders found (~/.claude, ~/.codex, ~/.vibe): showing the demo", err=True)
        d = Demo()
        _run(d.huddle(), host, port, open_browser, demo=d, notify=notify)
        return
    # from the cache: the board answers with the rows as last built while the first read
    # runs, and sessions nothing moved in stay unread until a page asks for one
    _run(Huddle(keep=Keeper()), host, port, open_browser, notify=notify)


@click.command()
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", default=0, show_default=True, type=click.IntRange(0, 65535), help="Port; 0 picks a free one.")
@click.option("--open/--no-open", "open_browser", default=True, show_default=True)
@click.option("--speed", default=1.0, show_default=True, type=click.FloatRange(0.1, 100), help="Play the story faster.")
@click.option(
    "--notify/--no-notify",
    default=True,
    show_default=True,
    help="A desktop notification at the story's needs-you moment, closed when it is answered.",
)
def demo(host: str, port: int, open_browser: bool, speed: float, notify: bool = True) -> None:
    """Play a fictional session (a lead and four sub-agents) live in the web app, with the
    desktop notification its needs-you moment rings, as your own sessions' do."""
    from huddle.demo import Demo

    d = Demo(speed=speed)
    _run(d.huddle(), host, port, open_browser, demo=d, notify=notify)


@click.command()
@click.argument("session_id")
@click.option("--json", "as_json", is_flag=True, help="Print what GET /api/sessions/ID returns.")
def show(session_id: str, as_json: bool) -> None:
    """One session: its agent tree, states and usage."""
    data = _ask("show", session_id)
    if as_json:
        _emit(data)
        return
    click.echo(visible(f"{data.get('title') or data['id']}  [{data.get('state', '?')}]  {data.get('project', '')}"))
    for a in data["tree"]:
        u = a["usage"]
        tokens = sum(u.values())
        click.echo(f"{'  ' * (a['depth'] + 1)}{visible(a['label'])}  {a.get('state', '')}  {tokens:,} tokens")


@click.command()
@click.argument("session_id")
@click.option("--after", default=None, help="Only events after this seq.")
@click.option("--limit", default=None, help="At most this many events.")
@click.option("--json", "as_json", is_flag=True, help="Print what GET /api/sessions/ID/events returns.")
def events(session_id: str, after: str | None, limit: str | None, as_json: bool) -> None:
    """A session's timeline."""
    data = _ask("events", session_id, after=after, limit=limit)
    if as_json:
        _emit(data)
        return
    for e in data["events"]:
        words = e.get("doing") or e.get("text") or e.get("detail") or e.get("name") or ""
        said = visible(" ".join(words.split())[:100])
        click.echo(f"{e['seq']:>6}  {e['kind']:<11} {visible(e['agent'][:10]):<10}  {said}")


@click.command()
@click.argument("session_id")
@click.option("--json", "as_json", is_flag=True, help="Print what GET /api/sessions/ID/transcripts returns.")
def transcripts(session_id: str, as_json: bool) -> None:
    """The main agent and each sub-agent, with message counts."""
    data = _ask("transcripts", session_id)
    if as_json:
        _emit(data)
        return
    for a in data["agents"]:
        click.echo(f"{visible(a['id']):<40} {a['messages']:>6}  {visible(a['label'])}")


@click.command()
@click.argument("session_id")
@click.option("--agent", default=None, help="Agent id (default: the main agent).")
@click.option("--limit", default=None, help="Messages per page (default 50).")
@click.option("--after", default=None, help="Messages after this line.")
@click.option("--before", default=None, help="Messages before this line.")
@click.option("--around", default=None, metavar="REF", help="The messages around this one (a search result's ref).")
@click.option("--json", "as_json", is_flag=True, help="Print what GET /api/sessions/ID/transcript returns.")
def transcript(session_id, agent, limit, after, before, around, as_json: bool) -> None:
    """One agent's conversation, paged like the web app's."""
    data = _ask("transcript", session_id, agent=agent, limit=limit, after=after, before=before, around=around)
    if as_json:
        _emit(data)
        return
    for m in data["messages"]:
        words = m.get("doing") or m.get("text") or m.get("detail") or ""
        said = visible(" ".join(words.split())[:110])
        click.echo(f"{m['line']:>5} {visible(m['lane']):<10} {m['kind']:<11} {said}")


@click.command()
@click.argument("session_id")
@click.argument("ref")
@click.option("--json", "as_json", is_flag=True, help="Print what GET /api/sessions/ID/content/REF returns.")
def content(session_id: str, ref: str, as_json: bool) -> None:
    """One heavy piece (a full tool input or output) read back from the file."""
    data = _ask("content", session_id, ref=ref)
    if as_json:
        _emit(data)
        return
    if "input" in data:
        click.echo(visible(json.dumps(data["input"], indent=2, ensure_ascii=False), lines=True))
    if data.get("text"):
        click.echo(visible(data["text"], lines=True))


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print what GET /api/doctor returns.")
@click.option(
    "--hub", "hub", default=None, metavar="DSN", help="The hub's rows no view can take as they stand, by machine."
)
def doctor(as_json: bool, hub: str | None = None) -> None:
    """Every file under the agents' folders: read into a session, not a session, or not read (and why).
    With --hub: every row of the hub another machine wrote that costs itself (not a JSON
    object, nested too deep, a time or count out of range), with its machine and session."""
    if hub is not None:
        from .hub import hub_doctor

        data = hub_doctor(hub)
        if as_json:
            say_json(data)
            return
        for p in data["problems"]:
            click.echo(visible(f"{p['machine']}  {p['session']}: {p['what']}"))
        click.echo(f"{len(data['problems'])} row(s) of {data['hub']} left out or cut", err=True)
        return
    from huddle.core import Huddle, Keeper
    from huddle.views.doctor import doctor_text
    from huddle.views.operations import BY_NAME

    # as the route: sessions nothing moved in sleep, their files said from the cache (reading
    # every one back took a two-year history's doctor 1.1 s; 0.25 s so)
    h = Huddle(keep=Keeper())
    h.refresh()
    data = BY_NAME["doctor"].answer(h)
    say_json(data) if as_json else click.echo(doctor_text(data))


COMMANDS = [serve, demo, show, events, transcripts, transcript, content, doctor]
