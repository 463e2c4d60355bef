"""Full-text search over every session: a derived SQLite FTS5 index in huddle's cache
folder, kept level with what the core reads (index.py), the query language (query.py),
what each event contributes (text.py), the file (store.py), the server's indexing
thread (live.py). The JSON a search answers with is made in huddle.views.search."""

from __future__ import annotations

import weakref
from typing import Any

from .index import SearchIndex
from .store import Damaged

__all__ = ["Damaged", "SearchIndex", "attach", "index_for"]

_indexes: weakref.WeakKeyDictionary[Any, SearchIndex] = weakref.WeakKeyDictionary()


def index_for(h: Any) -> SearchIndex | None:
    """The index that goes with a core object (None when huddle has no home folder)."""
    got = _indexes.get(h)
    if got is None and h.settings.huddle_home:
        got = _indexes[h] = SearchIndex(h.settings.huddle_home, h.settings.folders)
    return got


def attach(h: Any, index: SearchIndex) -> None:
    _indexes[h] = index
