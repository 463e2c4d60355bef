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

from huddle.io import answers
from huddle.io.boardfile import board_path, board_row, read_board, write_rows
from huddle.model.attention import urgency

from .sleeping import folder_of

if TYPE_CHECKING:
    from .huddle import Huddle


def order_key(row: Any) -> list[Any]:
    """What a row sorts by (views.board.sort_rows): urgency and time, then source and id."""
    return [
        -urgency(row.get("state")),
        row.get("updated_at") or "",
        str(row.get("source") or ""),
        str(row.get("id") or ""),
    ]


def index_of(h: Huddle, rows: list[Any], spans: list[tuple[int, int]]) -> dict[str, Any]:
    """What a stored board needs to be patched (`patched`): per listed row (in board
    order) its key, order and place in the text; per session its files; the sessions
    read for others' sake."""
    heads = {k: d.head for k, d in h.dormant.items()}
    if h.cache is not None:
        heads.update((k, h.cache.heads[k]) for k in h.handles if k in h.cache.heads)
    return {
        "rows": [[f"{r['source']}:{r['id']}", *order_key(r), *span] for r, span in zip(rows, spans, strict=True)],
        "files": {k: [f[0] for f in head.get("files") or ()] for k, head in heads.items()},
        "tangled": [k for k, head in heads.items() if head.get("entangled")],
    }


def wanted(stale: answers.Stale) -> set[str] | None:
    """The sessions the full path would read: those whose files moved, those read for
    others' sake, and their folders' others (sleeping.between_scans); None if a moved
    file is no session's."""
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
    tangled = set(stale.index["tangled"])
    folders = {folder_of(files[k]) for k in tangled if k in files} - {""}
    near = {k for k, paths in files.items() if folders and folder_of(paths) in folders}
    return moved | tangled | near


def patched(stale: answers.Stale, echo: Callable[..., None]) -> bytes | None:
    """The board now (its JSON), from the stale answer and the sessions that moved, its
    notes said; None to be worked out whole (nothing said yet)."""
    from huddle.oneshot import FewCollections, joined_board, row_text, said_board
    from huddle.views.board import board_json
    from huddle.views.pricing import USER_FILE

    from .answering import conditions
    from .huddle import Huddle

    started = time.time_ns()
    want = wanted(stale)
    if want is None or len(want) > answers.PATCHABLE:
        return None
    h = Huddle(cache=True, lazy=True, only=want)
    home = h.settings.huddle_home
    if not home or h.cache is None or set(h.dormant) != want or h.cache.note:
        return None  # (a session not in the store, or a store not to be trusted: the whole path says so)
    old = read_board(board_path(home))
    if old is None:
        return None
    with FewCollections():
        h.refresh(parallel=True)
        if not _whole(h, stale, want):
            return None
        data = board_json(h, raw=True)
    fresh = {f"{r['source']}:{r['id']}": r for r in said_board(data)["sessions"]}
    said = stale.said
    parts = [(o[1:5], said[o[5] : o[6]], o[0]) for o in stale.index["rows"] if o[0] not in want]
    parts += [(order_key(r), row_text(r), k) for k, r in fresh.items()]
    parts.sort(key=lambda p: p[0][2:])
    parts.sort(key=lambda p: p[0][:2], reverse=True)  # (as sort_rows: stable, reversed)
    notes = list(data.get("notes", ()))
    text, spans = joined_board([p[1] for p in parts], notes)
    # what the full path leaves: the sessions read in the cache, the board file, the answer
    kept = {f"{r['source']}:{r['id']}": r for r in old["sessions"]}
    if any(p[2] not in fresh and p[2] not in kept for p in parts):
        return None  # (a board file of another board: the whole path writes it again)
    h.save_rows(h.built_rows)
    write_rows(
        home,
        [kept[k] if k not in fresh else board_row(fresh[k], h.handles.get(k)) for *_, k in parts],
        h.watch_dirs(),
        h.settings.folders,
    )
    cond = conditions(h, also=[os.path.join(home, USER_FILE)], stored_at=h.cache.store.stamp())
    if cond is not None:
        index = _merged(stale, h, cond, parts, spans)
        answers.save(home, text, notes, index.pop("cond"), started, index=index)
    for note in notes:
        echo(f"huddle: {note}", err=True)
    return text


def _whole(h: Huddle, stale: answers.Stale, want: set[str]) -> bool:
    """Whether the refresh read just what the full path would: every session wanted
    woke, no other came, every source was spared its scan, and no title is decided
    across a folder holding sessions this core does not."""
    if h.dormant or set(h.handles) != want:
        return False
    if any(src.roots() and src.exists() and src.name not in h.spared for src in h.sources):
        return False
    tangled = {folder_of(x.files()) for x in h.handles.values() if x.entangled()} - {""}
    files: dict[str, list[str]] = stale.index["files"]
    return not tangled or not any(k not in want and folder_of(p) in tangled for k, p in files.items())


def _merged(
    stale: answers.Stale, h: Huddle, cond: dict[str, Any], parts: list[Any], spans: list[tuple[int, int]]
) -> dict[str, Any]:
    """The new answer's conditions and index: the stale one's, the sessions read taking
    the place of what they were."""
    old: dict[str, Any] = stale.data
    files: dict[str, list[str]] = dict(stale.index["files"])
    mine = {p for k in h.handles for p in files.get(k, ())}
    for k in h.handles:
        files[k] = [f[0] for f in h.cache.heads[k].get("files") or ()] if h.cache is not None else []
    folders = {f[0]: f for f in old["folders"]}
    folders.update((f[0], f) for f in cond["folders"])
    merged = {
        **cond,
        "files": [f for f in old["files"] if f[0] not in mine] + cond["files"],
        "folders": list(folders.values()),
    }
    tangled = [k for k in stale.index["tangled"] if k not in h.handles]
    tangled += [k for k in h.handles if h.cache is not None and h.cache.heads[k].get("entangled")]
    rows = [[p[2], *p[0], *span] for p, span in zip(parts, spans, strict=True)]
    return {"cond": merged, "rows": rows, "files": files, "tangled": tangled}
