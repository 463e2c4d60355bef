"""A core for one session: what `huddle export`, `show`, `events`, `transcript` and
`content` ask about one session, read without the rest of the home.

The session is named as `Huddle.find` names it (its key, its id, or a unique start of
its id). When the handle cache knows it and no source's folders moved since its last
scan (no session came or went: `HandleCache.still_sources`), a core holding that one
cached session (`Huddle(only=...)`) reads what the whole path would read of it: its
appended bytes, its source's live signals. Anything else (a session the cache has not
seen, a folder that moved, a name several sessions start with) is left to the lazy
core of the whole home, which reads only what moved and says the same.
"""

from __future__ import annotations

from huddle.sources import Settings

from .coldread import FirstRead
from .huddle import MIN_PREFIX, Huddle
from .keeper import Keeper


def named(keys: list[str], name: str) -> str | None:
    """The one key `name` names among `keys` (as Huddle.find: key, id, unique prefix)."""
    exact = [k for k in keys if k == name or k.split(":", 1)[1] == name]
    if len(exact) == 1:
        return exact[0]
    if exact or len(name) < MIN_PREFIX:
        return None
    near = [k for k in keys if k.startswith(name) or k.split(":", 1)[1].startswith(name)]
    return near[0] if len(near) == 1 else None


def one_session_core(name: str, settings: Settings | None = None, sources: list[str] | None = None) -> Huddle:
    """A refreshed core that can answer about the session `name` names (see the module doc)."""
    probe = Huddle(settings, sources, keep=Keeper(only=()))
    cache = probe.cache
    if cache is not None and not cache.note:
        key = named(cache.store.keys(), name)
        still = cache.still_sources()
        if key is not None and all(s.name in still for s in probe.sources if s.roots() and s.exists()):
            cache.store.close()
            h = Huddle(settings, sources, keep=Keeper(only=[key]))
            h.refresh()
            if h.spared >= {s.name for s in h.sources if s.roots() and s.exists()}:
                return h
    h = Huddle(settings, sources, keep=Keeper())
    h.refresh(FirstRead())
    return h
