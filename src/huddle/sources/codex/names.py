"""`$CODEX_HOME/session_index.jsonl`: the names the TUI gives threads."""

from __future__ import annotations

import msgspec

from huddle.io.reader import GONE, RESET, LineReader
from huddle.io.safefile import forget, remember


class SessionIndex:
    """`$CODEX_HOME/session_index.jsonl`: thread names, append-only, last one wins."""

    def __init__(self, path: str):
        self.reader = LineReader(path)
        self.names: dict[str, str] = {}
        self.problems: list[str] = []  # its bad lines, one line each (board notes)

    def refresh(self) -> None:
        try:
            st = self.reader.check()
        except OSError as exc:  # a FIFO, a loop in its place: the note says so; the names stand
            remember(self.reader.path, exc)
            return
        if st == GONE:
            return
        if st == RESET:
            self.names, self.problems = {}, []
        try:
            lines = list(self.reader.lines(self))
        except OSError as exc:
            remember(self.reader.path, exc)
            return
        forget(self.reader.path)
        for off, line in lines:
            try:
                val = msgspec.json.decode(line)
            except msgspec.MsgspecError as exc:
                self.problem(self.reader.path, off, f"not JSON ({exc})")
                continue
            except RecursionError:
                self.problem(self.reader.path, off, "not JSON (nested too deep)")
                continue
            if isinstance(val, dict) and isinstance(val.get("id"), str) and isinstance(val.get("thread_name"), str):
                self.names[val["id"]] = val["thread_name"]

    def problem(self, path: str, offset: int, what: str) -> None:
        if len(self.problems) < 20:
            self.problems.append(f"{path}:{offset}: {what}")
