"""The `huddle` console script. The status line runs on every message of every
agent session, so its path imports the standard library only; `status --json`, what
scripts ask most, is answered before click loads (huddle.oneshot); everything else
goes to the click CLI."""

from __future__ import annotations

import sys


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "statusline":
        from .statusline import main as statusline

        sys.exit(statusline(sys.argv[2:]))
    from .oneshot import fits, status_json

    if fits(sys.argv[1:]):
        sys.exit(status_json())
    from .cli import main as cli

    cli()


if __name__ == "__main__":
    main()
