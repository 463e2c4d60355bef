"""A board said as JSON: its rows' texts, each encoded apart, joined as the board's
compact JSON (huddle.oneshot.json_bytes: what the API says, what a pipe is given), and
where each row stands in it (stored.patching puts a board together again from them)."""

from __future__ import annotations

from typing import Any

import msgspec


def board_text(
    rows: list[Any], notes: list[str], files: dict[str, Any] | None = None, texts: RowTexts | None = None
) -> tuple[bytes, list[tuple[int, int]]]:
    """`json_bytes({"sessions": rows, "notes": notes, "files": files})` (no notes, no
    files: none said), each row
    encoded apart (`row_text`, or as `texts` kept it), and where each row's text stands
    in it: a board put together again from its rows' texts (stored.patching) is the
    board as written."""
    said = texts.texts(rows) if texts is not None else [row_text(r) for r in rows]
    return joined_board(said, notes, files)


class RowTexts:
    """Rows' texts kept from one board said to the next, for a process that says many
    (a server answering `huddle status`): a sleeping row (model.rows.Kept, the same
    object while it sleeps: core.cache.Dormant.kept) said as kept, a built row encoded
    once per JSON it encodes to (the last board's kept here)."""

    def __init__(self) -> None:
        self._built: dict[bytes, bytes] = {}

    def texts(self, rows: list[Any]) -> list[bytes]:
        from huddle.model.rows import Kept

        built, last_built = {}, self._built
        out = []
        for r in rows:
            if isinstance(r, Kept):
                text = r.json
            else:
                raw = bytes(r) if isinstance(r, msgspec.Raw) else msgspec.json.encode(r)
                text = last_built.get(raw) or raw
                built[raw] = text
            out.append(text)
        self._built = built
        return out


def row_text(row: Any) -> bytes:
    """A board row's JSON as it stands in the board's (compact: as msgspec encodes it)."""
    return bytes(row) if isinstance(row, msgspec.Raw) else msgspec.json.encode(row)


def joined_board(
    texts: list[bytes], notes: list[str], files: dict[str, Any] | None = None
) -> tuple[bytes, list[tuple[int, int]]]:
    """A board's JSON from its rows' texts (`row_text`), and where each stands in it."""
    tail = b""
    if notes:
        tail = b',"notes":' + msgspec.json.encode(notes)
    if files:
        tail += b',"files":' + msgspec.json.encode(files)
    if not texts:
        return b'{"sessions":[]' + tail + b"}", []
    spans, at = [], len(b'{"sessions":[')
    parts: list[Any] = [b'{"sessions":[']
    for t in texts:
        spans.append((at, at + len(t)))
        at += len(t) + 1
        parts += (t, b",")
    parts[-1] = b"]" + tail + b"}"
    return b"".join(parts), spans  # (one copy of a board of many megabytes, not one per +)


def said_board(data: dict[str, Any]) -> dict[str, Any]:
    """A board read with its sleeping rows as kept (model.rows.Kept), as JSON says it:
    each such row its JSON as kept (msgspec.Raw), not decoded only to be encoded again."""
    from huddle.model.rows import Kept

    rows = [msgspec.Raw(r.json) if isinstance(r, Kept) else r for r in data.get("sessions", ())]
    return {**data, "sessions": rows}
