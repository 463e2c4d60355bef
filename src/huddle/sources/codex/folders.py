"""Where Codex keeps its rollouts, every place a version of it wrote one:

- `sessions/YYYY/MM/DD/rollout-<time>-<thread>.jsonl` (codex-rs from June 2025 on);
- `sessions/rollout-<time>-<thread>.jsonl` right in the folder (codex-rs until then:
  `create_log_file` pushed no date folders);
- `archived_sessions/rollout-<time>-<thread>.jsonl`, where `codex archive` (and the
  app's archive) moves a thread's rollouts, flat (unarchive puts them back under the
  date of their name: codex-rs thread-store `unarchive_thread`).

A rollout at another depth down to the day folders (a tool's copy, a hand's move) is read
too: a file that names a thread is never left unsaid. A folder is listed again only when
its mtime (or ctime: a chmod back) moved.
"""

from __future__ import annotations

import os

from huddle.io.safefile import listdir
from huddle.model.files import UNKNOWN, Files


class RolloutFolders:
    def __init__(self, sessions_dir: str, archived_dir: str):
        self.sessions_dir = sessions_dir
        self.archived_dir = archived_dir
        # dir -> (m/ctime, subdirs, rollouts, other files)
        self._dirs: dict[str, tuple[tuple[int, int], list[str], list[str], list[str]]] = {}

    def archived(self, path: str) -> bool:
        """Whether this rollout is one Codex has put away."""
        return bool(self.archived_dir) and path.startswith(self.archived_dir + os.sep)

    def rollouts(self, account: Files) -> list[str]:
        """Every rollout file, listing only the folders that changed; the folders and every
        other file met are accounted for in `account`."""
        out: list[str] = []
        stack = [(d, 0) for d in (self.sessions_dir, self.archived_dir) if d]
        while stack:
            folder, depth = stack.pop()
            subdirs, files, others = self._listing(folder)
            account.looked_in(folder)
            for name in others:
                account.unread(os.path.join(folder, name), UNKNOWN)
            if depth < 3:
                stack.extend((os.path.join(folder, d), depth + 1) for d in subdirs)
            out.extend(os.path.join(folder, f) for f in files)  # (a rollout a tool put elsewhere too)
        return out

    def _listing(self, folder: str) -> tuple[list[str], list[str], list[str]]:
        try:
            st = os.stat(folder)
        except OSError:
            self._dirs.pop(folder, None)
            return [], [], []
        mtime = (st.st_mtime_ns, st.st_ctime_ns)  # ctime: a chmod back makes it readable again
        cached = self._dirs.get(folder)
        if cached is not None and cached[0] == mtime:
            return cached[1], cached[2], cached[3]
        subdirs, files, others = [], [], []
        for entry in listdir(folder):  # one that cannot be listed is a note, looked at again next time
            if entry.name.startswith("rollout-") and entry.name.endswith(".jsonl"):
                files.append(entry.name)
            elif entry.is_dir(follow_symlinks=False):
                subdirs.append(entry.name)
            else:
                others.append(entry.name)
        self._dirs[folder] = (mtime, subdirs, files, others)
        return subdirs, files, others
