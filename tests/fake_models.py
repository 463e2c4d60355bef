"""A scripted model API on 127.0.0.1 for the real agent CLIs: Anthropic's Messages API
(Claude Code), OpenAI's chat completions (OpenCode, Gemini-style ACP agents on an
OpenAI-compatible provider) and OpenAI's Responses API (Codex).

A conversation picks its script by a marker in its first prompt (`[[scn:NAME]]`); the
step is the number of tool results the conversation holds so far, so a tool call waits
as long as the agent's human does and the next request comes only with its result.
A step is `("tool", name, input)` or `("text", words)`; past the script's end the model
says what it last saw. A request with no tools (a title, a summary) gets a short text.
Every request is kept (`requests`) so a test can see what the agent sent back: the tool
result of an allowed call, the refusal of a denied one, the user's next message.
"""

from __future__ import annotations

import json
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

MARK = re.compile(r"\[\[scn:([\w-]+)\]\]")


def _sse(data: dict, event: str | None = None) -> bytes:
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {json.dumps(data)}\n\n".encode()


class FakeModels:
    def __init__(self, scripts: dict[str, list[tuple]]):
        self.scripts = scripts
        self.requests: list[dict[str, Any]] = []
        self.lock = threading.RLock()  # (a wait's condition may read what was sent)
        self.changed = threading.Condition(self.lock)
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def do_GET(self):
                self._json({"data": [], "object": "list"})

            def do_POST(self):
                n = int(self.headers.get("content-length") or 0)
                try:
                    body = json.loads(self.rfile.read(n) or b"{}")
                except ValueError:
                    body = {}
                fake._keep(self.path, body)
                path = self.path.split("?")[0]
                if path.endswith("/messages"):
                    fake._anthropic(self, body)
                elif path.endswith("/chat/completions"):
                    fake._chat(self, body)
                elif path.endswith("/responses"):
                    fake._responses(self, body)
                else:
                    self._json({})

            def _json(self, data: dict) -> None:
                b = json.dumps(data).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(b)))
                self.end_headers()
                self.wfile.write(b)

            def _stream(self) -> None:
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("cache-control", "no-cache")
                self.send_header("connection", "close")
                self.end_headers()
                self.close_connection = True

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> FakeModels:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()

    # -- what the agents sent --------------------------------------------------------------

    def _keep(self, path: str, body: dict) -> None:
        with self.changed:
            self.requests.append({"path": path, "body": body, "t": time.time()})
            self.changed.notify_all()

    def wait_for(self, cond, what: str, limit: float = 90.0):
        """Block until `cond(requests)` is true (a safety limit, not a measurement)."""
        end = time.monotonic() + limit
        with self.changed:
            while True:
                got = cond(self.requests)
                if got:
                    return got
                left = end - time.monotonic()
                if left <= 0:
                    raise AssertionError(f"the model server never saw {what}")
                self.changed.wait(min(left, 0.5))

    def sent_text(self) -> str:
        """Everything the agents sent, as one text (to look for a tool result or a message)."""
        with self.lock:
            return "\n".join(json.dumps(r["body"]) for r in self.requests)

    # -- the script --------------------------------------------------------------------------

    def _step(self, conversation: str, results: int) -> tuple:
        m = MARK.search(conversation)
        script = self.scripts.get(m.group(1), []) if m else []
        if results < len(script):
            return script[results]
        return ("text", f"done after {results} tool results")

    # -- Anthropic ---------------------------------------------------------------------------

    def _anthropic(self, h, body: dict) -> None:
        msgs = body.get("messages") or []
        results = sum(
            1
            for m in msgs
            if m.get("role") == "user" and isinstance(m.get("content"), list)
            for b in m["content"]
            if isinstance(b, dict) and b.get("type") == "tool_result"
        )
        step = self._step(json.dumps(msgs), results) if body.get("tools") else ("text", "Title")
        n = len(self.requests)
        if step[0] == "tool":
            blocks = [{"type": "tool_use", "id": f"toolu_{n:04d}", "name": step[1], "input": step[2]}]
            stop = "tool_use"
        else:
            blocks = [{"type": "text", "text": step[1]}]
            stop = "end_turn"
        usage = {"input_tokens": 10, "output_tokens": 1, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
        msg = {"id": f"msg_{n:04d}", "type": "message", "role": "assistant", "model": body.get("model")}
        if not body.get("stream"):
            h._json({**msg, "content": blocks, "stop_reason": stop, "stop_sequence": None, "usage": usage})
            return
        h._stream()
        w = h.wfile.write
        w(
            _sse(
                {"type": "message_start", "message": {**msg, "content": [], "stop_reason": None, "usage": usage}},
                "message_start",
            )
        )
        for i, b in enumerate(blocks):
            if b["type"] == "text":
                start, delta = {"type": "text", "text": ""}, {"type": "text_delta", "text": b["text"]}
            else:
                start = {"type": "tool_use", "id": b["id"], "name": b["name"], "input": {}}
                delta = {"type": "input_json_delta", "partial_json": json.dumps(b["input"])}
            w(_sse({"type": "content_block_start", "index": i, "content_block": start}, "content_block_start"))
            w(_sse({"type": "content_block_delta", "index": i, "delta": delta}, "content_block_delta"))
            w(_sse({"type": "content_block_stop", "index": i}, "content_block_stop"))
        end = {
            "type": "message_delta",
            "delta": {"stop_reason": stop, "stop_sequence": None},
            "usage": {"output_tokens": 9},
        }
        w(_sse(end, "message_delta"))
        w(_sse({"type": "message_stop"}, "message_stop"))
        h.wfile.flush()

    # -- OpenAI chat completions -----------------------------------------------------------

    def _chat(self, h, body: dict) -> None:
        msgs = body.get("messages") or []
        results = sum(1 for m in msgs if m.get("role") == "tool")
        step = self._step(json.dumps(msgs), results) if body.get("tools") else ("text", "Title")
        n = len(self.requests)
        base = {"id": f"chatcmpl-{n:04d}", "object": "chat.completion.chunk", "created": int(time.time())}
        base["model"] = body.get("model")
        if step[0] == "tool":
            call = {"index": 0, "id": f"call_{n:04d}", "type": "function"}
            call["function"] = {"name": step[1], "arguments": json.dumps(step[2])}
            delta: dict[str, Any] = {"role": "assistant", "content": None, "tool_calls": [call]}
            finish = "tool_calls"
        else:
            delta, finish = {"role": "assistant", "content": step[1]}, "stop"
        usage = {"prompt_tokens": 20, "completion_tokens": 5, "total_tokens": 25}
        if not body.get("stream"):
            message = {k: v for k, v in delta.items() if k != "tool_calls" or v}
            if "tool_calls" in message:
                message["tool_calls"] = [{k: v for k, v in c.items() if k != "index"} for c in message["tool_calls"]]
            choice = {"index": 0, "message": message, "finish_reason": finish}
            h._json({**base, "object": "chat.completion", "choices": [choice], "usage": usage})
            return
        h._stream()
        w = h.wfile.write
        w(_sse({**base, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]}))
        w(_sse({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}], "usage": usage}))
        w(b"data: [DONE]\n\n")
        h.wfile.flush()

    # -- OpenAI Responses (Codex) ----------------------------------------------------------

    def _responses(self, h, body: dict) -> None:
        items = body.get("input") or []
        results = sum(1 for i in items if isinstance(i, dict) and str(i.get("type", "")).endswith("_call_output"))
        step = self._step(json.dumps(items), results) if body.get("tools") else ("text", "Title")
        n = len(self.requests)
        rid = f"resp_{n:04d}"
        if step[0] == "tool":
            item = {"type": "function_call", "id": f"fc_{n:04d}", "call_id": f"call_{n:04d}", "name": step[1]}
            item["arguments"] = json.dumps(step[2])
            item["status"] = "completed"
        else:
            item = {"type": "message", "id": f"msg_{n:04d}", "role": "assistant", "status": "completed"}
            item["content"] = [{"type": "output_text", "text": step[1], "annotations": []}]
        usage = {
            "input_tokens": 20,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": 5,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": 25,
        }
        h._stream()
        w = h.wfile.write
        w(_sse({"type": "response.created", "response": {"id": rid}}, "response.created"))
        w(_sse({"type": "response.output_item.done", "output_index": 0, "item": item}, "response.output_item.done"))
        done = {"type": "response.completed", "response": {"id": rid, "usage": usage}}
        w(_sse(done, "response.completed"))
        h.wfile.flush()
