"""Translation through a model API with a key the user sets.

The key is read from `HUDDLE_TRANSLATE_API_KEY` when a request is made: never printed,
never written to any of huddle's files, never part of an error message.
`HUDDLE_TRANSLATE_API_URL` names another endpoint speaking the same Messages API.
"""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.request

from .claude import Answer, BackendError

KEY_ENV = "HUDDLE_TRANSLATE_API_KEY"
URL_ENV = "HUDDLE_TRANSLATE_API_URL"
DEFAULT_URL = "https://api.anthropic.com"
DEFAULT_MODEL = "claude-haiku-4-5"
TIMEOUT = 120.0
MAX_TOKENS = 8192


def has_key(env: dict[str, str] | None = None) -> bool:
    return bool((env if env is not None else os.environ).get(KEY_ENV))


class ApiBackend:
    via = "api"

    def __init__(self, system: str, model: str = "", env: dict[str, str] | None = None) -> None:
        self.env = env if env is not None else os.environ
        if not self.env.get(KEY_ENV):
            raise BackendError(f"no API key: set {KEY_ENV} (huddle never stores it)")
        self.system = system
        self.model = model or DEFAULT_MODEL
        self.url = (self.env.get(URL_ENV) or DEFAULT_URL).rstrip("/") + "/v1/messages"

    def ask(self, prompt: str) -> Answer:
        body = json.dumps(
            {
                "model": self.model,
                "max_tokens": MAX_TOKENS,
                "system": self.system,
                "messages": [{"role": "user", "content": prompt}],
            }
        ).encode()
        req = urllib.request.Request(
            self.url,
            data=body,
            method="POST",
            headers={
                "content-type": "application/json",
                "anthropic-version": "2023-06-01",
                "x-api-key": self.env.get(KEY_ENV, ""),
            },
        )
        try:
            with urllib.request.urlopen(req, timeout=TIMEOUT) as r:
                data = json.loads(r.read())
        except urllib.error.HTTPError as exc:
            raise BackendError(f"the translation API answered {exc.code} {exc.reason}") from None
        except (OSError, ValueError) as exc:
            raise BackendError(f"the translation API could not be reached: {type(exc).__name__}") from None
        if not isinstance(data, dict):
            raise BackendError("the translation API said something else")
        text = "".join(
            str(b.get("text", "")) for b in data.get("content") or () if isinstance(b, dict) and b.get("type") == "text"
        )
        raw = data.get("usage")
        u: dict = raw if isinstance(raw, dict) else {}
        return Answer(
            text,
            str(data.get("model") or self.model),
            {
                "input": int(u.get("input_tokens") or 0),
                "output": int(u.get("output_tokens") or 0),
                "cache_read": int(u.get("cache_read_input_tokens") or 0),
                "cache_write": int(u.get("cache_creation_input_tokens") or 0),
            },
        )

    def close(self) -> None:
        pass
