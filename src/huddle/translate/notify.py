"""Desktop notifications in the chosen language.

A notification is never held back for a model: a translation already cached is shown at
once; otherwise the original is shown now and replaced in place when the translation
arrives (the backends' `replaces`), unless it was closed meanwhile.
"""

from __future__ import annotations

import threading
from typing import Any

from .serving import TranslationDesk


class _Shown:
    __slots__ = ("closed", "lock", "real")

    def __init__(self) -> None:
        self.real: object = None
        self.closed = False
        self.lock = threading.Lock()


class TranslatingBackend:
    def __init__(self, inner: Any, desk: TranslationDesk) -> None:
        self.inner = inner
        self.desk = desk
        self.name = f"{inner.name}, translated"
        self.actions = bool(getattr(inner, "actions", False))  # (buttons pass through: huddle.answer)
        self._of: dict[object, _Shown] = {}  # the inner backend's handle -> what `show` gave

    def listen(self, fn: Any) -> None:
        """A button pressed: told with the handle `show` gave (the inner one's mapped back)."""
        self.inner.listen(lambda real, key: fn(self._of.get(real, real), key))

    def show(
        self, summary: str, body: str, url: str | None, replaces: object = None, actions: list | tuple = ()
    ) -> object:
        shown = _Shown()
        before = replaces.real if isinstance(replaces, _Shown) else replaces
        texts = [summary, body]
        done: dict[str, str] = {}
        t = self.desk.translator
        if t is not None and t.lang == self.desk.lang():
            done = t.cached(texts)
        if len(done) == len(set(texts)):
            self._shown(shown, done[summary], done[body], url, before, actions)
            return shown
        self._shown(shown, summary, body, url, before, actions)
        threading.Thread(target=self._later, args=(shown, texts, url, actions), daemon=True).start()
        return shown

    def _shown(self, shown: _Shown, summary: str, body: str, url: str | None, before: object, actions: Any) -> None:
        extra = (actions,) if actions else ()
        self._of.pop(shown.real, None)
        shown.real = self.inner.show(summary, body, url, before, *extra)
        self._of[shown.real] = shown

    def _later(self, shown: _Shown, texts: list[str], url: str | None, actions: Any = ()) -> None:
        try:
            summary, body = self.desk.texts(texts)
        except Exception:  # (the original stays: a notification is never lost to a model)
            return
        if (summary, body) == tuple(texts):
            return
        with shown.lock:
            if not shown.closed:
                self._shown(shown, summary, body, url, shown.real, actions)

    def close(self, handle: object) -> None:
        if isinstance(handle, _Shown):
            with handle.lock:
                handle.closed = True
                real = handle.real
        else:
            real = handle
        if real is not None:
            self._of.pop(real, None)
            self.inner.close(real)


def translated(backend: Any, desk: TranslationDesk | None) -> Any:
    """The backend, its notifications translated while a language is in force."""
    if desk is None or not desk.lang():
        return backend
    return TranslatingBackend(backend, desk)
