"""huddle's CLI called in this process (click's runner) for tests whose subject is what
a command says, not that it runs as a process of its own: a fresh Python per call costs
about a second on a loaded machine. The tests of the process itself (test_readme,
test_cli_lazy, the one-shot answers, the hosts, the status line) keep real processes."""

from __future__ import annotations

import os
import subprocess

from click.testing import CliRunner


def huddle(*args: str, env: dict[str, str] | None = None, input: str | None = None) -> subprocess.CompletedProcess:
    """`huddle ARGS...` with `env` as its whole environment: exit code, stdout and stderr
    as a subprocess's."""
    from huddle.cli import main

    unset = {k: None for k in os.environ if env is not None and k not in env}
    r = CliRunner().invoke(main, list(args), env={**unset, **(env or {})}, input=input, catch_exceptions=True)
    if r.exception is not None and not isinstance(r.exception, SystemExit):
        raise r.exception
    return subprocess.CompletedProcess(["huddle", *args], r.exit_code, r.stdout, r.stderr)
