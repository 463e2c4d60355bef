"""The routes of the opt-in extras, behind the same security as every other route:
voices (huddle.voice.desk) and translation (huddle.translate.serving).

GET /api/voice                 voices' state (starts nothing)
GET /api/voice/claim?session=ID&window=W     this window plays from now on
GET /api/voice/beat?session=ID&window=W&muted=0|1   the claim kept alive; who plays
GET /api/voice/clip/{n}        one spoken line (audio/wav)
GET /api/translation           the language in force (starts nothing)
GET /api/sessions/{id}/translation?seq=N&seq=M   those events' words, translated

A claim and a heartbeat change only what this server holds in memory (which window
plays), never a file: GET, like every route here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from huddle.views import api


class Extras:
    """The voice desk and the translation desk of one server: made now, cheap; nothing
    runs until voices are on and a window claims, or a string is asked for."""

    def __init__(self, h: Any, publish: Callable[[list], None]) -> None:
        from huddle.translate.serving import TranslationDesk
        from huddle.voice.desk import VoiceDesk

        home = h.settings.huddle_home

        def detail(sid: str) -> dict:
            with h.lock:
                return api.session_detail(h, sid)

        self.voice = VoiceDesk(home, publish, detail)
        self.translation = TranslationDesk(home)

    def heard(self, msgs: list) -> None:
        self.voice.heard(msgs)

    def close(self) -> None:
        self.voice.close()
        self.translation.close()


def routes(h: Any, extras: Extras, json_response: Callable[..., Response]) -> list[Route]:
    voice, translation = extras.voice, extras.translation

    def voice_state(request: Request) -> Response:
        return json_response(voice.status())

    def claim(request: Request) -> Response:
        q = request.query_params
        sid = api.check_id(q.get("session"))
        return json_response(voice.claim(q.get("window"), sid))

    def beat(request: Request) -> Response:
        q = request.query_params
        sid = api.check_id(q.get("session"))
        return json_response(voice.beat(q.get("window"), sid, q.get("muted")))

    def clip(request: Request) -> Response:
        return Response(
            voice.clip(request.path_params["n"]), media_type="audio/wav", headers={"cache-control": "no-store"}
        )

    def translation_state(request: Request) -> Response:
        return json_response(translation.status())

    def translated(request: Request) -> Response:
        sid = api.check_id(request.path_params["id"])
        return json_response(translation.events(h, sid, request.query_params.getlist("seq")))

    return [
        Route("/api/voice", voice_state),
        Route("/api/voice/claim", claim),
        Route("/api/voice/beat", beat),
        Route("/api/voice/clip/{n}", clip),
        Route("/api/translation", translation_state),
        Route("/api/sessions/{id}/translation", translated),
    ]
