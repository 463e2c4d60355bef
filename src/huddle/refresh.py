"""`python -m huddle.refresh`: bring huddle's board cache up to date, once.

A client of the core, like the CLI: started in the background by the status line
when its board is stale (the status line itself stays on the standard library). It holds
`cache/refresh.lock` while it runs, so however many status lines ask at once, one
refresher does the work.
"""

from __future__ import annotations

import fcntl
import os
import sys

from huddle.io import private


def main() -> int:
    from huddle.sources import Settings

    settings = Settings.from_env()
    lock = os.path.join(settings.huddle_home, "cache", "refresh.lock")
    handed = os.environ.pop("HUDDLE_REFRESH_LOCK_FD", "")
    # the status line may have taken the lock and handed it over (the same open file)
    fd = int(handed) if handed.isdigit() else private.create(lock, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # ours already when handed: this keeps it
    except OSError:
        return 0  # another refresher is at it
    try:
        from huddle.core.store import one_answer
        from huddle.oneshot import refresh_stored

        one_answer()  # (whichever way it reads: it answers once and exits)
        if refresh_stored():  # (a few sessions moved under the stored answer: read alone, spliced in)
            return 0
        from huddle.core import Huddle, Keeper
        from huddle.views.board import board_json, leave_board

        h = Huddle(settings, keep=Keeper())  # reads only what moved
        h.refresh()
        built: dict = {}
        leave_board(h, board_json(h, built=built), built)
    finally:
        os.close(fd)
    return 0


if __name__ == "__main__":
    sys.exit(main())
