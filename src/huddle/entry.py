"""The `huddle` console script. The status line runs on every message of every
agent session, so its path imports the standard library only; `status --json` and
`usage --json`, what scripts ask most, are answered before click loads
(huddle.oneshot); everything else goes to the click CLI."""

from __future__ import annotations

import sys


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "statusline":
        from .statusline import main as statusline

        sys.exit(statusline(sys.argv[2:]))
    from .io.lean import lean_msgspec

    lean_msgspec()
    from .oneshot import answer

    code = answer(sys.argv[1:])
    if code is not None:
        sys.exit(code)
    from .cli import main as cli

    cli()


if __name__ == "__main__":
    main()
