"""A scripted model API on 127.0.0.1, for driving the real Claude Code CLI (and huddle's
API backend) in the translation tests: POST /v1/messages, streamed (SSE) or not.

Its "translation": a user message whose text is a JSON array of strings is answered
with the same array, each string's words looked up in a small table and marked
"[fr] " in front (markers ⟦n⟧ kept where they stand). Anything else is answered "OK".
Every request is recorded (`requests`): what was asked, by which model."""

from __future__ import annotations

import http.server
import json
import re
import threading
import time

WORDS = {
    "the": "les",
    "tests": "tests",
    "pass": "passent",
    "run": "lance",
    "then": "puis",
    "open": "ouvre",
    "and": "et",
    "done": "fini",
    "needs": "a besoin de",
    "you": "toi",
    "fix": "corrige",
    "next": "ensuite",
    "approve": "approuve",
    "with": "avec",
    "in": "dans",
}


def fake_fr(s: str) -> str:
    return "[fr] " + re.sub(r"[A-Za-z]+", lambda m: WORDS.get(m.group(0).lower(), m.group(0)), s)


def _texts(body: dict) -> list[str]:
    """The text blocks of the last user message."""
    for m in reversed(body.get("messages") or []):
        if m.get("role") != "user":
            continue
        c = m.get("content")
        if isinstance(c, str):
            return [c]
        return [b.get("text", "") for b in c or [] if isinstance(b, dict) and b.get("type") == "text"]
    return []


def answer_for(body: dict) -> tuple[str, bool]:
    for t in reversed(_texts(body)):
        t = t.strip()
        if t.startswith("[") and t.endswith("]"):
            try:
                arr = json.loads(t)
            except ValueError:
                continue
            if isinstance(arr, list) and all(isinstance(x, str) for x in arr):
                return json.dumps([fake_fr(x) for x in arr], ensure_ascii=False), True
    return "OK", False


class FakeModel:
    def __init__(self, delay: float = 0.0) -> None:
        self.requests: list[dict] = []
        self.delay = delay  # seconds before each answer (a model's latency)
        self.lock = threading.Lock()
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def do_GET(self) -> None:
                self._json(404, {"type": "error", "error": {"type": "not_found_error", "message": "no such route"}})

            def do_HEAD(self) -> None:
                self.send_response(200)
                self.send_header("content-length", "0")
                self.end_headers()

            def do_POST(self) -> None:
                n = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(n) if n else b""
                try:
                    body = json.loads(raw or b"{}")
                except ValueError:
                    body = {}
                path = self.path.split("?")[0]
                if path.endswith("/count_tokens"):
                    self._json(200, {"input_tokens": 12})
                    return
                if not path.endswith("/v1/messages"):
                    self._json(404, {"type": "error", "error": {"type": "not_found_error", "message": path}})
                    return
                text, translation = answer_for(body)
                with outer.lock:
                    outer.requests.append(
                        {
                            "model": body.get("model"),
                            "translation": translation,
                            "stream": bool(body.get("stream")),
                            "key": self.headers.get("x-api-key"),
                        }
                    )
                    rid = len(outer.requests)
                if outer.delay:
                    time.sleep(outer.delay)
                usage = {"input_tokens": 40 + len(raw) // 40, "output_tokens": 5 + len(text) // 4}
                msg_id = f"msg_fake{rid:04d}"
                model = body.get("model") or "claude-haiku-4-5"
                if body.get("stream"):
                    self._stream(msg_id, model, text, usage)
                else:
                    self._json(
                        200,
                        {
                            "id": msg_id,
                            "type": "message",
                            "role": "assistant",
                            "model": model,
                            "content": [{"type": "text", "text": text}],
                            "stop_reason": "end_turn",
                            "usage": {**usage, "cache_read_input_tokens": 0, "cache_creation_input_tokens": 0},
                        },
                    )

            def _json(self, status: int, data: dict) -> None:
                blob = json.dumps(data).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(blob)))
                self.end_headers()
                self.wfile.write(blob)

            def _stream(self, msg_id: str, model: str, text: str, usage: dict) -> None:
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("cache-control", "no-cache")
                self.send_header("connection", "close")
                self.end_headers()
                start_usage = {
                    "input_tokens": usage["input_tokens"],
                    "output_tokens": 1,
                    "cache_creation_input_tokens": 0,
                    "cache_read_input_tokens": 0,
                }
                events = [
                    (
                        "message_start",
                        {
                            "type": "message_start",
                            "message": {
                                "id": msg_id,
                                "type": "message",
                                "role": "assistant",
                                "model": model,
                                "content": [],
                                "stop_reason": None,
                                "stop_sequence": None,
                                "usage": start_usage,
                            },
                        },
                    ),
                    (
                        "content_block_start",
                        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
                    ),
                    (
                        "content_block_delta",
                        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}},
                    ),
                    ("content_block_stop", {"type": "content_block_stop", "index": 0}),
                    (
                        "message_delta",
                        {
                            "type": "message_delta",
                            "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                            "usage": {"output_tokens": usage["output_tokens"]},
                        },
                    ),
                    ("message_stop", {"type": "message_stop"}),
                ]
                for name, data in events:
                    self.wfile.write(f"event: {name}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n".encode())
                    self.wfile.flush()
                self.close_connection = True

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def translations(self) -> int:
        with self.lock:
            return sum(1 for r in self.requests if r["translation"])

    def __enter__(self) -> FakeModel:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
