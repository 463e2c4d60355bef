"""A tool call in plain words ("running npm test", "editing app.py"), from an
event's tool name and input summary, for any source: the call page says what each
agent is doing, the board says what a working session is busy with."""

from __future__ import annotations

_DOING = {
    "running": (
        "Bash",
        "bash",
        "shell",
        "exec_command",
        "local_shell",
        "unified_exec",
        "run_command",
        "container.exec",
    ),
    "editing": ("Edit", "MultiEdit", "NotebookEdit", "search_replace", "apply_patch", "edit_file", "str_replace"),
    "writing": ("Write", "write_file", "create_file"),
    "reading": ("Read", "read_file", "view", "view_image", "cat"),
    "searching for": ("Grep", "grep", "search", "rg"),
    "looking for files": ("Glob", "glob", "list_dir", "ls"),
    "searching the web for": ("WebSearch", "web_search", "web_search_call"),
    "fetching": ("WebFetch", "web_fetch", "fetch"),
    "asking you": ("AskUserQuestion", "ask_user_question", "request_user_input"),
    "updating the todo list": ("TodoWrite", "TaskCreate", "TaskUpdate", "update_plan", "todo"),
}
_VERB = {name: verb for verb, names in _DOING.items() for name in names}
_FILE_VERBS = frozenset({"editing", "writing", "reading"})


def doing(name: str, detail: str) -> str:
    """A tool call in plain words: "running npm test", "editing app.py"."""
    verb = _VERB.get(name) or _VERB.get(name.rsplit(".", 1)[-1])  # Vibe: file_system.bash
    detail = detail or ""
    if verb is None:
        return f"using {name}" + (f": {detail}" if detail else "") if name else detail
    if verb == "running" and ": " in detail:
        detail = detail.split(": ", 1)[1]  # Claude's summary is "description: command"
    elif verb in _FILE_VERBS and "/" in detail and " " not in detail:
        detail = detail.rstrip("/").rsplit("/", 1)[-1]
    if verb == "updating the todo list" or not detail:
        return verb
    return f"{verb} {detail}"
