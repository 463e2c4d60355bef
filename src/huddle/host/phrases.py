"""Activity wording: a tool call said as something being done, short enough for a
spinner line ("reading plan.md", "running the test suite", "delegating: review
the API"). Pure and stdlib-only, like the live-line parser that uses it."""

from __future__ import annotations

import re
from urllib.parse import urlsplit

WIDTH = 56  # what a spinner line has room for

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


def doing(description: str, fallback: str = "running") -> str:
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


def _str(inp: dict, key: str) -> str:
    v = inp.get(key)
    return v.strip() if isinstance(v, str) else ""


# Tools whose name alone says what they do, before their input has arrived.
_BARE = {
    "Bash": "running a command",
    "PowerShell": "running a command",
    "Read": "reading a file",
    "Write": "writing a file",
    "Edit": "editing a file",
    "MultiEdit": "editing a file",
    "NotebookEdit": "editing a notebook",
    "Grep": "searching",
    "Glob": "finding files",
    "LS": "listing files",
    "WebFetch": "fetching a page",
    "WebSearch": "searching the web",
    "TodoWrite": "updating the todo list",
    "TaskCreate": "adding a task",
    "TaskUpdate": "updating a task",
    "TaskList": "listing tasks",
    "TaskGet": "reading a task",
    "ToolSearch": "loading tools",
    "Agent": "delegating",
    "Task": "delegating",
    "AskUserQuestion": "asking you",
    "ExitPlanMode": "presenting a plan",
    "EnterPlanMode": "planning",
    "Skill": "using a skill",
    "KillShell": "stopping a task",
    "TaskStop": "stopping a task",
    "BashOutput": "reading command output",
}


def tool_phrase(name: str, inp: dict | None = None) -> str:
    """A tool call said as something being done, naming its most telling input."""
    inp = inp if isinstance(inp, dict) else {}
    phrase = _phrase(name, inp)
    return fit(phrase or _BARE.get(name) or _generic(name))


def _phrase(name: str, inp: dict) -> str:
    desc = _str(inp, "description")
    if name in ("Agent", "Task"):
        what = desc or _str(inp, "subagent_type")
        return f"delegating: {lower_first(what)}" if what else ""
    if name in ("Bash", "PowerShell"):
        if desc:
            return doing(desc)
        cmd = _str(inp, "command")
        return f"running {cmd.splitlines()[0]}" if cmd else ""
    if name in ("Read", "Write", "Edit", "MultiEdit", "NotebookEdit", "NotebookRead"):
        path = _str(inp, "file_path") or _str(inp, "notebook_path") or _str(inp, "path")
        verb = {"Read": "reading", "NotebookRead": "reading", "Write": "writing"}.get(name, "editing")
        return f"{verb} {file_name(path)}" if path else ""
    if name == "Grep":
        pat = _str(inp, "pattern")
        return f"searching for {pat}" if pat else ""
    if name == "Glob":
        pat = _str(inp, "pattern")
        return f"finding {pat}" if pat else ""
    if name == "LS":
        path = _str(inp, "path")
        return f"listing {file_name(path)}" if path else ""
    if name == "WebFetch":
        host = urlsplit(_str(inp, "url")).hostname or ""
        return f"fetching {host}" if host else ""
    if name == "WebSearch":
        q = _str(inp, "query")
        return f"searching the web for {q}" if q else ""
    if name == "TodoWrite":
        return _todo_phrase(inp)
    if name == "TaskCreate":
        subject = _str(inp, "subject")
        return f"adding a task: {lower_first(subject)}" if subject else ""
    if name == "ToolSearch":
        q = _str(inp, "query")
        if q.startswith("select:"):
            return "loading " + ", ".join(t for t in q[len("select:") :].split(",") if t)
        return f"looking for tools: {q}" if q else ""
    if name == "AskUserQuestion":
        qs = inp.get("questions")
        if isinstance(qs, list) and qs and isinstance(qs[0], dict) and isinstance(qs[0].get("question"), str):
            return f"asking: {qs[0]['question']}"
        return ""
    if name == "Skill":
        skill = _str(inp, "skill") or _str(inp, "command")
        return f"using the {skill} skill" if skill else ""
    if name in _BARE:
        return ""
    return doing(desc, fallback=f"{_generic(name)}:") if desc else ""


def _todo_phrase(inp: dict) -> str:
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
