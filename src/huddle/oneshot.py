"""`huddle status --json`, the command scripts run most, answered without loading click
(a sixth of its time). The console script routes exactly that command line here; the
click command (`huddle.cli`) answers through the same functions, so both say the same.
"""

from __future__ import annotations

import re
import sys
from typing import Any

_ANSI = re.compile(r"\033\[[0-?]*[ -/]*[@-~]")  # what click.echo strips off a stream that is no terminal


def fits(argv: list[str]) -> bool:
    """Whether this command line is one answered here: `status --json`, on a UTF-8
    stdout (click re-wraps a stream it finds misconfigured; this path leaves that to it)."""
    enc = (getattr(sys.stdout, "encoding", None) or "").lower().replace("-", "").replace("_", "")
    return argv == ["status", "--json"] and enc == "utf8"


def echo(text: str, err: bool = False) -> None:
    """A line as click.echo writes it."""
    stream = sys.stderr if err else sys.stdout
    if not stream.isatty():
        text = _ANSI.sub("", text)
    stream.write(text + "\n")
    stream.flush()


def json_text(data: Any) -> str:
    """JSON as json.dumps(indent=2, ensure_ascii=False) writes it, in a fraction of its
    time (its indenting encoder is pure Python: half a second on a large board)."""
    import msgspec

    try:
        return msgspec.json.format(msgspec.json.encode(data), indent=2).decode()
    except (TypeError, msgspec.EncodeError):
        import json

        return json.dumps(data, indent=2, ensure_ascii=False)


def board(when: float | None = None) -> dict[str, Any]:
    """The board (as of `when`, or now from the cache), its notes said on stderr."""
    from huddle.core import Huddle
    from huddle.views.board import board_json

    # --at replays each timeline up to that time: it needs whole timelines, which the
    # cache does not keep, so it reads the files.
    # A one-shot board leaves the sessions nothing moved in unread: their rows are cached.
    h = Huddle(cache=when is None, lazy=when is None)
    h.refresh(parallel=when is None)
    data = board_json(h, at=when)
    if when is None:
        h.write_board_cache(data)
    for note in data.get("notes", ()):
        echo(f"huddle: {note}", err=True)
    return data


def status_json() -> int:
    """`huddle status --json`: every session, as GET /api/sessions returns them."""
    from huddle.views.select import Select

    try:
        echo(json_text(Select(None, None, None).apply(board())))
    except BrokenPipeError:  # as click: the reader went away, and nothing more is said
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except KeyboardInterrupt:
        echo("Aborted!", err=True)
        return 1
    return 0
