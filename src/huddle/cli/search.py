"""`huddle search`: full-text search over every session (what GET /api/search returns)."""

from __future__ import annotations

import sys

import click

from huddle.io.visible import visible
from huddle.oneshot import say_json
from huddle.search.text import COLUMNS

BIG_BUILD = 50 << 20  # bytes: a first build this big shows a progress bar on a terminal


BIG_READ = 200  # sessions: a first read this long shows a bar too


def _progress_factory(console):
    """Rich progress bars for a big first build on a terminal (reading the sessions,
    then indexing them); None for anything small or not on a terminal."""
    state: dict = {}

    def make(what: str, total: int):
        small = total < (BIG_READ if what == "reading sessions" else BIG_BUILD)
        if small or not sys.stderr.isatty():
            return None
        from rich.progress import BarColumn, DownloadColumn, MofNCompleteColumn, Progress, TimeRemainingColumn

        bar = state.get("bar")
        if bar is None:
            bar = state["bar"] = Progress(
                "[progress.description]{task.description}",
                BarColumn(),
                "{task.fields[count]}",
                TimeRemainingColumn(),
                console=console,
                transient=True,
            )
            bar.start()
        counter = MofNCompleteColumn() if what == "reading sessions" else DownloadColumn()
        task = bar.add_task(what, total=total, count="")

        def step(done: int, _total: int) -> None:
            bar.update(task, completed=done, count=counter.render(bar.tasks[task]))

        return step

    return make, state


# `huddle search '"fix the login"' -flaky`: a word to leave out is written with one dash, as
# in the query language, so options click does not know are words of the query; a long
# one (`--limt`) is still a mistyped option, said as such.
@click.command(context_settings={"ignore_unknown_options": True})
@click.argument("query", nargs=-1, required=True)
@click.option("--json", "as_json", is_flag=True, help="Print what GET /api/search returns.")
@click.option("--source", default=None, help="Only this agent (claude, codex, vibe...).")
@click.option("--project", default=None, help="Only sessions of this project (the folder's name).")
@click.option("--session", "session_id", default=None, metavar="ID", help="Only this session.")
@click.option(
    "--kind",
    "kinds",
    multiple=True,
    type=click.Choice(COLUMNS),
    help="Only these messages (repeatable). Default: prompt, say, think; tool adds tool inputs and outputs.",
)
@click.option("--since", default=None, metavar="DATE", help="Only messages at or after DATE (YYYY-MM-DD or ISO 8601).")
@click.option("--until", default=None, metavar="DATE", help="Only messages before DATE.")
@click.option("--limit", default=None, help="At most this many results (default 20).")
@click.option("--rank", is_flag=True, help="Most relevant first (default: newest first).")
@click.option("--exact", is_flag=True, help="Only the words as typed (by default their stems match too: tests, test).")
@click.option("--sessions", "by_session", is_flag=True, help="One line per session, with its hits counted.")
def search(query, as_json, source, project, session_id, kinds, since, until, limit, rank, exact, by_session) -> None:
    """Find messages in every session: words (all must be there), "a phrase",
    prefix*, -word to leave out; tool: to include tool inputs and outputs."""
    from rich.console import Console

    from huddle.errors import HuddleError
    from huddle.search.index import one_shot
    from huddle.sources import Settings
    from huddle.views.operations import BY_NAME

    typo = next((w.split("=", 1)[0] for w in query if w.startswith("--") and len(w) > 2), None)
    if typo is not None:
        import difflib

        known = [o for p in search.params for o in p.opts if o.startswith("--")]
        raise click.NoSuchOption(typo, possibilities=difflib.get_close_matches(typo, known))
    err = Console(stderr=True)
    settings = Settings.from_env()
    make, state = _progress_factory(err)
    h, _index = one_shot(settings, make)
    if "bar" in state:
        state["bar"].stop()
    for note in h.notes:
        click.echo(f"huddle: {visible(note)}", err=True)
    try:
        data = BY_NAME["search"].answer(
            h,
            q=" ".join(query),
            source=source,
            project=project,
            session=session_id,
            kind=",".join(kinds) or None,
            since=since,
            until=until,
            limit=limit,
            rank=rank,
            exact=exact,
        )
    except HuddleError as exc:
        raise click.ClickException(str(exc)) from None
    if as_json:
        say_json(data)
        return
    if by_session:
        print_sessions(data, Console())
    else:
        print_results(data, Console())


def print_sessions(data: dict, console) -> None:
    from rich.text import Text

    for note in data["notes"]:
        console.print(Text(f"huddle: {note}", style="yellow"))
    if not data["sessions"]:
        console.print(Text("No messages found.", style="dim"))
    for g in data["sessions"]:
        head = Text(f"{(g['last'] or '')[:16].replace('T', ' ')}  ", style="dim")
        head.append(g["title"] or g["session"], style="bold")
        hits = f"{g['hits']} hit{'s' if g['hits'] != 1 else ''}" + (f" ({g['stem']} by stem)" if g["stem"] else "")
        head.append(f"  {g['source']} · {g['project'] or '(no project)'} · {hits}", style="dim")
        console.print(head)
        console.print(Text(f"  {g['hit']['snippet']['text']}"))
        console.print(Text(f"  huddle show {g['session']}", style="dim"))


def print_results(data: dict, console) -> None:
    from rich.text import Text

    for note in data["notes"]:
        console.print(Text(f"huddle: {visible(note)}", style="yellow"))
    if not data["results"]:
        console.print(Text("No messages found.", style="dim"))
        return
    for r in data["results"]:
        when = (r["t"] or "")[:16].replace("T", " ")
        head = Text(f"{when}  ", style="dim")
        head.append(visible(f"{r['source']} · {r['project'] or '(no project)'} · "), style="dim")
        head.append(visible(r["title"] or r["session"]), style="bold")
        head.append(
            visible(f"  {r['agent_name']} · {r['kind']}" + (" · by stem" if r["match"] == "stem" else "")), style="cyan"
        )
        console.print(head)
        console.print(_snippet(r["snippet"]))
        console.print(Text(visible(f"  huddle show {r['session']}   (ref {r['ref']})"), style="dim"))
    if data["more"]:
        console.print(Text("more results: --limit N, or narrow with --project, --since, --kind", style="dim"))


def _snippet(snip: dict):
    """The snippet with its marks, each piece shown as text (an escape written out is
    longer than the character it stands for: the marks move with it)."""
    from rich.text import Text

    text = snip["text"]
    body = Text("  ")
    at = 0
    for a, b in snip["marks"]:
        if a < at:
            continue
        body.append(visible(text[at:a]))
        body.append(visible(text[a:b]), style="bold yellow")
        at = b
    body.append(visible(text[at:]))
    return body


COMMANDS = [search]
