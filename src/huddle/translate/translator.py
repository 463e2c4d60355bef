"""The translator: strings in, the same strings in the chosen language out, each sent
to a model once (translate/store.py keeps every answer), code, commands and paths set
aside first (translate/protect.py) and put back unchanged.

Strings go to the backend in batches (a JSON array in, a JSON array out). Whatever
cannot be translated (the backend failed, a marker went missing, the answer was not
the array asked for) is given back as the original: a page never shows a half-made
string, and the next ask tries again.
"""

from __future__ import annotations

import json
import os
import threading
from typing import Protocol

from huddle import optin

from .claude import Answer, BackendError, ClaudePool
from .protect import shield, unshield, worth
from .store import Store

BATCH_STRINGS = 24
BATCH_CHARS = 6000

SYSTEM = (
    "You translate the text of a developer tool's pages into {lang}. The user sends a JSON array of strings. "
    "Reply with only a JSON array of the same length, in the same order: each string translated into {lang}. "
    "Keep every marker like ⟦3⟧ exactly as it is, once, where it belongs in the sentence: each stands for code, "
    "a command, a path or a link that must not change. Keep Markdown as it is. Never translate code, commands, "
    "file names or identifiers. A string already in {lang} comes back unchanged. No comments, no code fences."
)


class Backend(Protocol):
    via: str

    def ask(self, prompt: str) -> Answer: ...

    def close(self) -> None: ...


def backend_for(home: str, lang: str, via: str = "claude", model: str = "") -> Backend:
    system = SYSTEM.format(lang=lang)
    if via == "api":
        from .api import ApiBackend

        return ApiBackend(system, model)
    if via != "claude":
        raise BackendError(f"no translation backend {via!r} (claude or api)")
    return ClaudePool(system, os.path.join(home, "translate", "work"), model)


class Translator:
    def __init__(
        self, home: str, lang: str, via: str = "claude", model: str = "", backend: Backend | None = None
    ) -> None:
        self.home = home
        self.lang = optin.check_lang(lang)
        self.store = Store(home)
        self.backend = backend if backend is not None else backend_for(home, self.lang, via, model)
        self.inflight: dict[str, threading.Event] = {}
        self.lock = threading.Lock()
        self.last_error = ""

    def translate(self, texts: list[str]) -> list[str]:
        """Each text in the language (the original where it could not be)."""
        want = list(dict.fromkeys(t for t in texts if t and t.strip()))
        have = self.store.get(self.lang, want)
        todo, waits = [], []
        with self.lock:
            for t in want:
                if t in have:
                    continue
                ev = self.inflight.get(t)
                if ev is not None:
                    waits.append(ev)  # another request is translating it: wait for that one
                else:
                    self.inflight[t] = threading.Event()
                    todo.append(t)
        try:
            have.update(self._fresh(todo))
        finally:
            with self.lock:
                for t in todo:
                    self.inflight.pop(t).set()
        for ev in waits:
            ev.wait(timeout=300)
        if waits:
            have.update(self.store.get(self.lang, [t for t in want if t not in have]))
        return [have.get(t, t) for t in texts]

    def cached(self, texts: list[str]) -> dict[str, str]:
        return self.store.get(self.lang, texts)

    def _fresh(self, texts: list[str]) -> dict[str, str]:
        out: dict[str, str] = {}
        jobs: list[tuple[str, str, list[str]]] = []  # (original, shielded, pieces)
        for t in texts:
            s, pieces = shield(t)
            if worth(s):
                jobs.append((t, s, pieces))
            else:
                out[t] = t  # nothing but code: kept as it is, and never sent
        for batch in _batches(jobs):
            try:
                answer = self.backend.ask(json.dumps([s for _, s, _ in batch], ensure_ascii=False))
            except BackendError as exc:
                self.last_error = str(exc)
                continue
            self.store.spend(self.backend.via, answer.model, answer.usage)
            got = _array(answer.text, len(batch))
            if got is None:
                self.last_error = "the model's answer was not the list asked for"
                continue
            for (orig, _, pieces), tr in zip(batch, got):
                back = unshield(tr, pieces)
                if back is not None:
                    out[orig] = back
        if out:
            self.store.put(self.lang, out)
        return out

    def close(self) -> None:
        self.backend.close()
        self.store.close()


def _batches(jobs: list[tuple[str, str, list[str]]]) -> list[list[tuple[str, str, list[str]]]]:
    out: list[list[tuple[str, str, list[str]]]] = []
    cur: list[tuple[str, str, list[str]]] = []
    size = 0
    for j in jobs:
        if cur and (len(cur) >= BATCH_STRINGS or size + len(j[1]) > BATCH_CHARS):
            out.append(cur)
            cur, size = [], 0
        cur.append(j)
        size += len(j[1])
    if cur:
        out.append(cur)
    return out


def _array(text: str, n: int) -> list[str] | None:
    """The JSON array of `n` strings in a model's answer (a fence around it forgiven)."""
    text = text.strip()
    start, end = text.find("["), text.rfind("]")
    if start < 0 or end < start:
        return None
    try:
        got = json.loads(text[start : end + 1])
    except ValueError:
        return None
    if not isinstance(got, list) or len(got) != n or not all(isinstance(x, str) for x in got):
        return None
    return got
