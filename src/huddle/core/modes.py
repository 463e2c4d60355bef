"""What a run reads for, and so what may stay unread: one small class per use of the
handle cache (core.keeper.Keeper holds one).

    WholeMode   every cached session loaded at once (a command that walks them all)
    BoardMode   the board (`huddle status`, the server): a session sleeps while nothing it
                was read from moved, time alone cannot move its row (the view said it is
                `still`), and it shares no response with another
    UsageMode   token counts (`huddle usage`'s index): any unmoved session sleeps; those
                sharing responses wake together (the ledger decides over all of them);
                a first count starts from the board's cached handles
    TextMode    what sessions say (the search index): any unmoved session sleeps
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from huddle.io.stamps import files_unmoved, folders_unmoved, unmoved

from .cache import BOARD, tangled_with

if TYPE_CHECKING:
    from .cache import Dormant


class Mode:
    holds_all = False  # every cached session loaded at the start (none sleeps)
    live_signals = True  # a source spared its scan still looks at its live signals
    titles = True  # a title decided across a folder matters (its folder wakes together)
    json_rows = False  # rows kept as their JSON (said again as they are: a board)
    starts_from: str | None = None  # another use's cache a first read takes its handles from

    def sleeps(self, d: Dormant, seen: dict[str, int] | None) -> bool:
        raise NotImplementedError

    def with_them(self, dormant: dict[str, Dormant], waking: list[str]) -> list[str]:
        """The sleeping sessions that wake with these."""
        return []


class WholeMode(Mode):
    holds_all = True

    def sleeps(self, d: Dormant, seen: dict[str, int] | None) -> bool:
        return False


class BoardMode(Mode):
    json_rows = True

    def sleeps(self, d: Dormant, seen: dict[str, int] | None) -> bool:
        brief = d.head.get("brief")
        still = isinstance(brief, dict) and bool(brief.get("still"))
        return still and not d.head.get("entangled") and unmoved_but_shaped(d.head, seen)


class UsageMode(Mode):
    live_signals = False
    titles = False
    # the board's: a full read holds every usage event a usage-only one does, so a first
    # count after a board reads what moved since, not every file (core.keeper.Keeper.attach)
    starts_from = BOARD

    def sleeps(self, d: Dormant, seen: dict[str, int] | None) -> bool:
        return isinstance(d.head.get("brief"), dict) and unmoved_but_shaped(d.head, seen)

    def with_them(self, dormant: dict[str, Dormant], waking: list[str]) -> list[str]:
        return tangled_with(dormant, waking)


class TextMode(Mode):
    def sleeps(self, d: Dormant, seen: dict[str, int] | None) -> bool:
        return unmoved(d.head, seen)


def unmoved_but_shaped(head: dict[str, Any], seen: dict[str, int] | None = None) -> bool:
    """Nothing the head was stamped from moved, but the folder its shape is decided in
    (Handle.shape: a session came or went beside it), whose moves the scan judges
    (`core.keeper.Keeper.kept`: the same shape sleeps on)."""
    shape = head.get("shape")
    if not isinstance(shape, list) or not shape:
        return unmoved(head, seen)
    dirs = [d for d in head.get("dirs") or () if d[0] != shape[0]]
    return files_unmoved(head.get("files") or ()) and folders_unmoved(dirs, seen)
