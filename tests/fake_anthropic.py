"""A scripted Anthropic Messages API on 127.0.0.1 for the real Claude Code CLI in tests.

Each POST /v1/messages streams the next scripted answer (server-sent events, as the
API does) with a `request-id` header: a script is a list of answers, each a list of
content blocks ({"type": "text", "text": ...} or {"type": "tool_use", "name": ...,
"input": ...}); an answer with a tool_use stops for it (`stop_reason: tool_use`). When
the script runs out, the answer is a short text. Requests the CLI makes on the side
(titles, quota checks) get that text too; every request is kept (`requests`).
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class FakeAnthropic:
    def __init__(self, script: list[list[dict[str, Any]]]) -> None:
        self.script = list(script)
        self.requests: list[dict[str, Any]] = []
        self.ids: list[tuple[str, str]] = []  # (request id, message id) of every answer
        self.lock = threading.Lock()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def _json(self, obj: Any, status: int = 200) -> None:
                body = json.dumps(obj).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_HEAD(self) -> None:
                self.send_response(200)
                self.send_header("content-length", "0")
                self.end_headers()

            def do_GET(self) -> None:
                self._json({})

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("content-length") or 0))
                try:
                    req = json.loads(raw)
                except ValueError:
                    req = {}
                if not self.path.startswith("/v1/messages") or "count_tokens" in self.path:
                    self._json({"input_tokens": 10})
                    return
                with fake.lock:
                    fake.requests.append(req)
                    n = len(fake.requests)
                    blocks = fake.script.pop(0) if fake.script and _main(req) else [{"type": "text", "text": "ok"}]
                    rid, mid = f"req_fake{n:04d}", f"msg_fake{n:04d}"
                    fake.ids.append((rid, mid))
                self._stream(req, blocks, rid, mid, n)

            def _stream(self, req: dict, blocks: list[dict], rid: str, mid: str, n: int) -> None:
                model = req.get("model") or "claude-sonnet-4-5"
                usage = {
                    "input_tokens": 100 + n,
                    "output_tokens": 1,
                    "cache_read_input_tokens": 1000 * n,
                    "cache_creation_input_tokens": 50,
                }
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("request-id", rid)
                self.send_header("transfer-encoding", "chunked")
                self.end_headers()

                def event(name: str, data: dict) -> None:
                    chunk = f"event: {name}\ndata: {json.dumps(data)}\n\n".encode()
                    self.wfile.write(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")

                msg = {"id": mid, "type": "message", "role": "assistant", "model": model, "content": []}
                event("message_start", {"type": "message_start", "message": {**msg, "usage": usage}})
                stop = "end_turn"
                for i, b in enumerate(blocks):
                    if b["type"] == "tool_use":
                        stop = "tool_use"
                        start = {"type": "tool_use", "id": f"toolu_fake{n:04d}_{i}", "name": b["name"], "input": {}}
                        delta = {"type": "input_json_delta", "partial_json": json.dumps(b["input"])}
                    else:
                        start, delta = {"type": "text", "text": ""}, {"type": "text_delta", "text": b["text"]}
                    event("content_block_start", {"type": "content_block_start", "index": i, "content_block": start})
                    event("content_block_delta", {"type": "content_block_delta", "index": i, "delta": delta})
                    event("content_block_stop", {"type": "content_block_stop", "index": i})
                out = {"output_tokens": 7 * n}
                event("message_delta", {"type": "message_delta", "delta": {"stop_reason": stop}, "usage": out})
                event("message_stop", {"type": "message_stop"})
                self.wfile.write(b"0\r\n\r\n")
                self.wfile.flush()

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> FakeAnthropic:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


def _main(req: dict[str, Any]) -> bool:
    """A request of the session's own turn (it offers tools), not a side call."""
    return bool(req.get("tools"))
