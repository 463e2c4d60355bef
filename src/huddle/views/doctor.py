"""`huddle doctor` (== GET /api/doctor): per agent the folders looked at, the files
found, the sessions, and every file not read into one with its reason (views/files.py
counts them)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from huddle.sources.registry import display

from .board import board_notes, session_entry
from .files import accounts

if TYPE_CHECKING:
    from huddle.core import Huddle
    from huddle.model.files import FileNote


def doctor(h: Huddle) -> dict[str, Any]:
    """GET /api/doctor == `huddle doctor --json`: per agent, the folders looked at, the
    files found, the sessions, and every file not read into one, with its reason."""
    rows: dict[str, object] = {}
    for key, handle in h.handles.items():
        rows[key] = session_entry(h, handle.session)
    for key, d in getattr(h, "dormant", {}).items():
        rows[key] = d.row  # (its plain values decoded: an error is no part of a row's brief)
    agents = []
    for name, acc in accounts(h, rows).items():
        agents.append(
            {
                "name": name,
                **display(name),
                "exists": acc.exists,
                "folders": acc.folders,
                "found": len(acc.sessions) + len(acc.not_sessions) + len(acc.not_read),
                **acc.counts(),
                "not_session_files": _by_path(acc.not_sessions),
                "not_read_files": _by_path(acc.not_read),
                "errors": _by_path(acc.erred),
            }
        )
    out: dict[str, Any] = {"agents": agents}
    notes = board_notes(h)
    if notes:
        out["notes"] = notes
    return out


def _by_path(notes: list[FileNote]) -> list[dict[str, str]]:
    """Files and why, in the order of their paths: the order the sessions were met in
    (awake ones first, then those asleep) is no part of the answer."""
    return [{"path": n.path, "reason": n.reason} for n in sorted(notes, key=lambda n: (n.path, n.reason))]


def doctor_text(data: Mapping[str, Any]) -> str:
    """`huddle doctor` as a person reads it."""
    lines: list[str] = []
    for a in data.get("agents", ()):
        lines.append(f"{a['label']} ({a['name']})")
        tops = [f for f in a["folders"] if not any(f != t and f.startswith(t.rstrip("/") + "/") for t in a["folders"])]
        for f in tops:
            below = sum(1 for g in a["folders"] if g != f and g.startswith(f.rstrip("/") + "/"))
            lines.append(f"  looked in   {f}" + (f" (and {below} folders below)" if below else ""))
        if not a["exists"]:
            lines.append("  no sessions folder there")
            continue
        lines.append(
            f"  files found {a['found']}: {a['sessions']} read into sessions, "
            f"{a['not_sessions']} not sessions, {a['not_read']} not read"
        )
        for n in a["not_read_files"]:
            lines.append(f"  not read    {n['path']}: {n['reason']}")
        for n in a["not_session_files"]:
            lines.append(f"  no session  {n['path']}: {n['reason']}")
        for n in a["errors"]:
            lines.append(f"  error       {n['path']}: {n['reason']}")
    if not data.get("agents"):
        lines.append("no agent folders here")
    for note in data.get("notes", ()):
        lines.append(f"note: {note}")
    return "\n".join(lines)
