"""Kilo CLI sessions: OpenCode's SQLite schema (plus Kilo's own tables, which huddle does not
need) in `$XDG_DATA_HOME/kilo/kilo.db`, read by the OpenCode reader under Kilo's names.

The CLI's own rules (its `storage/db.ts`): `KILO_DB` names another database, absolute or under
the data folder; a build of another channel writes `kilo-<channel>.db` there, or keeps an
older `opencode-<channel>.db`; `HUDDLE_KILO_DIR` points huddle at another data folder. Its
state folder (`$XDG_STATE_HOME/kilo`) is OpenCode's, locks included when written.

What differs from OpenCode is in the shared reader, where it holds for both: `run --fork`
copies a session's messages with new ids and their own creation times (marked copied, so each
response counts in the session it came from), a fork's `<title> (fork #N)` is no title of its
own, and a title given at creation (`run --title`) is the user's. Live signals are generic
(live.py): the attention rules decide the state.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from huddle.sources.opencode.source import OpenCodeSource
from huddle.sources.registry import register

if TYPE_CHECKING:
    from huddle.model.signals import Live
    from huddle.sources.opencode.handle import OpenCodeHandle


@register
class KiloSource(OpenCodeSource):
    name = "kilo"
    label = "Kilo CLI"
    short = "Kilo"
    colour = "#d97706"
    folder_env = "HUDDLE_KILO_DIR"
    default_folder = "$XDG_DATA_HOME/kilo"
    resume = "kilo --session {id}"
    db_env = "KILO_DB"
    db_default = "kilo.db"
    db_prefixes = ("kilo-", "opencode-")
    app = "kilo"
    binaries = ("kilo", ".kilo")

    def signals_of(self, handle: OpenCodeHandle, at: float | None) -> Live:
        from .live import live_signals

        return live_signals(handle, at)
