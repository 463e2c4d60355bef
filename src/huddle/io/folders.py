"""Where things are: the user's home, the XDG folders, huddle's own home, an agent's
folder. The one resolver every caller uses (the status line too: standard library only).

An agent source declares its folder as an environment variable and a default
(`~/...` or `$XDG_DATA_HOME/...`, `$XDG_STATE_HOME/...`, `$XDG_CONFIG_HOME/...`, or
`$VAR/...` for an agent's own variable that stands in for the home folder, such as
`$GEMINI_CLI_HOME/.gemini`, or alternatives `$A|$B/x|~/...` for the agent's own variables
in the order it reads them, as Qwen Code's `$QWEN_RUNTIME_DIR|$QWEN_HOME|~/.qwen`);
`agent_folder` turns that declaration into a path the same way for every source.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False  # (collections.abc costs the status line ~1 ms: read by mypy alone)
if TYPE_CHECKING:
    from collections.abc import Mapping

XDG_DEFAULTS = {
    "XDG_DATA_HOME": os.path.join(".local", "share"),
    "XDG_STATE_HOME": os.path.join(".local", "state"),
    "XDG_CONFIG_HOME": ".config",
    "XDG_CACHE_HOME": ".cache",
}


def user_home(env: Mapping[str, str]) -> str:
    return env.get("HOME") or os.path.expanduser("~")


def xdg(env: Mapping[str, str], var: str) -> str:
    """An XDG base folder: its variable when set to an absolute path, else its default."""
    val = env.get(var, "")
    if val and os.path.isabs(val):
        return val
    return os.path.join(user_home(env), XDG_DEFAULTS[var])


def expand(env: Mapping[str, str], default: str) -> str:
    """`~/x` under the home folder, `$XDG_..._HOME/x` under that XDG folder, `$VAR/x`
    under `$VAR` when it is set to an absolute path, else under the home folder. `A|B|C`:
    the first alternative whose `$VAR` is set to an absolute path, else the last
    (`$CLINE_DATA_DIR|$CLINE_DIR/data|~/.cline/data`)."""
    if "|" in default:
        *alts, last = default.split("|")
        for alt in alts:
            var = alt[1:].partition("/")[0] if alt.startswith("$") else ""
            if var and var not in XDG_DEFAULTS and os.path.isabs(env.get(var, "")):
                return expand(env, alt)
        return expand(env, last)
    if default == "~" or default.startswith("~/"):
        return os.path.join(user_home(env), default[2:])
    if default.startswith("$"):
        var, _, rest = default[1:].partition("/")
        if var in XDG_DEFAULTS:
            return os.path.join(xdg(env, var), rest)
        base = env.get(var, "")
        base = base if base and os.path.isabs(base) else user_home(env)
        return os.path.join(base, rest) if rest else base
    return default


def agent_folder(env: Mapping[str, str], var: str | None, default: str | None) -> str:
    """An agent's folder: the variable that names it when set, else its default (which
    may list alternatives, `$A|$B/x|~/y`: see `expand`)."""
    if var and env.get(var):
        return env[var]
    return expand(env, default) if default else ""


def huddle_home(env: Mapping[str, str] | None = None) -> str:
    """huddle's own folder (cache, index, runs, pricing.json): $HUDDLE_HOME, else
    $XDG_DATA_HOME/huddle."""
    env = os.environ if env is None else env
    return env.get("HUDDLE_HOME") or os.path.join(xdg(env, "XDG_DATA_HOME"), "huddle")


RUN_LOG = "events.jsonl"  # a hosted run's numbered log, in its folder under runs_dir


def runs_dir(huddle_home: str) -> str:
    """The folder of the runs `huddle run` / `huddle host` keep (one folder each): the
    host writes them, the hosted source reads them."""
    return os.path.join(huddle_home, "runs")
