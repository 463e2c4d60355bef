"""The one small interface every source adapter implements.

A Source finds its sessions (cheaply: directory listings and stats) and hands out
one Handle per session. A Handle owns the incremental readers of that session's
files and its Session; `refresh()` reads only what was appended since last time.

Adapters register with `@register` (registry.py). The core calls them through
`guarded`, so an adapter's failure costs its own session (listed with an `error`), never the board.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

from huddle.io.reader import Cut, Judge, LineReader, Problems, Skip
from huddle.model.files import EMPTY, UNKNOWN_VERSION, Files
from huddle.model.session import Session
from huddle.model.signals import NOTHING, Live

if TYPE_CHECKING:
    from .settings import Settings


class Handle:
    """One session of one source, read incrementally."""

    failed: str | None = None  # the error the core last gave this session (it clears it once it reads again)

    def __init__(self, source: str, id: str) -> None:
        self.session = Session(source, id)

    @property
    def key(self) -> str:
        return self.session.key

    def refresh(self) -> bool:
        """Read what was appended; return whether anything changed."""
        raise NotImplementedError

    def __getstate__(self) -> dict[str, Any]:
        # The cache keeps handles between runs; the source is re-attached on load.
        d = self.__dict__.copy()
        d.pop("source", None)
        return d

    def files(self) -> list[str]:
        """Every file this session is read from (for watching and read-back checks)."""
        return []

    def regrouped(self, read_from: list[str]) -> bool:
        """Whether the scan now gives this (unread) handle other files than its sleeping
        session was read from (`read_from`, its cached head's): then it is read again
        from its start (core.sleeping.keep_dormant)."""
        return False

    def regroups(self) -> bool:
        """Whether this session's files moving can change which files the scan gives
        other sessions: then its source is scanned even while its folders stood still."""
        return False

    def ties(self) -> list[str]:
        """What ties this session's row to others of its folder (Source.settle decides
        them together): the sessions sharing a tie with one that moved, and theirs, are
        settled with it; [] for none (`entangled` alone: its folder is settled whole)."""
        return []

    def shape(self) -> list[Any] | None:
        """What the scan decides of this session's files without reading them, and the
        folder it looks at for it: [folder, what it decides] (Claude: whether its own
        folder is there, the 2.0 agent files it was given). A sleeping session whose only
        move is that folder's (another session came or went beside it) sleeps on while
        the scan gives it the same shape (core.sleeping); None: any move of its folders
        wakes it."""
        return None

    def shown_from(self) -> list[str]:
        """Files outside the session's own whose content its row shows (Codex's thread
        names): stamped with its files in the cache, so that a change wakes it."""
        return []

    def record_token(self) -> bytes | None:
        """None when events point at byte spans of files (a file's bytes tell whether it
        was rewritten); a source whose records are numbered otherwise (database rows)
        returns what names its numbering, which changes whenever the numbers start over."""
        return None

    def read_record(self, path: str, offset: int, length: int) -> bytes:
        """The raw record an event points at (`file`, `offset`, `length`), for read-back. A
        line of a transcript by default; a source whose records are not byte spans (rows
        of a database) overrides it."""
        from huddle.io.reader import read_span

        return read_span(path, offset, length)

    def entangled(self) -> bool:
        """Whether what this session shows hangs on other sessions' files beyond the
        response ids the core's ledger sees (a title another file gives): such a
        session is read with its source's others, never left unread from the cache."""
        return False

    def adopt(self, held: Handle) -> None:
        """This fresh handle of the same session, its files unmoved since `held` was read,
        takes what was decided for `held` across sessions (`Source.settle`: a title another
        file gives), so a session read whole again needs none of its neighbours."""

    def live(self, at: float | None = None) -> Live:
        """What the agent's process, registry, locks and store say now (or as of `at`,
        trusting such files as they are): signals, never a state (huddle.model.signals;
        the rules in huddle.model.attention decide). Default: nothing known."""
        return NOTHING


class Source:
    """One on-disk format. Subclasses declare, as class attributes, their name and
    their folder: the environment variable that names it and its default (`~/...`
    or `$XDG_DATA_HOME/...`), so adding an adapter edits nothing outside it."""

    name: ClassVar[str] = ""
    folder_env: ClassVar[str | None] = None
    default_folder: ClassVar[str | None] = None
    # the shell command that resumes one of its sessions, `{id}` standing for the id ("" if none)
    resume: ClassVar[str] = ""
    # how the agent is shown (registry.display: the pages, the CLI, notifications): its name
    # as its users say it, a short one, a colour (CSS)
    label: ClassVar[str] = ""
    short: ClassVar[str] = ""
    colour: ClassVar[str] = ""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.folder = settings.folder(self.name)  # "" when this source has none here
        self.notes: list[str] = []  # one line per problem its last scan met and lived with (the board shows them)
        # what its last scan met and did not read into a session, and why (huddle doctor)
        self.files = Files()

    def under(self, *parts: str) -> str:
        """A path inside this source's folder, or "" when it has no folder."""
        return os.path.join(self.folder, *parts) if self.folder else ""

    def roots(self) -> list[str]:
        """Folders this source reads (for the watcher and the read-only promise)."""
        return []

    def exists(self) -> bool:
        return any(os.path.isdir(r) for r in self.roots())

    def watch_dirs(self) -> list[str]:
        """Folders whose mtime moves when a session appears (for the status line's
        staleness check)."""
        return self.roots()

    def live_changed(self) -> set[str]:
        """Keys of the sessions whose live signals (a registry entry, a lock) moved at the
        last scan, though none of their files grew: the core reports them as changed, so
        a watcher looks at their rows at once."""
        return set()

    def between_scans(self, known: dict[str, Handle]) -> set[str] | None:
        """When no session of this source can have come or gone since its last scan (the
        core saw none of its folders move), the scan's other work only: its live signals
        looked at again, and what else its sessions' rows take from outside their files.
        `known`: the cached sessions whose files moved, as the scan would get them.
        Returns the keys whose live signals moved (as `live_changed`), or None when
        only a scan will do (the default)."""
        return None

    # A read session's live signals (Handle.live) come from `live_inputs()` alone, no
    # process looked at: its row is a function of files (a stored answer may hold it).
    rows_from_files = False

    def memo(self) -> Any:
        """What this source's last scan keeps for its next one, in another process too:
        plain data (marshal) the handle cache stores with the scan's stamps and gives back
        (`recall`) before the next run's scans. A scan trusts nothing of it that a stat
        does not vouch for. None: nothing kept (the default)."""
        return None

    def recall(self, memo: Any) -> None:
        """A memo an earlier run's scan kept (`memo`), given before this run scans."""

    def config_files(self) -> list[str]:
        """Files that say where this source's folders are (Vibe's config.toml): a stored
        answer stamps them, whether or not the folders are there."""
        return []

    def live_inputs(self) -> list[str] | None:
        """The files and folders `between_scans` reads, beyond the sessions' own: what a
        stored answer (`huddle.io.answers`) must find unmoved to be said again. None
        (the default): something other than files can move its rows (a process table),
        so no answer is stored while this source has a folder."""
        return None

    def scan(self, known: dict[str, Handle]) -> dict[str, Handle]:
        """All sessions now on disk, reusing the handles in `known` where they are
        still the same session. Must be cheap: listings and stats only. It accounts in
        `self.files` (a fresh `Files()` each scan) for the folders it looked in and
        every file it met and gives no handle, with the reason (huddle.model.files)."""
        raise NotImplementedError

    def fresh(self, h: Handle) -> Handle | None:
        """A new, unread handle of the same session and files as `h` (a read from its
        start: a page's whole timeline, an export); None if the session is gone. By
        default a scan of the source; a source whose handles know their files makes one
        without looking at the other sessions."""
        return (self.scan({}) or {}).get(h.key)

    def came(self, path: str, known: dict[str, Handle]) -> Handle | None:
        """The handle that reads a file that came (a watcher's notice named it), when
        where the file lies says all a scan would: a new, unread one of a session that
        came (alone in its files, no other session's given to it), or one of `known`
        (awake) that its own folder now gives it, told so as a scan tells it. None when
        only a scan places it (the default: the core then scans every source)."""
        return None

    def unplaced(self, path: str, size: int) -> tuple[bool, str]:
        """A file of a session that came out of its files with nothing in it (off the
        board): (known as not a session, the reason). By default an empty file is not a
        session, and bytes no record of which this source reads are a format version
        huddle does not know; a source that knows better says so (huddle.model.files)."""
        if size == 0:
            return True, EMPTY
        words = f"{size:,} bytes" if size > 0 else "its bytes"  # (-2: it moved as it was read)
        return False, f"{UNKNOWN_VERSION}: no record in {words} is one huddle reads"

    def settle(self, handles: dict[str, Handle]) -> set[str]:
        """After a round of reads: what one session's files say about another session (a
        title written in another file of its folder). `handles`: this source's sessions
        that came or read new bytes this round, and every session tied to them (their
        titles decided together: Handle.ties; a folder whose sessions came or went, all
        of it), awake (the keeper wakes them). Returns the keys it changed. Must be cheap
        when nothing of the kind is there."""
        return set()


def drain(
    reader: LineReader,
    session: Problems,
    feed: Callable[[int, bytes], None],
    out: list[Any] | None = None,
    flush: Callable[[], None] | None = None,
    every: int = 512,
    skip: Skip | None = None,
    judge: Judge | None = None,
    cut: Cut | None = None,
) -> None:
    """Feed every line appended to `reader`'s file to `feed(offset, line)`. A line whose
    feed fails in any way (a decoder's error, nesting too deep for it, a value the code
    did not expect) costs that line: a problem naming its file and offset, the events
    it had put in `out` dropped; the lines after it are read. `flush` runs every
    `every` lines and at the end (the session's bookkeeping is per batch). `skip`: lines
    passed over in the read buffer, never fed; `judge`: what says `skip` as the feed
    learns; `cut`: long lines passed over by their head (LineReader.lines)."""
    for n, (off, line) in enumerate(reader.lines(session, skip, judge, cut), 1):
        mark = len(out) if out is not None else 0
        try:
            feed(off, line)
        except RecursionError:
            _dropped(out, mark)
            session.problem(reader.path, off, "nested too deep to read")
        except Exception as exc:
            _dropped(out, mark)
            session.problem(
                reader.path, off, f"unreadable line ({type(exc).__name__}: {' '.join(str(exc).split())[:200]})"
            )
        if flush is not None and n % every == 0:
            flush()
    if flush is not None:
        flush()


def _dropped(out: list[Any] | None, mark: int) -> None:
    if out is not None:
        del out[mark:]


T = TypeVar("T")


def guarded(what: str, fn: Callable[..., T], *args: Any, on_error: Callable[[str], None] | None = None) -> T | None:
    """Run an adapter call; turn any failure into one line instead of a traceback."""
    try:
        return fn(*args)
    except Exception as exc:  # an adapter must never take the board down
        msg = f"{what}: {type(exc).__name__}: {exc}"
        if on_error is not None:
            on_error(msg)
        return None
