"""The server's side of voices: which open window plays, what it hears, the clips.

Only one open window plays at a time: the last to claim it, for as long as its
heartbeats keep coming (a window that stops beating for `BEAT_LAPSE` seconds lets
the claim go to the one that claimed before it, if that one still beats). The desk
speaks the holder's session only, unless that session or every session is muted; its
lines come from the events the watcher pushes to pages (`heard`), and each clip is
announced on the page's stream (`voice`) and fetched from GET /api/voice/clip/N.

Nothing starts here until voices are on (optin.json) and a window claims: then the
speaker starts its worker on the first line.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from huddle import optin
from huddle.errors import BadRequest, NotFound
from huddle.model.rows import plain

from .lines import Cast, line_of, spoken
from .speaker import Clip, Line, Speaker

BEAT_LAPSE = 6.0  # seconds without a heartbeat before a window's claim lapses
CLIPS_KEPT = 16
WINDOW_MAX = 64  # characters of a window id
OFF = "voices are off: `huddle voices on` turns them on"

Publish = Callable[[list[tuple[str, dict, str | None]]], None]


class _Claim:
    __slots__ = ("at", "beat", "muted", "session")

    def __init__(self, session: str, at: float) -> None:
        self.session = session
        self.at = at
        self.beat = at
        self.muted = False


class VoiceDesk:
    def __init__(self, home: str, publish: Publish, detail: Callable[[str], dict] | None = None) -> None:
        self.home = home
        self.publish = publish
        self.detail = detail  # a session's detail (its tree: the cast's order and names)
        self.lock = threading.Lock()
        self.claims: dict[str, _Claim] = {}
        self.casts: dict[str, tuple[Cast, dict[str, str], str]] = {}  # session -> (cast, names, lead)
        self.clips: OrderedDict[int, Clip] = OrderedDict()
        self.speaker: Speaker | None = None
        self.waits: dict[str, object] = {}  # session -> the wait last said ("needs you" once per wait)

    # -- settings --------------------------------------------------------------------

    def settings(self) -> optin.OptIn:
        return optin.load(self.home)

    # -- the claim -------------------------------------------------------------------

    def _window(self, window: object) -> str:
        w = str(window or "")
        if not w or len(w) > WINDOW_MAX or not all(c.isalnum() or c in "-_" for c in w):
            raise BadRequest("window: a short id of letters, digits, - and _")
        return w

    def holder(self, now: float | None = None) -> tuple[str, _Claim] | None:
        now = time.monotonic() if now is None else now
        live = [(c.at, w, c) for w, c in self.claims.items() if now - c.beat <= BEAT_LAPSE]
        if not live:
            return None
        _, w, c = max(live)
        return w, c

    def claim(self, window: object, session: str) -> dict[str, Any]:
        o = self.settings()
        if not o.voices:
            raise NotFound(OFF)
        w = self._window(window)
        d: dict = {}
        if self.detail is not None:
            d = self.detail(session)  # (raises NotFound for a session that is not there)
        if session not in self.casts:
            tree = d.get("tree") or []
            lead = str(d.get("lead") or session)
            names = {str(a["id"]): str(a.get("label") or "") for a in tree if a.get("id")}
            self.casts[session] = (Cast(lead, [str(a["id"]) for a in tree if a.get("id")]), names, lead)
        with self.lock:
            now = time.monotonic()
            self.claims[w] = _Claim(session, now)
            for k in [k for k, c in self.claims.items() if now - c.beat > BEAT_LAPSE]:
                del self.claims[k]
        out = self.beat(w, session)
        if d:
            self._waits(session, [d], o)  # a session that needs you says so first
        return out

    def beat(self, window: object, session: str, muted: object = None) -> dict[str, Any]:
        w = self._window(window)
        o = self.settings()
        with self.lock:
            c = self.claims.get(w)
            now = time.monotonic()
            claimed = c is not None and now - c.beat <= BEAT_LAPSE  # (a lapsed claim must be made again)
            if c is not None and claimed:
                c.beat = now
                c.session = session
                c.muted = muted in ("1", "true", True)
            held = self.holder(now)
        playing = o.voices and held is not None and held[0] == w
        return {
            "on": o.voices,
            "playing": bool(playing),
            "claimed": claimed,
            "muted": o.muted or session in o.muted_sessions,
            "lapse": BEAT_LAPSE,
            **({"speaker": self.speaker.status()} if self.speaker is not None else {}),
        }

    # -- lines -----------------------------------------------------------------------

    def heard(self, msgs: list[tuple[str, dict, str | None]]) -> None:
        """New events pushed to pages (the watcher's thread): the holder's session's
        lines go to the speaker. Quick: the speaking happens on the speaker's thread."""
        if not self.claims:
            return
        with self.lock:
            held = self.holder()
        if held is None or held[1].muted:
            return
        session = held[1].session
        picked = [d for kind, d, sid in msgs if kind == "events" and sid == session]
        # (a board's rows typed, model.rows; said as their JSON, as a session's detail is)
        rows = [plain(r) for kind, d, _ in msgs if kind == "board" for r in d.get("sessions") or () if r.id == session]
        if not picked and not rows:
            return
        o = self.settings()
        if session not in self.casts:
            return
        cast, names, lead = self.casts[session]
        for data in picked:
            for e in data.get("events") or ():
                if e.get("kind") == "waiting":
                    continue  # (the session's state says it: once per wait, whatever wrote it)
                line = line_of(e, session, lead, cast, names)
                if line is not None:
                    self._say(line, o)
        self._waits(session, rows, o)

    def _waits(self, session: str, rows: list[dict], o: optin.OptIn) -> None:
        """ "Needs you: why" once per wait, from the session's state (a row or its detail,
        as their JSON says them)."""
        cast, _, lead = self.casts[session]
        for r in rows:
            if r.get("state") != "needs_you":
                self.waits.pop(session, None)
                continue
            wait = r.get("state_since") or r.get("waiting_for")
            if self.waits.get(session) == wait:
                continue
            self.waits[session] = wait
            who = [str(a.get("id")) for a in r.get("agents") or r.get("tree") or () if a.get("state") == "needs_you"]
            agent = who[-1] if who else lead
            why = spoken(str(r.get("waiting_for") or "it waits for your answer"), 160)
            self._say(Line(f"Needs you: {why}", session, agent, cast.place(agent), urgent=True), o)

    def _say(self, line: Line, o: optin.OptIn) -> None:
        if not o.voices or o.muted or line.session in o.muted_sessions:
            return
        with self.lock:
            held = self.holder()
        if held is None or held[1].muted or held[1].session != line.session:
            return
        self._speaker(o).say(line)

    def _speaker(self, o: optin.OptIn) -> Speaker:
        if self.speaker is None:
            self.speaker = Speaker(o.engine, on_clip=self._clip)
        return self.speaker

    def _clip(self, clip: Clip) -> None:
        with self.lock:
            self.clips[clip.n] = clip
            while len(self.clips) > CLIPS_KEPT:
                self.clips.popitem(last=False)
        line = clip.line
        self.publish(
            [
                (
                    "voice",
                    {
                        "session": line.session,
                        "n": clip.n,
                        "agent": line.agent,
                        "text": line.text,
                        "urgent": line.urgent,
                        "engine": clip.engine,
                        "voice": clip.voice,
                        "duration": round(clip.duration, 3),
                        "waited": round(clip.ready - line.born, 3),  # from the line appearing to its audio ready
                        "at": time.time(),  # a page resuming its stream skips clips gone stale meanwhile
                        "url": f"/api/voice/clip/{clip.n}",
                    },
                    line.session,
                )
            ]
        )

    def clip(self, n: object) -> bytes:
        try:
            key = int(str(n))
        except ValueError:
            raise BadRequest("clip: a number") from None
        with self.lock:
            c = self.clips.get(key)
        if c is None:
            raise NotFound(f"no clip {key} (only the last {CLIPS_KEPT} are kept)")
        return c.wav()

    def status(self) -> dict[str, Any]:
        from .models import installed

        o = self.settings()
        with self.lock:
            held = self.holder()
        return {
            "on": o.voices,
            "engine": o.engine or ("kokoro" if installed(self.home) else "espeak"),
            "muted": o.muted,
            "muted_sessions": list(o.muted_sessions),
            "kokoro": installed(self.home) is not None,
            "playing": {"session": held[1].session} if held else None,
            "speaker": self.speaker.status() if self.speaker is not None else None,
            **({} if o.voices else {"why": OFF}),
        }

    def close(self) -> None:
        if self.speaker is not None:
            self.speaker.close()
