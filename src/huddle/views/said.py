"""A board said as JSON: its rows' texts, each encoded apart, joined as the board's
compact JSON (huddle.oneshot.json_bytes: what the API says, what a pipe is given), and
where each row stands in it (stored.patching puts a board together again from them)."""

from __future__ import annotations

from typing import Any

import msgspec


def board_text(
    rows: list[Any], notes: list[str], files: dict[str, Any] | None = None
) -> tuple[bytes, list[tuple[int, int]]]:
    """`json_bytes({"sessions": rows, "notes": notes, "files": files})` (no notes, no
    files: none said), each row encoded apart (`row_text`), and where each row's text
    stands in it: a board put together again from its rows' texts (stored.patching) is
    the board as written."""
    return joined_board([row_text(r) for r in rows], notes, files)


class RowTexts:
    """A board said from the last one, for a process that says many (a server answering
    `huddle status`): while the same sessions sleep, their rows in board order
    (views.board.with_asleep: the same list) are joined once, and each board is that
    text cut where the others stand (views.board.placement), not 3,000 rows joined."""

    def __init__(self) -> None:
        # (the sleeping rows in order, their text joined, where each row's text starts)
        self._asleep: tuple[list[Any], memoryview, list[int]] | None = None

    def pieces(self, rows: list[Any], notes: list[str], files: dict[str, Any] | None = None) -> list[Any]:
        """`board_text(rows, notes, files)[0]` in bytes-like pieces, to be written one after
        the other (a board of megabytes neither copied nor joined)."""
        from huddle.views.board import placement

        placed = placement(rows)
        if placed is None:
            return [board_text(rows, notes, files)[0]]
        ordered, cuts = placed
        if self._asleep is None or self._asleep[0] is not ordered:
            texts = [row_text(r) for r in ordered]
            starts, at = [], 0
            for t in texts:
                starts.append(at)
                at += len(t) + 1
            starts.append(at)  # (where one more would start: the end of the last, and its comma)
            self._asleep = (ordered, memoryview(b",".join(texts)), starts)
        _ordered, joined, starts = self._asleep
        pieces: list[Any] = [_HEAD]
        was = 0
        for i, r in cuts:  # (each other row, before the sleeping row `i`)
            if i > was:
                pieces += (joined[starts[was] : starts[i] - 1], b",")
            pieces += (row_text(r), b",")
            was = i
        if was < len(ordered):
            pieces.append(joined[starts[was] : starts[-1] - 1])
        elif len(pieces) > 1:
            pieces.pop()  # (no comma after the last)
        pieces += (b"]", _tail(notes, files), b"}")
        return pieces


def row_text(row: Any) -> bytes | memoryview:
    """A board row's JSON as it stands in the board's (compact: as msgspec encodes it;
    a sleeping row's as kept: model.rows.Kept)."""
    from huddle.model.rows import Kept

    if isinstance(row, Kept):
        return row.json
    return bytes(row) if isinstance(row, msgspec.Raw) else msgspec.json.encode(row)


_HEAD = b'{"sessions":['


def _tail(notes: list[str], files: dict[str, Any] | None) -> bytes:
    tail = b""
    if notes:
        tail = b',"notes":' + msgspec.json.encode(notes)
    if files:
        tail += b',"files":' + msgspec.json.encode(files)
    return tail


def joined_board(
    texts: list[Any], notes: list[str], files: dict[str, Any] | None = None
) -> tuple[bytes, list[tuple[int, int]]]:
    """A board's JSON from its rows' texts (`row_text`), and where each stands in it."""
    tail = _tail(notes, files)
    if not texts:
        return _HEAD + b"]" + tail + b"}", []
    spans, at = [], len(_HEAD)
    parts: list[Any] = [_HEAD]
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
