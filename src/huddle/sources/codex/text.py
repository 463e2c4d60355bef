"""Codex text readers: exit codes in tool outputs, files in patches, short summaries
of a call's arguments. Pure functions on strings."""

from __future__ import annotations

import re
from typing import Any

from huddle.model.doing import input_summary
from huddle.model.events import one_line
from huddle.model.tools import WAIT_TOOLS

from .records import Change

_EXITED = re.compile(r"Process exited with code (-?\d+)")
_RUNNING = re.compile(r"Process running with session ID (\d+)")
_EXIT_CODE = re.compile(r"^Exit code: (-?\d+)", re.M)
_JSON_EXIT = re.compile(r'"exit_code"\s*:\s*(-?\d+)')


def exit_code_of(text: str) -> int | None:
    """The exit code in a shell tool's output head (`Process exited with code N`, the
    freeform tools' `Exit code: N`, or 0.96's JSON metadata)."""
    if "xit" not in text:  # (in each of the three: most outputs hold none, one look says so)
        return None
    # (each pattern searched only where its words are: a search that fails costs a scan, the
    # line-anchored one a try at every line; an apply_patch's JSON result failed two)
    m = (
        ("Process exited with code " in text and _EXITED.search(text))
        or ("Exit code: " in text and _EXIT_CODE.search(text))
        or ('"exit_code"' in text and _JSON_EXIT.search(text))
    )
    return int(m.group(1)) if m else None


def running_session(text: str) -> str:
    m = _RUNNING.search(text)
    return m.group(1) if m else ""


# Searched unanchored (a literal start the engine finds fast; `^` with re.M tries every
# position) and kept where it starts a line: the same matches, a patch of kB in µs.
_PATCH_FILE = re.compile(r"\*\*\* (Add|Update|Delete) File: (.+)")
_LETTER = {"Add": "A", "Update": "M", "Delete": "D", "add": "A", "update": "M", "delete": "D"}


def patch_files(patch: str) -> list[str]:
    """`A path`, `M path`, `D path` for each file an apply_patch body touches."""
    return [
        f"{_LETTER[m.group(1)]} {m.group(2).strip()}"
        for m in _PATCH_FILE.finditer(patch)
        if not m.start() or patch[m.start() - 1] == "\n"
    ]


def changes_list(changes: dict[str, Change] | None, cwd: str = "") -> list[str]:
    out = []
    for path, c in (changes or {}).items():
        shown = path[len(cwd) + 1 :] if cwd and path.startswith(cwd + "/") else path
        letter = _LETTER.get(c.type, "?")
        if c.move_path:
            shown = f"{shown} -> {c.move_path}"
        out.append(f"{letter} {shown}")
    return out


def command_text(cmd: Any) -> str:
    """A command given as argv (`["bash", "-lc", "ls"]`) or a string, as one line."""
    if isinstance(cmd, str):
        return cmd
    if isinstance(cmd, list):
        parts = [str(c) for c in cmd]
        if len(parts) >= 3 and parts[-2] in ("-lc", "-c") and parts[0].rsplit("/", 1)[-1] in ("bash", "sh", "zsh"):
            return parts[-1]
        return " ".join(parts)
    return ""


def call_summary(name: str, args: dict[str, Any]) -> str:
    """A short, telling summary of a tool call's arguments."""
    if not args:  # (none, or none readable: most calls of a redacted history)
        return "poll session None" if name == "write_stdin" else ""
    for key in ("cmd", "command"):
        v = args.get(key)
        if v:
            return one_line(command_text(v), 160)
    if name == "write_stdin":
        chars = args.get("chars") or ""
        sid = args.get("session_id")
        return f"session {sid}: {one_line(chars, 60)}" if chars else f"poll session {sid}"
    if name in WAIT_TOOLS:
        who = args.get("targets") or args.get("ids") or []
        return ", ".join(str(w) for w in who) if isinstance(who, list) else str(who)
    return input_summary(args)


def harness_tag(text: str) -> str:
    """The name of the harness wrapper a user-role message is (environment context,
    AGENTS.md, notes), or "" when it is a person's words."""
    s = text.lstrip()
    if s.startswith("# AGENTS.md instructions"):
        return "agents_md"
    if s.startswith("<") and len(s) > 2:
        end = 1
        while end < len(s) and end < 64 and (s[end].isalnum() or s[end] in "_-"):
            end += 1
        if end > 1 and end < len(s) and s[end] in "> ":
            return s[1:end]
    return ""


def mail_parts(text: str) -> tuple[str, str]:
    """`Message Type: X ... Payload:\\n<body>` -> (X, body)."""
    kind = ""
    if text.startswith("Message Type: "):
        kind = text[len("Message Type: ") : text.find("\n")] if "\n" in text else text[len("Message Type: ") :]
    i = text.find("Payload:\n")
    body = text[i + len("Payload:\n") :] if i >= 0 else text
    return kind.strip(), body.strip()
