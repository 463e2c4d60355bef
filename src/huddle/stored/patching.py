"""`huddle status --json` after a few sessions moved: the stored answer worked out
again from those sessions alone, not from the whole home.

A stored answer (huddle.io.answers) is a board on which every session slept. When the
only things it hangs on that moved are some sessions' files (lines appended), the
full path would wake exactly those sessions (and the ones read for others' sake every
time: `entangled`), read their new bytes and build their rows, while every other row
stays as it was. This does the same with a core that holds those sessions alone
(`Huddle(only=...)`): the other rows are the stored answer's own text, put back in
board order (views.board.sort_rows) around the new ones; the board file and the handle
cache are brought up to date as the full path would leave them, and the new board is
stored again. Whatever it cannot vouch for (a session it cannot find in the index, a
source that must be scanned, a title decided across a folder it does not hold) it
leaves to the full path, which says the same at the home's cost.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from huddle.core.cache import response_ties
from huddle.core.keeper import folder_of
from huddle.io import answers
from huddle.io.boardfile import board_path, board_row, entry_of, read_kept, write_kept
from huddle.model.rows import Kept, Row, plain
from huddle.sources import guarded

if TYPE_CHECKING:
    from huddle.core.huddle import Huddle


def index_of(h: Huddle, rows: list[Row | Kept], spans: list[tuple[int, int]]) -> dict[str, Any]:
    """What a stored board needs to be patched (`patched`): per session its files, the
    sessions read for others' sake, and per listed row (in board order) its key, order
    and place in the text."""
    from huddle.views.board import order_key  # (loaded with the board it orders, not before)

    heads = {k: d.head for k, d in h.dormant.items()}
    if h.cache is not None:
        heads.update((k, h.cache.heads[k]) for k in h.handles if k in h.cache.heads)
    return {
        "files": {k: [f[0] for f in head.get("files") or ()] for k, head in heads.items()},
        "tangled": [k for k, head in heads.items() if head.get("entangled")],
        "tangle": [k for k, head in heads.items() if head.get("tangle")],
        "rows": [[r.key, *order_key(r), *span] for r, span in zip(rows, spans, strict=True)],
    }


def wanted(stale: answers.Stale) -> set[str] | None:
    """The sessions the full path would read: those whose files moved, those whose rows
    time or a process can move ("volatile": it wakes every unsettled session), those
    read for others' sake (sharing responses), and the folders of moved ones whose
    titles are decided across their folder (sleeping.settle_moved); None if a moved file
    is no session's."""
    files: dict[str, list[str]] = stale.index["files"]
    owners: dict[str, set[str]] = {}
    for k, paths in files.items():
        for p in paths:
            owners.setdefault(p, set()).add(k)  # (a file one row shows and another's own: both)
    moved: set[str] = set()
    for p in stale.moved:
        if p not in owners:
            return None
        moved |= owners[p]
    tangle = set(stale.index.get("tangle") or ())
    folders = {folder_of(files[k]) for k in moved if k in tangle} - {""}
    if stale.came:  # (a session that came where titles are decided across the folder: all of it)
        folders |= set(stale.came) & {folder_of(files[k]) for k in tangle if k in files}
    near = {k for k, paths in files.items() if folders and folder_of(paths) in folders}
    moved |= set(stale.data.get("volatile") or ())  # (rows time or a process can move: built again)
    return moved | set(stale.index["tangled"]) | near


def patched(stale: answers.Stale, echo: Callable[..., None]) -> bytes | None:
    """The board now (its JSON), from the stale answer and the sessions that moved, its
    notes said; None to be worked out whole (nothing said yet)."""
    from huddle.core import FirstRead, Huddle, Keeper
    from huddle.core.answering import conditions
    from huddle.cost.pricing import USER_FILE
    from huddle.views.board import board_json, kept_rows, order_key
    from huddle.views.files import sessions_counts, shifted
    from huddle.views.said import joined_board, row_text

    started = time.time_ns()
    want = wanted(stale)
    if want is None or len(want) > answers.PATCHABLE:
        return None
    # (files that came: placed as the full path's keeper places them, knowing every file)
    known = [p for paths in stale.index["files"].values() for p in paths] if stale.came else None
    h = Huddle(keep=Keeper(only=want, known=known))
    home = h.settings.huddle_home
    if not home or h.cache is None or set(h.dormant) != want or h.cache.note:
        return None  # (a session not in the store, or a store not to be trusted: the whole path says so)
    old = read_kept(board_path(home))  # (its rows as bytes: only the moved ones are written again)
    if old is None:
        return None
    # (written once all is vouched for, below: a run that goes whole after all reads the
    # cache as this one found it, a session that came still new there)
    if h.keeper is not None:
        h.keeper.autosave = False
    # (the look just found their folders still; but those where files came)
    h.cache.vouched = [st for st in stale.data["scans"] if not any(d[0] in (stale.came or ()) for d in st)]
    counted = stale.index.get("counts")
    if not isinstance(counted, dict):
        return None  # (an answer from before files were counted: the whole path counts them)
    before = sessions_counts(h, {})  # the sessions as the answer had them (asleep: their heads)
    h.refresh(FirstRead())
    came = set(h.handles) - want  # (new sessions only: a stored one is the whole path's)
    if came & stale.index["files"].keys() or not whole_read(h, stale, want | came) or not held_alone(h, came, want):
        return None
    built: dict[str, Row] = {}
    data = board_json(h, raw=True, built=built)
    read = set(h.handles)  # (the others wanted slept on: their rows stand as the stale text says them)
    fresh = {r.key: r for r in data["sessions"] if isinstance(r, Row) and r.key in read}
    new = [(order_key(r), row_text(r), k) for k, r in fresh.items()]
    pieces, runs = spliced(stale, read, new)
    notes = list(data.get("notes", ()))
    counts = shifted(counted, before, sessions_counts(h, built))
    text, spans = joined_board(pieces, notes, counts)
    rows = placed(runs, spans)
    # what the full path leaves: the sessions read in the cache, the board file, the answer
    _head, kept, stood = old
    if any(r[0] not in fresh and (r[0] not in kept or r[0] not in stood) for r in rows):
        return None  # (a board file of another board: the whole path writes it again)
    if h.keeper is not None:
        h.keeper.save(h, kept_rows(built))
    made = {k: board_row(plain(r), h.handles.get(k)) for k, r in fresh.items()}
    order = {r[0]: made.get(r[0]) for r in rows}  # (None: the row as the board file keeps it)
    entries = {k: entry_of(made[k]) if k in made else stood[k] for k in order}
    write_kept(home, order, kept, entries, h.watch_dirs(), h.settings.folders)
    cond = conditions(h, also=[os.path.join(home, USER_FILE)], stored_at=h.cache.store.stamp(), volatile=[])
    if cond is not None:
        whole, index = merged(stale, h, cond)
        index["rows"], index["counts"] = rows, counts
        answers.save(home, text, notes, whole, started, index=index)
    for note in notes:
        echo(f"huddle: {note}", err=True)
    return text


def spliced(
    stale: answers.Stale, want: set[str], new: list[tuple[list[Any], bytes | memoryview, str]]
) -> tuple[list[Any], list[list[tuple[int, list[Any]]]]]:
    """The board's rows as pieces of text in board order: each stretch of the stale
    text whose rows stand as they were (one slice, its separators within), and each
    new row's text (`new`: (order_key, text, key)); and per piece its rows as (where
    the piece began in the stale text, the index's row). The board order is
    views.board.sort_rows's: urgency and time down, then source and id up."""
    new.sort(key=lambda n: n[0][2:])
    new.sort(key=lambda n: n[0][:2], reverse=True)
    said = memoryview(stale.said)
    pieces: list[Any] = []
    runs: list[list[tuple[int, list[Any]]]] = []
    run: list[list[Any]] = []

    def close() -> None:
        if run:
            pieces.append(said[run[0][5] : run[-1][6]])
            runs.append([(run[0][5], o) for o in run])
            run.clear()

    j = 0
    for o in stale.index["rows"]:
        if o[0] in want:
            close()
            continue
        while j < len(new) and _before(new[j][0], o[1:5]):
            close()
            pieces.append(new[j][1])
            runs.append([(0, [new[j][2], *new[j][0], 0, len(new[j][1])])])
            j += 1
        run.append(o)
    close()
    for key, text, k in ((n[0], n[1], n[2]) for n in new[j:]):
        pieces.append(text)
        runs.append([(0, [k, *key, 0, len(text)])])
    return pieces, runs


def placed(runs: list[list[tuple[int, list[Any]]]], spans: list[tuple[int, int]]) -> list[list[Any]]:
    """The index's rows of a board joined from `spliced`'s pieces (their `spans` in it)."""
    return [
        [o[0], *o[1:5], at + o[5] - base, at + o[6] - base]
        for run, (at, _) in zip(runs, spans, strict=True)
        for base, o in run
    ]


def _before(a: list[Any], b: list[Any]) -> bool:
    """Whether a row of order `a` comes before one of `b` on the board (`order_key`)."""
    return (a[0], a[1]) > (b[0], b[1]) or ((a[0], a[1]) == (b[0], b[1]) and (a[2], a[3]) < (b[2], b[3]))


def held_alone(h: Huddle, came: set[str], want: set[str]) -> bool:
    """Whether the sessions that came hold no response another session outside this
    core holds (the store says which), and name none as their copies' origin: the full
    path would wake those (core.keeper.Keeper.partners), and their rows could move."""
    if not came:
        return True
    rids, named = response_ties(h.handles[k] for k in came)
    holders = h.cache.store.holders(rids) if rids and h.cache is not None else set()
    return holders is not None and (holders | named) <= (want | came)


def whole_read(h: Huddle, stale: answers.Stale, want: set[str]) -> bool:
    """Whether the refresh read just what the full path would: every session wanted is
    in this core, read or left asleep by the keeper (a folder-mate of a moved session
    whose title nothing moved: its row stands as kept), no other came, every source was
    spared its scan, and no title was decided across a folder holding sessions this
    core does not (sleeping.settle_moved)."""
    if set(h.handles) | set(h.dormant) != want or not set(h.handles):
        return False
    if any(src.roots() and src.exists() and src.name not in h.spared for src in h.sources):
        return False
    files: dict[str, list[str]] = stale.index["files"]
    # (a folder a session came to is looked at, but a title is decided across it only where
    # one of its sessions takes or gives one: core.titles.tied)
    tangle = [files[k] for k in stale.index.get("tangle") or () if k in files]
    tangle += [x.files() for x in h.handles.values() if guarded("tangle", x.entangled)]
    folders = h.settled_in & {folder_of(paths) for paths in tangle}
    return not folders or not any(k not in want and folder_of(p) in folders for k, p in files.items())


def merged(stale: answers.Stale, h: Huddle, cond: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The new answer's conditions and index (`index_of`, but its rows) from the stale
    one's and those of the sessions the partial core read (`cond`: core.answering's of
    them), which take the place of what they were."""
    old: dict[str, Any] = stale.data
    files: dict[str, list[str]] = dict(stale.index["files"])
    others = {p for k, paths in files.items() if k not in h.handles for p in paths}
    mine = {p for k in h.handles for p in files.get(k, ())} - others  # (one another row shows stays stamped)
    heads = h.cache.heads if h.cache is not None else {}
    for k in h.handles:
        files[k] = [f[0] for f in heads[k].get("files") or ()]
    folders = {f[0]: f for f in old["folders"]}
    folders.update((f[0], f) for f in cond["folders"])
    whole = {
        **cond,
        "files": [f for f in old["files"] if f[0] not in mine] + cond["files"],
        "folders": list(folders.values()),
    }
    tangled = [k for k in stale.index["tangled"] if k not in h.handles]
    tangled += [k for k in h.handles if heads[k].get("entangled")]
    tangle = [k for k in stale.index.get("tangle") or () if k not in h.handles]
    tangle += [k for k in h.handles if heads[k].get("tangle")]
    return whole, {"files": files, "tangled": tangled, "tangle": tangle}
