"""A tool call in plain words, for any agent: the one place huddle says what a call
is doing ("running npm test", "editing app.py", "delegating: review the API").

- `doing(name, detail)` says it from an event (its tool and input summary): the board
  and the session pages (the server sends it with each call, as `doing`).
- `tool_phrase(name, input)` says it from the whole input, short enough for a spinner
  line: `huddle run`'s live line.
- `input_summary(input)` is the input itself in a few words, as every source keeps it
  in an event's `detail` (the command, the file, the question...).

Both phrases take their verbs from one table (`_WORDS`, by tool, shell tools by role),
so the board and the live line never word one tool two ways. Pure functions.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

from .events import one_line
from .tools import QUESTION_TOOLS, SHELL_TOOLS, SPAWN_TOOLS

WIDTH = 56  # what a spinner line has room for

# tool -> (its verb, before what it works on; what it is doing when nothing more is known)
_WORDS: dict[str, tuple[str, str]] = {}


def _say(verb: str, bare: str, *names: str) -> None:
    for n in names:
        _WORDS[n] = (verb, bare)


_say("running", "running a command", *SHELL_TOOLS, "PowerShell", "unified_exec", "run_command")
_say("editing", "editing a file", "Edit", "MultiEdit", "search_replace", "apply_patch", "edit_file", "str_replace")
_say("editing", "editing a file", "replace", "edit", "patch", "editor")  # Gemini CLI, OpenCode, Cline CLI
_say("editing", "editing a notebook", "NotebookEdit")
_say("writing", "writing a file", "Write", "write_file", "create_file", "write", "create")  # create: Copilot CLI
_say(
    "reading",
    "reading a file",
    "Read",
    "NotebookRead",
    "read_file",
    "view",
    "view_image",
    "cat",
    "read",
    "read_many_files",
    "read_files",  # Cline CLI
)
_say("reading command output", "reading command output", "BashOutput")
_say("searching for", "searching", "Grep", "grep", "search", "rg", "search_file_content", "grep_search")
_say("searching for", "searching", "search_codebase")  # Cline CLI
_say("finding", "finding files", "Glob", "glob")
_say("listing", "listing files", "LS", "list_dir", "ls", "list_directory", "list")
_say(
    "searching the web for",
    "searching the web",
    "WebSearch",
    "web_search",
    "web_search_call",
    "google_web_search",
    "websearch",
)
_say("fetching", "fetching a page", "WebFetch", "web_fetch", "fetch", "webfetch", "fetch_web_content")
_say("asking:", "asking you", *QUESTION_TOOLS)
_say("updating the todo list", "updating the todo list", "TodoWrite", "update_plan", "todo", "todowrite", "write_todos")
_say("adding a task:", "adding a task", "TaskCreate")
_say("updating a task", "updating a task", "TaskUpdate")
_say("listing tasks", "listing tasks", "TaskList")
_say("reading a task", "reading a task", "TaskGet")
_say("loading tools", "loading tools", "ToolSearch")
_say("delegating:", "delegating", *SPAWN_TOOLS)
_say("presenting a plan", "presenting a plan", "ExitPlanMode")
_say("planning", "planning", "EnterPlanMode")
_say("using skill", "using a skill", "Skill")
_say("stopping a task", "stopping a task", "KillShell", "TaskStop")
_say("updating the todo list", "updating the todo list", "todo_write")  # Qwen Code
_say("using skill", "using a skill", "skill")  # Qwen Code
_say("stopping a task", "stopping a task", "task_stop")  # Qwen Code
_say("presenting a plan", "presenting a plan", "exit_plan_mode")  # Qwen Code
_FILE_VERBS = frozenset({"editing", "writing", "reading"})
_NO_OBJECT = frozenset(v for v, bare in _WORDS.values() if v == bare)  # verbs said alone


def _words(name: str) -> tuple[str, str] | None:
    return _WORDS.get(name) or _WORDS.get(name.rsplit(".", 1)[-1])  # Vibe: file_system.bash


def _verb(name: str) -> str | None:
    words = _words(name)
    return words[0] if words else None


def doing(name: str, detail: str) -> str:
    """A tool call in plain words, from its event: "running npm test", "editing app.py"."""
    words = _words(name)
    detail = detail or ""
    if words is None:
        return f"using {name}" + (f": {detail}" if detail else "") if name else detail
    verb, bare = words
    if verb == "running" and ": " in detail:
        detail = detail.split(": ", 1)[1]  # Claude's summary is "description: command"
    elif verb in _FILE_VERBS and "/" in detail and " " not in detail:
        detail = file_name(detail)
    if verb in _NO_OBJECT or not detail:
        return bare
    return f"{verb} {detail}"


def tool_phrase(name: str, inp: dict[str, Any] | None = None) -> str:
    """A tool call said as something being done, naming its most telling input."""
    inp = inp if isinstance(inp, dict) else {}
    phrase = _phrase(name, inp)
    words = _words(name)
    return fit(phrase or (words[1] if words else _generic(name)))


# Gerunds the spelling rules below get wrong (stress on the last syllable, -ee...).
_IRREGULAR = {
    "be": "being",
    "see": "seeing",
    "agree": "agreeing",
    "free": "freeing",
    "format": "formatting",
    "commit": "committing",
    "submit": "submitting",
    "begin": "beginning",
    "forget": "forgetting",
    "admit": "admitting",
    "omit": "omitting",
    "permit": "permitting",
    "refer": "referring",
    "prefer": "preferring",
    "rerun": "rerunning",
    "unzip": "unzipping",
    "upgrade": "upgrading",
    "dye": "dyeing",
}
# First words of a description that are not verbs: "running git status" reads
# better than a made-up gerund.
_NOT_VERBS = frozenset(
    [
        "a",
        "an",
        "the",
        "this",
        "that",
        "these",
        "those",
        "all",
        "any",
        "each",
        "every",
        "some",
        "new",
        "old",
        "my",
        "our",
        "your",
        "its",
        "git",
        "npm",
        "npx",
        "pnpm",
        "yarn",
        "pip",
        "pipx",
        "uv",
        "python",
        "python3",
        "node",
        "deno",
        "bun",
        "cargo",
        "go",
        "docker",
        "kubectl",
        "gh",
        "curl",
        "wget",
        "bash",
        "sh",
        "zsh",
        "pytest",
        "ruff",
        "mypy",
        "tox",
        "nox",
        "javac",
        "java",
        "gcc",
        "clang",
        "api",
        "cli",
        "ui",
        "db",
        "sql",
        "json",
        "yaml",
        "toml",
        "html",
        "css",
        "readme",
        "todo",
    ]
)
_SINGLE_CVC = re.compile(r"[^aeiou]*[aeiou][^aeiouwxy]")
_SENTENCE_END = re.compile(r"(?<=[.!?…])\s+")


def fit(text: str, width: int = WIDTH) -> str:
    """One line of at most `width` characters (an ellipsis says it was cut)."""
    s = " ".join(str(text).split())
    return s if len(s) <= width else s[: width - 1].rstrip() + "…"


def lower_first(text: str) -> str:
    """'Review the API' -> 'review the API'; 'API check' stays (an acronym)."""
    if len(text) > 1 and text[0].isupper() and not text[1].isupper():
        return text[0].lower() + text[1:]
    return text


def gerund(word: str) -> str:
    w = word.lower()
    if w in _IRREGULAR:
        return _IRREGULAR[w]
    if w.endswith("ing") and len(w) > 5:
        return w
    if w.endswith("ie"):
        return w[:-2] + "ying"
    if w.endswith("e") and len(w) > 2 and not w.endswith(("ee", "oe", "ye")):
        return w[:-1] + "ing"
    if _SINGLE_CVC.fullmatch(w):
        return w + w[-1] + "ing"
    return w + "ing"


def _looks_like_verb(word: str) -> bool:
    if not word.isalpha() or word.lower() in _NOT_VERBS:
        return False
    if len(word) > 1 and not word[1:].islower():
        return False  # an acronym or a name (API, README, GitHub)
    return not (word.lower().endswith("s") and not word.lower().endswith("ss"))


def as_done(description: str, fallback: str = "running") -> str:
    """An imperative description said as being done: 'Run the test suite' ->
    'running the test suite'; 'Git status' -> 'running git status'."""
    text = " ".join(description.split())
    if not text:
        return fallback
    first, _, rest = text.partition(" ")
    if _looks_like_verb(first):
        return f"{gerund(first)} {rest}".rstrip()
    return f"{fallback} {lower_first(text)}"


def file_name(path: str) -> str:
    """A file name beats a long path."""
    p = path.rstrip("/")
    return p.rsplit("/", 1)[-1] or path


def said(text: str) -> str:
    """What the agent last said of itself: the last sentence of a text (while it
    streams, the sentence being written)."""
    parts = [p for p in _SENTENCE_END.split(text.strip()) if p.strip()]
    return parts[-1] if parts else ""


def _str(inp: dict[str, Any], key: str) -> str:
    v = inp.get(key)
    return v.strip() if isinstance(v, str) else ""


def _phrase(name: str, inp: dict[str, Any]) -> str:
    own = _PHRASES.get(name)
    if own is not None:
        return own(name, inp)
    verb = _verb(name)
    if verb in _FILE_VERBS:
        path = _str(inp, "file_path") or _str(inp, "notebook_path") or _str(inp, "path")
        return f"{verb} {file_name(path)}" if path else ""
    if _words(name) is not None:
        return ""
    desc = _str(inp, "description")
    return as_done(desc, fallback=f"{_generic(name)}:") if desc else ""


def _delegating(name: str, inp: dict[str, Any]) -> str:
    what = _str(inp, "description") or _str(inp, "subagent_type")
    return f"delegating: {lower_first(what)}" if what else ""


def _running(name: str, inp: dict[str, Any]) -> str:
    desc = _str(inp, "description")
    if desc:
        return as_done(desc)
    cmd = _str(inp, "command")
    return f"running {cmd.splitlines()[0]}" if cmd else ""


def _verb_and(key: str, shape: Callable[[str], str] = str) -> Callable[[str, dict[str, Any]], str]:
    """The tool's verb and one field of its input: "searching for TODO"."""

    def phrase(name: str, inp: dict[str, Any]) -> str:
        v = _str(inp, key)
        return f"{_verb(name)} {shape(v)}" if v else ""

    return phrase


def _fetching(name: str, inp: dict[str, Any]) -> str:
    host = urlsplit(_str(inp, "url")).hostname or ""
    return f"fetching {host}" if host else ""


def _tool_search(name: str, inp: dict[str, Any]) -> str:
    q = _str(inp, "query")
    if q.startswith("select:"):
        return "loading " + ", ".join(t for t in q[len("select:") :].split(",") if t)
    return f"looking for tools: {q}" if q else ""


def _asking(name: str, inp: dict[str, Any]) -> str:
    qs = inp.get("questions")
    if isinstance(qs, list) and qs and isinstance(qs[0], dict) and isinstance(qs[0].get("question"), str):
        return f"{_verb(name)} {qs[0]['question']}"
    return ""


def _skill(name: str, inp: dict[str, Any]) -> str:
    skill = _str(inp, "skill") or _str(inp, "command")
    return f"using the {skill} skill" if skill else ""


# Claude Code's tools, each said from its own input.
_PHRASES: dict[str, Callable[[str, dict[str, Any]], str]] = {
    "Agent": _delegating,
    "Task": _delegating,
    "Bash": _running,
    "PowerShell": _running,
    "Grep": _verb_and("pattern"),
    "Glob": _verb_and("pattern"),
    "LS": _verb_and("path", file_name),
    "WebFetch": _fetching,
    "WebSearch": _verb_and("query"),
    "TodoWrite": lambda name, inp: _todo_phrase(inp),
    "TaskCreate": _verb_and("subject", lower_first),
    "ToolSearch": _tool_search,
    "AskUserQuestion": _asking,
    "Skill": _skill,
}


def _todo_phrase(inp: dict[str, Any]) -> str:
    todos = inp.get("todos")
    if isinstance(todos, list):
        for t in todos:
            if isinstance(t, dict) and t.get("status") == "in_progress":
                form = t.get("activeForm") or t.get("content")
                if isinstance(form, str) and form.strip():
                    return lower_first(form.strip())
    return ""


def _generic(name: str) -> str:
    if name.startswith("mcp__"):  # mcp__server__tool
        parts = name.split("__")
        if len(parts) >= 3:
            return f"using {parts[2]} ({parts[1]})"
    return f"using {name}" if name else "working"


# An input's most telling fields, most telling first, under every agent's names for them.
SUMMARY_KEYS = (
    "command",
    "cmd",
    "file_path",
    "filePath",  # OpenCode
    "absolute_path",  # Gemini CLI
    "dir_path",
    "path",
    "pattern",
    "url",
    "query",
    "prompt",
    "subject",
    "skill",
    "task_name",
    "task",
    "message",
    "agentName",
    "agent_path",
    "target",
    "targets",
    "ids",
    "id",
    "name",
    "text",
)
SUMMARY_WIDTH = 160


def _compact(val: object) -> str:
    return json.dumps(val, separators=(",", ":"), ensure_ascii=False, default=str)


def input_summary(val: object) -> str:
    """A tool's input in a few words: its description and command, else its most telling
    field (SUMMARY_KEYS), its first question, how many todos, else the input itself."""
    if val is None:
        return ""
    if not isinstance(val, dict):
        return one_line(str(val), SUMMARY_WIDTH)
    desc, cmd = val.get("description"), val.get("command")
    if isinstance(desc, str) and desc:
        return one_line(f"{desc}: {cmd}" if isinstance(cmd, str) else desc, SUMMARY_WIDTH)
    told = _telling_field(val)
    if told:
        return one_line(told, SUMMARY_WIDTH)
    if isinstance(val.get("todos"), list):
        return f"{len(val['todos'])} todos"
    if isinstance(val.get("timeout_ms"), (int, float)):
        return f"up to {val['timeout_ms'] / 1000:g} s"
    return one_line(_compact(val), SUMMARY_WIDTH) if val else ""


def _telling_field(val: dict[str, Any]) -> str:
    """Its most telling field (SUMMARY_KEYS, a list of targets or ids as JSON), else its
    first question ("" : none)."""
    for key in SUMMARY_KEYS:
        v = val.get(key)
        if isinstance(v, str) and v:
            return v
        if v and isinstance(v, (list, dict)) and key in ("targets", "ids"):
            return _compact(v)
    qs = val.get("questions")
    if isinstance(qs, list) and qs and isinstance(qs[0], dict):
        q = qs[0].get("question") or qs[0].get("header")
        if isinstance(q, str) and q:
            return q
    return ""
