"""Names for events inside a session that hold across re-reads and machines.

An exported span or a hub row must keep its name when the same files are read again,
incrementally or whole, here or from a copy on another machine: so no path, no byte
offset of a merged timeline, no `seq` (which follows the order files were read). What
stays is the agent, the event's own id (response or call id) and, for an id seen more
than once in that agent (or none), which occurrence it is, since each agent's events
come from its own files in file order.
"""

from __future__ import annotations


class Occurrences:
    """`key(kind, agent, ident)`: "kind:agent:ident", then "...#1", "#2" for repeats."""

    __slots__ = ("seen",)

    def __init__(self) -> None:
        self.seen: dict[str, int] = {}

    def key(self, kind: str, agent: str, ident: str) -> str:
        base = f"{kind}:{agent}:{ident or '-'}"
        n = self.seen.get(base, 0)
        self.seen[base] = n + 1
        return base if n == 0 else f"{base}#{n}"
