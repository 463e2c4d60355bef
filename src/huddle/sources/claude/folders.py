"""A Claude project folder as the scan lists it: session files, 2.0.x agent files,
subfolders, and what else lies there, accounted for."""

from __future__ import annotations

import os
import stat

from huddle.io.safefile import listdir, plain_file
from huddle.model.files import UNKNOWN, UNREADABLE, Files

from .project_agents import is_agent_file


def is_dir(path: str) -> bool:
    """As the scan's listing says it (a symlink is not a folder)."""
    try:
        return stat.S_ISDIR(os.lstat(path).st_mode)
    except OSError:
        return False


def project(
    folder: str, account: Files
) -> tuple[dict[str, os.DirEntry[str]], list[os.DirEntry[str]], set[str], set[str]]:
    """A project folder's session files by id, its 2.0.x agent files, its subfolders and
    the names of every transcript in it (one that is no regular file too); what else it
    holds, accounted for (a folder that cannot be listed is a note)."""
    files, agents, dirs, names = {}, [], set(), set()
    account.looked_in(folder)
    for f in listdir(folder):
        if f.is_dir(follow_symlinks=False):
            dirs.add(f.name)
        elif not f.name.endswith(".jsonl"):
            account.unread(f.path, UNKNOWN)
        else:
            names.add(f.name)
            if not plain_file(f):  # a FIFO, a symlink out
                account.unread(f.path, f"{UNREADABLE}: not a regular file in its folder")
            elif is_agent_file(f.name):
                agents.append(f)
            else:
                files[f.name[: -len(".jsonl")]] = f
    return files, agents, dirs, names


def subfolders(path: str) -> list[str]:
    return sorted(e.path for e in listdir(path) if e.is_dir(follow_symlinks=False))
