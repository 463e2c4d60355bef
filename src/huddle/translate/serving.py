"""Translation for the server's pages and notifications: which language is in force,
the translator (made on the first string asked for, never before), the strings of a
session's events by their `seq`.

The language: `huddle serve --translate LANG` (HUDDLE_TRANSLATE, "off" to override the
setting) or the saved setting (`huddle translate LANG`); none, and nothing here runs.
"""

from __future__ import annotations

import os
import threading
from typing import Any

from huddle import optin
from huddle.errors import BadRequest, NotFound

from .claude import BackendError
from .translator import Translator

ENV = "HUDDLE_TRANSLATE"
SEQS_MAX = 200  # strings one request may ask for
OFF = "translation is off: `huddle translate LANG` or `huddle serve --translate LANG` turns it on"
TEXT_KINDS = {"say": "text", "prompt": "text", "report": "text", "order": "text", "error": "text", "waiting": "detail"}


def language(home: str, env: dict[str, str] | None = None) -> str:
    """The language pages are shown in ("" = off)."""
    v = (env if env is not None else os.environ).get(ENV, "").strip()
    if v:
        return "" if v.lower() in ("off", "none", "0") else v
    return optin.load(home).translate


class TranslationDesk:
    def __init__(self, home: str) -> None:
        self.home = home
        self.lock = threading.Lock()
        self.translator: Translator | None = None

    def lang(self) -> str:
        return language(self.home)

    def _translator(self) -> Translator:
        lang = self.lang()
        if not lang:
            raise NotFound(OFF)
        with self.lock:
            t = self.translator
            if t is None or t.lang != lang:
                if t is not None:
                    t.close()
                o = optin.load(self.home)
                try:
                    t = self.translator = Translator(self.home, lang, o.translate_via, o.translate_model)
                except (BackendError, ValueError) as exc:
                    raise BadRequest(str(exc)) from None
            return t

    def status(self) -> dict[str, Any]:
        lang = self.lang()
        o = optin.load(self.home)
        t = self.translator
        return {
            "on": bool(lang),
            "lang": lang or None,
            "via": o.translate_via if lang else None,
            "error": (t.last_error or None) if t is not None else None,
            **({} if lang else {"why": OFF}),
        }

    def texts(self, texts: list[str]) -> list[str]:
        return self._translator().translate(texts)

    def events(self, h: Any, sid: str, seqs: list[str]) -> dict[str, Any]:
        """GET /api/sessions/{id}/translation?seq=N&seq=M: those events' words in the
        language (the original where there are none to translate, or it failed)."""
        from huddle.views.lookup import session_handle

        t = self._translator()
        if len(seqs) > SEQS_MAX:
            raise BadRequest(f"at most {SEQS_MAX} seq at a time")
        try:
            wanted = sorted({int(s) for s in seqs})
        except ValueError:
            raise BadRequest("seq: event numbers") from None
        picked: list[tuple[int, str, str]] = []
        with h.lock:
            s = session_handle(h, sid).session
            epoch = s.epoch
            for n in wanted:
                if 0 <= n < len(s.events):
                    e = s.events[n]
                    field = TEXT_KINDS.get(e.kind)
                    words = getattr(e, field, None) if field else None
                    if words:
                        picked.append((n, field or "text", words))
        done = t.translate([w for _, _, w in picked])  # (outside the core's lock: seconds, at first)
        return {
            "session": sid,
            "epoch": epoch,
            "lang": t.lang,
            "items": [{"seq": n, "field": f, "text": tr, "translated": tr != w} for (n, f, w), tr in zip(picked, done)],
            "error": t.last_error or None,
        }

    def close(self) -> None:
        with self.lock:
            if self.translator is not None:
                self.translator.close()
                self.translator = None
