"""`huddle host`, `attach`, `send`, `stop` and `run`: hosting an agent and talking
to its host. Thin: the work is in huddle.host."""

from __future__ import annotations

import os
import sys

import click

from huddle.oneshot import say_json

_PASS_THROUGH = {"ignore_unknown_options": True, "allow_interspersed_args": False}


def _fail(what: str, msg: str, code: int = 1):
    click.echo(f"huddle {what}: {msg}", err=True)
    sys.exit(code)


def _call(what: str, d: str, msg: dict, sock: str | None) -> dict:
    """One call to the host in D; any error ends the command with one line."""
    from huddle.host.client import HostError, call

    try:
        reply = call(d, msg, sock)
    except HostError as exc:
        _fail(what, str(exc))
    if not reply.get("ok"):
        _fail(what, str(reply.get("error")))
    return reply


@click.command(context_settings=_PASS_THROUGH)
@click.option("--dir", "dir_", required=True, help="Folder of the log (D/events.jsonl) and the socket (D/host.sock).")
@click.option("--socket", "sock", default=None, help="Listen here instead of D/host.sock (D/host.sock links to it).")
@click.option("--cwd", default=None, help="Run the command in this folder.")
@click.option(
    "--grace",
    type=float,
    default=3.0,
    show_default=True,
    help="Seconds a stop waits after closing stdin, and again after SIGTERM.",
)
@click.option("--name", default="", hidden=True)
@click.option(
    "--protocol",
    type=click.Choice(["claude", "codex", "acp", "none"]),
    default=None,
    help="The agent's protocol, for answering it (default: told from COMMAND; none: only log).",
)
@click.option("--prompt", default="", help="The first user message, sent once the agent is ready.")
@click.argument("command", nargs=-1, required=True, type=click.UNPROCESSED)
def host(
    dir_: str,
    sock: str | None,
    cwd: str | None,
    grace: float,
    name: str,
    protocol: str | None,
    prompt: str,
    command: tuple[str, ...],
) -> None:
    """Run COMMAND, log everything it says to D/events.jsonl, serve D/host.sock.

    Exits with the command's exit status once it has exited and the `exited`
    entry is written (127 if it could not start, 2 if the log cannot be opened).
    """
    from huddle.host.server import serve

    code = serve(dir_, list(command), socket=sock, cwd=cwd, grace=grace, name=name, protocol=protocol, prompt=prompt)
    sys.exit(code)


@click.command()
@click.argument("dir_", metavar="D")
@click.option("--from", "start", type=int, default=1, show_default=True, help="The first seq to show.")
@click.option("--socket", "sock", default=None, help="The host's socket, if not D/host.sock.")
def attach(dir_: str, start: int, sock: str | None) -> None:
    """Print D's log entries from seq N, then live until the agent exits."""
    from huddle.host.client import HostError, host_dir_exists
    from huddle.host.client import attach as attach_entries

    if not host_dir_exists(dir_):
        _fail("attach", f"no hosted run in {dir_} (no events.jsonl, no host.sock)")
    out = sys.stdout.buffer
    try:
        for line in attach_entries(dir_, start, sock, note=lambda m: click.echo(f"huddle attach: {m}", err=True)):
            if line is not None:
                out.write(line)
                out.flush()
    except HostError as exc:
        _fail("attach", str(exc))
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # `| head`: no noise at exit


@click.command()
@click.argument("dir_", metavar="D")
@click.argument("value", metavar="JSON")
@click.option("--socket", "sock", default=None, help="The host's socket, if not D/host.sock.")
def send(dir_: str, value: str, sock: str | None) -> None:
    """Write one JSON value as a line to the agent's stdin (logged first)."""
    _call("send", dir_, {"op": "write", "line": value}, sock)


@click.command()
@click.argument("dir_", metavar="D")
@click.option("--now", is_flag=True, help="Skip the waits: SIGTERM, then SIGKILL at once.")
@click.option("--socket", "sock", default=None, help="The host's socket, if not D/host.sock.")
def stop(dir_: str, now: bool, sock: str | None) -> None:
    """Stop the agent: close its stdin, wait, SIGTERM, wait, kill its whole tree."""
    reply = _call("stop", dir_, {"op": "stop", "now": now}, sock)
    info = reply.get("exited") or {}
    click.echo(f"stopped: {info.get('reason', 'exited')}")


@click.command(context_settings=_PASS_THROUGH)
@click.option("--name", default=None, help="Name of the run (its folder under $HUDDLE_HOME/runs); default: a new id.")
@click.option(
    "--grace",
    type=float,
    default=3.0,
    show_default=True,
    help="Seconds a stop waits after closing stdin, and again after SIGTERM.",
)
@click.option(
    "--protocol",
    type=click.Choice(["claude", "codex", "acp", "none"]),
    default=None,
    help="The agent's protocol, for answering it from huddle (default: told from COMMAND).",
)
@click.option("--prompt", default="", help="The first user message, sent once the agent is ready.")
@click.argument("command", nargs=-1, required=True, type=click.UNPROCESSED)
def run(name: str | None, grace: float, protocol: str | None, prompt: str, command: tuple[str, ...]) -> None:
    """Host COMMAND under huddle's data folder and show what it does in one line.

    Ctrl-C stops it the clean way (a second Ctrl-C skips the waits).
    """
    from huddle.host.run import RunError, run_hosted

    try:
        code = run_hosted(list(command), name=name, grace=grace, protocol=protocol, prompt=prompt)
    except RunError as exc:
        _fail("run", str(exc), 2)
    sys.exit(code)


@click.command()
@click.argument("session_id", metavar="ID")
@click.argument("choice", type=click.Choice(["allow", "deny", "reply"]))
@click.argument("text", required=False, default="")
@click.option("--request", "request", type=int, default=None, help="The pending request to answer (its number).")
@click.option("--input", "input_json", default=None, metavar="JSON", help="Allow with this edit: the tool's input.")
@click.option("--option", default=None, help="One of the options the agent offered (its id), for allow.")
@click.option("--json", "as_json", is_flag=True, help="Print what POST /api/sessions/ID/answer returns.")
def answer(
    session_id: str,
    choice: str,
    text: str,
    request: int | None,
    input_json: str | None,
    option: str | None,
    as_json: bool,
) -> None:
    """Answer a run huddle hosts: allow or deny its pending tool call (deny TEXT: with a
    reason), or reply TEXT (a question's answer, or the next message on its turn).

    Without --request, the one pending request that takes CHOICE is answered; when
    several are pending, name one (`huddle show ID` lists them)."""
    import json

    from huddle.answer import session as answering
    from huddle.core.single import one_session_core
    from huddle.errors import HuddleError

    body: dict = {"choice": choice}
    if choice == "deny" and text:
        body["message"] = text
    elif choice == "reply":
        body["text"] = text
    elif text:
        body["option"] = text
    if option:
        body["option"] = option
    try:
        if input_json is not None:
            body["input"] = json.loads(input_json)
    except ValueError as exc:
        _fail("answer", f"--input is not JSON: {exc}")
    try:
        h = one_session_core(session_id)
        if request is None:
            _, d = answering.run_dir(h, session_id)
            request = answering.only_pending(answering.pending(d)["asks"], choice)
        body["request"] = request
        result = answering.answer(h, session_id, body, by="cli")
    except HuddleError as exc:
        _fail("answer", str(exc))
    if as_json:
        say_json(result)
    else:
        click.echo(f"answered request {result['request']}: {result['choice']} (log seq {result['seq']})")


COMMANDS = [host, attach, send, stop, run, answer]
