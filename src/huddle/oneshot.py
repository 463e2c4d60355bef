"""`huddle status --json` and `huddle usage --json`, what scripts run most, answered
without loading click (a sixth of their time). The console script routes exactly those
command lines here; the click commands (`huddle.cli`) answer through the same functions,
so both say the same.
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False  # typing and re cost a stored answer (huddle.io.answers) a third of its time
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from huddle.cost.pricing import Table
    from huddle.sources import Settings

ANSI = r"\033\[[0-?]*[ -/]*[@-~]"  # what click.echo strips off a stream that is no terminal


def answer(argv: list[str]) -> int | None:
    """The exit code of a command line answered here, or None for one that is not:
    `status --json` and `usage --json` on a UTF-8 stdout (click re-wraps a stream it
    finds misconfigured; this path leaves that to it)."""
    enc = (getattr(sys.stdout, "encoding", None) or "").lower().replace("-", "").replace("_", "")
    commands: dict[tuple[str, ...], Callable[[], int]] = {
        ("status", "--json"): status_json,
        ("usage", "--json"): usage_json,
    }
    run = commands.get(tuple(argv))
    if run is None or enc != "utf8":
        return None
    try:
        return run()
    except BrokenPipeError:  # as click: the reader went away, and nothing more is said
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except KeyboardInterrupt:
        echo("Aborted!", err=True)
        return 1


def echo(text: str, err: bool = False) -> None:
    """A line as click.echo writes it."""
    stream = sys.stderr if err else sys.stdout
    if err:  # notes and errors name files and sessions: shown, never obeyed
        from huddle.io.visible import visible

        text = visible(text)
    if "\033" in text and not stream.isatty():
        import re

        text = re.sub(ANSI, "", text)
    stream.write(text + "\n")
    stream.flush()


def json_bytes(data: Any) -> bytes:
    """`data` as compact JSON, UTF-8 (what a pipe is given and what is stored: `printed`
    indents it for a person), as json.dumps(separators=(",", ":"), ensure_ascii=False)
    writes it, in a fraction of its time."""
    import msgspec

    try:
        return msgspec.json.encode(data)
    except (TypeError, msgspec.EncodeError):
        import json

        def kept(o: Any) -> Any:  # (a row given as its JSON: said_board)
            if isinstance(o, msgspec.Raw):
                return json.loads(bytes(o))
            if isinstance(o, msgspec.Struct):  # (a typed row: model.rows)
                return msgspec.to_builtins(o)
            raise TypeError(type(o).__name__)

        return json.dumps(data, separators=(",", ":"), ensure_ascii=False, default=kept).encode()


def printed(said: bytes | bytearray | memoryview, stream: Any = None) -> bytes | bytearray | memoryview:
    """JSON as a `--json` command writes it to `stream` (stdout): indented for a person
    at a terminal, as said (compact, as the API says it) to a pipe or a file, where a
    board of megabytes is read by a program."""
    stream = sys.stdout if stream is None else stream
    try:
        to_person = stream.isatty()
    except (AttributeError, ValueError):
        to_person = False
    if not to_person:
        return said
    import msgspec

    return msgspec.json.format(bytes(said), indent=2)


def say_json(data: Any) -> None:
    """`data` as a `--json` command writes it (`printed`), with a newline."""
    say(json_bytes(data))


def board(when: float | None = None) -> dict[str, Any]:
    """The board as of `when` (read from the files), or now: said from the stored answer
    while nothing it came from moved (huddle.io.answers), else read from the cache. Its
    notes are said on stderr."""
    if when is not None:
        return _read(when)[0]
    said, _patched = said_now()
    if said is not None:
        import msgspec

        from huddle.model.rows import board_of

        try:
            return board_of(said)  # (a stored answer is a view of its file)
        except msgspec.DecodeError:  # (one an older huddle stored, its rows shaped otherwise: read again)
            pass
    return read_now(text=False)[0]


class FewCollections:
    """The cyclic collector held off while a one-shot command builds what it keeps to
    the end (sessions, events, rows: nothing it could free): it walked them again at
    every threshold, a tenth of a cold `huddle usage`'s time in the parent. Put back as
    it was after. (A class: contextlib costs this path 20 ms of imports.)"""

    def __enter__(self) -> None:
        import gc

        self.was = gc.isenabled()
        gc.disable()

    def __exit__(self, *exc: object) -> None:
        import gc

        if self.was:
            gc.enable()


def _read(when: float | None, raw: bool = False) -> tuple[dict[str, Any], Any]:
    """(the board, the core it was read with), its notes said on stderr. `raw`: its
    sleeping rows as kept (views.board.board_json), to be said as JSON (`said_board`)."""
    from huddle.core import FirstRead, Huddle, Keeper
    from huddle.views.board import board_json, leave_board

    # --at replays each timeline up to that time: it needs whole timelines, which the
    # cache does not keep, so it reads the files.
    # A one-shot board leaves the sessions nothing moved in unread: their rows are cached.
    h = Huddle(keep=Keeper() if when is None else None)
    built: dict[str, Any] = {}
    with FewCollections():
        h.refresh(FirstRead() if when is None else None)
        data = board_json(h, at=when, raw=raw, built=built)
    if when is None:
        leave_board(h, data, built)
    for note in data.get("notes", ()):
        echo(f"huddle: {note}", err=True)
    return data, h


def stored_name(operation: str) -> str:
    """The stored answer an operation is said from (io.answers.STORED, which the
    operations table says too: not imported here, a stored answer is said before it)."""
    from huddle.io.answers import STORED

    return STORED[operation]


def stored(name: str | None = None) -> bytes | memoryview | None:
    """`huddle status --json`'s stored answer (UTF-8), or another's (`name`: see
    huddle.io.answers), its notes said on stderr; None when there is none, or something
    it came from moved."""
    return looked(name)[0]


def looked(name: str | None = None, most: int = 0, came: bool = False) -> tuple[bytes | memoryview | None, Any]:
    """(`stored`'s answer, or None and, if only `most` session files or fewer moved
    under it, the answer as stale: huddle.io.answers.Stale, for stored.patching; `came`:
    also when files came in its scans' folders, for a server to read: io.answers.look)."""
    import os

    from huddle.io import answers
    from huddle.io.folders import huddle_home

    home = huddle_home(os.environ)
    hit, stale, problem = answers.look(home, name or stored_name("status"), most, came) if home else (None, None, None)
    if problem:
        echo(f"huddle: {problem}", err=True)
    if hit is None:
        return None, stale
    said, notes = hit
    for note in notes:
        echo(f"huddle: {note}", err=True)
    return said, None


def read_now(text: bool) -> tuple[dict[str, Any], bytes | None]:
    """The board now, read from the cache (its notes said), and its JSON if `text` (the
    board then with its sleeping rows as kept: `said_board`). A board that read nothing
    new is kept as the stored answer (core.answering)."""
    import os
    import time

    from huddle.core.answering import conditions
    from huddle.cost.pricing import USER_FILE
    from huddle.io import answers

    started = time.time_ns()
    data, h = _read(None, raw=text)
    home = h.settings.huddle_home
    cond = conditions(h, also=[os.path.join(home, USER_FILE)], volatile=[]) if home else None
    said, spans = said_spans(data) if text or cond is not None else (None, None)
    if cond is not None and said is not None:
        from huddle.stored.patching import index_of

        index = index_of(h, data["sessions"], spans) if spans is not None else None
        if index is not None:
            index["counts"] = data.get("files") or {}  # (stored.patching moves them with the rows)
        answers.save(home, said, list(data.get("notes", ())), cond, started, stored_name("status"), index=index)
    elif home:
        answers.drop(home, stored_name("status"))
    return data, said


def said_spans(data: dict[str, Any]) -> tuple[bytes, list[tuple[int, int]] | None]:
    """A board's JSON as `status --json` prints it (its sleeping rows as kept: said
    as they stand), and where each row stands in it (None if only json.dumps could say it)."""
    import msgspec

    from huddle.views.said import board_text, said_board

    try:
        return board_text(said_board(data)["sessions"], list(data.get("notes", ())), data.get("files"))
    except (TypeError, msgspec.EncodeError):  # what only json.dumps says (json_bytes)
        return json_bytes(said_board(data)), None


def said_pieces(data: dict[str, Any], texts: Any) -> list[Any]:
    """`said_spans`'s text in bytes-like pieces, said from the last board's by `texts`
    (views.said.RowTexts): written one after the other, a board is never copied whole."""
    import msgspec

    try:
        return texts.pieces(data.get("sessions", []), list(data.get("notes", ())), data.get("files"))
    except (TypeError, msgspec.EncodeError):  # what only json.dumps says (json_bytes)
        from huddle.views.said import said_board

        return [json_bytes(said_board(data))]


def say(said: bytes | bytearray | memoryview) -> int:
    """A stored answer on stdout, as echo would have written it."""
    sys.stdout.flush()
    out = sys.stdout.buffer  # (the bytes echo would write: stdout is UTF-8 here)
    out.write(printed(said))
    out.write(b"\n")
    out.flush()
    return 0


def status_json() -> int:
    """`huddle status --json`: every session, as GET /api/sessions returns them."""
    said, _patched = said_now()
    if said is not None:
        return say(said)
    from huddle.core.store import one_answer

    one_answer()
    _data, said = read_now(text=True)
    return say(said or b"")


def said_now(ask_server: bool = True) -> tuple[bytes | bytearray | memoryview | None, bool]:
    """(the board now as its stored answer says it, or as a `huddle serve` running on
    this home says it (`ask_server`: io.served), or as patched from the stored answer
    only some sessions' files moved under: the board file and the next answer with it,
    stored.patching; None when it must be read whole, its notes said; whether it was
    patched)."""
    from huddle.io.answers import PATCHABLE

    if ask_server and (told := from_server(fenced=True)) is not None:  # (nothing stated: live.fences)
        return told, False
    said, stale = looked(most=PATCHABLE, came=ask_server)
    if said is not None:
        return said, False
    if ask_server and (told := from_server(stale)) is not None:
        return told, False
    if stale is None:
        return None, False
    if not stale.usable(lambda line: echo(f"huddle: {line}", err=True)):  # (a server's question checks less)
        return None, False
    from huddle.core.store import one_answer
    from huddle.stored.patching import patched

    one_answer()
    with FewCollections():
        return patched(stale, echo), True


def from_server(stale: Any = None, fenced: bool = False) -> bytes | bytearray | None:
    """The board as a `huddle serve` running on this home says it now (io.served: told
    the session files that moved under a `stale` stored answer, or `fenced`: a fence
    left, nothing stated), its notes said; None when none answers."""
    import os

    from huddle.io import served
    from huddle.io.folders import huddle_home

    home = huddle_home(os.environ)
    moved, since, folders, code_now = None, None, None, None
    if stale is not None:
        code_now = stale.data.get("code")  # (checked against huddle's code as it is: io.answers.look)
        came = stale.came or {}
        moved, since, folders = (
            [*stale.moved, *(f for fs in came.values() for f in fs)],
            stale.data.get("saved_ns"),
            [*came],
        )
    got = served.ask(home, "status", moved, since, folders, code_now, fenced) if home else None
    if got is None:
        return None
    said, notes = got
    for note in notes:
        echo(f"huddle: {note}", err=True)
    return said


def refresh_stored() -> bool:
    """The status line's refresher: the board file (and the stored answer) brought up
    to date from the sessions that moved under the stored answer, as `huddle status
    --json` leaves them, nothing said on stdout. False when there was no such answer."""
    said, patched = said_now(ask_server=False)
    return patched and said is not None


def prices(settings: Settings) -> Table | None:
    """The price table in force; None when the user's file cannot be used (said)."""
    from huddle.cost.pricing import current

    table = current(settings.huddle_home)
    if table.problem:
        echo(f"huddle: {table.problem}", err=True)
        return None
    return table


def usage(
    settings: Settings,
    table: Table,
    by: str,
    when: float | None,
    before: float | None,
    keep: list[Any] | None = None,
    agent: str | None = None,
    project: str | None = None,
) -> dict[str, Any]:
    """The usage report from the usage index (it reads only what moved since the last
    run), its notes said on stderr; of one agent and/or project when given. `keep`: told
    what the report hangs on when it may be kept as a stored answer
    (usage.index.counted_from_index)."""
    from huddle.usage.index import counted_from_index
    from huddle.usage.own import with_own
    from huddle.usage.report import aggregate, only

    summed = by == "day" and when is None and before is None and not agent and not project
    with FewCollections():
        counted, notes = counted_from_index(settings, table, when, before, keep=keep, summed=summed)
    counted = only(counted, agent, project)
    for note in notes:
        echo(f"huddle: {note}", err=True)
    if summed and counted.get("sums") is not None:
        from huddle.usage.sums import report

        data = report(counted["sums"], table, notes)  # (kept summed: what aggregate says of the rows)
    else:
        data = aggregate(counted, by=by, since=when, table=table, notes=notes, until=before)
    return with_own(data, settings.huddle_home, table, when, before)  # (huddle's own tokens, apart)


def usage_json() -> int:
    """`huddle usage --json`: every day's tokens and cost; said again from its stored
    answer while no session file, folder or price moved (huddle.io.answers)."""
    import time

    from huddle.io import answers

    said = stored(stored_name("usage"))
    if said is not None:
        return say(said)
    from huddle.core.store import one_answer
    from huddle.sources import Settings

    one_answer()
    started = time.time_ns()
    settings = Settings.from_env()
    table = prices(settings)
    if table is None:
        return 1
    keep: list[Any] = []
    data = usage(settings, table, "day", None, None, keep=keep)
    said = json_bytes(data)
    home = settings.huddle_home
    if keep and home:
        answers.save(home, said, list(data.get("notes", ())), keep[0], started, stored_name("usage"))
    elif home:
        answers.drop(home, stored_name("usage"))
    return say(said)
