"""A real local HTTP server that plays an OpenAI-compatible chat endpoint from a script.

The project's one stand-in for an LLM: the client under test speaks real HTTP to it
(sockets, status codes, headers, timeouts), and tests queue the answers it gives
and inspect the requests it received.
"""

from __future__ import annotations

import json
import threading
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["RecordedRequest", "ScriptedLLMServer", "ScriptedResponse", "chat_body"]


def chat_body(content: str, *, usage: dict[str, int] | None = None) -> dict[str, Any]:
    """A minimal chat completion envelope holding ``content``."""
    body: dict[str, Any] = {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "model": "scripted",
        "choices": [{"index": 0, "finish_reason": "stop",
                     "message": {"role": "assistant", "content": content}}],
    }
    if usage is not None:
        body["usage"] = usage
    return body


@dataclass
class ScriptedResponse:
    """One scripted answer.

    ``content`` becomes a chat completion envelope; ``body`` (a dict is sent as JSON,
    a str as is) replaces the envelope entirely. ``delay`` is waited before answering.
    """

    status: int = 200
    content: str | None = None
    body: dict[str, Any] | str | None = None
    delay: float = 0.0
    headers: dict[str, str] = field(default_factory=dict)
    usage: dict[str, int] | None = None

    def payload(self) -> bytes:
        if isinstance(self.body, str):
            return self.body.encode()
        if self.body is not None:
            return json.dumps(self.body).encode()
        return json.dumps(chat_body(self.content or "", usage=self.usage)).encode()


@dataclass
class RecordedRequest:
    """What the server received: path, headers (lower-case names) and JSON body."""

    path: str
    headers: dict[str, str]
    body: Any


class ScriptedLLMServer:
    """``ThreadingHTTPServer`` on 127.0.0.1 (free port) answering from a queue.

    When the queue is empty the ``default`` response is used; without one the server
    answers 500 and counts the request in ``unscripted`` (the fixture fails on it).
    """

    def __init__(self, default: ScriptedResponse | None = None) -> None:
        self.default = default
        self.requests: list[RecordedRequest] = []
        self.unscripted = 0
        self._queue: deque[ScriptedResponse] = deque()
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._httpd.daemon_threads = True
        # A short poll interval keeps shutdown() (one per test) from waiting 0.5 s.
        self._thread = threading.Thread(target=self._httpd.serve_forever, args=(0.02,),
                                        daemon=True, name="scripted-llm-server")

    @property
    def base_url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    def start(self) -> ScriptedLLMServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()  # wakes handlers still waiting out a delay
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> ScriptedLLMServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # --- scripting ---------------------------------------------------------------------
    def enqueue(self, *responses: ScriptedResponse) -> None:
        with self._lock:
            self._queue.extend(responses)

    def reply(self, content: str, **kwargs: Any) -> None:
        """Queue one 200 answer with ``content`` (kwargs as for ScriptedResponse)."""
        self.enqueue(ScriptedResponse(content=content, **kwargs))

    def fail(self, status: int, body: dict[str, Any] | str = "", **kwargs: Any) -> None:
        """Queue one error answer."""
        self.enqueue(ScriptedResponse(status=status, body=body or {"error": {
            "message": f"scripted {status}"}}, **kwargs))

    @property
    def pending(self) -> int:
        with self._lock:
            return len(self._queue)

    def _next(self) -> ScriptedResponse:
        with self._lock:
            if self._queue:
                return self._queue.popleft()
            if self.default is not None:
                return self.default
            self.unscripted += 1
        return ScriptedResponse(status=500, body={"error": {"message": "nothing scripted"}})

    def _record(self, request: RecordedRequest) -> None:
        with self._lock:
            self.requests.append(request)

    # --- HTTP ----------------------------------------------------------------------------
    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive, as real servers do
            # Headers and body go out in two writes; without this, Nagle plus delayed
            # ACKs add ~40 ms to every answer.
            disable_nagle_algorithm = True

            def do_POST(self) -> None:  # noqa: N802 - http.server's naming
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                try:
                    body: Any = json.loads(raw or b"null")
                except ValueError:
                    body = raw.decode(errors="replace")
                server._record(RecordedRequest(
                    self.path, {k.lower(): v for k, v in self.headers.items()}, body))
                if self.path.rstrip("/") != "/v1/chat/completions":
                    self._send(ScriptedResponse(status=404, body={"error": "no such path"}))
                    return
                scripted = server._next()
                if scripted.delay and server._stopping.wait(scripted.delay):
                    return  # server stopping: drop the answer
                self._send(scripted)

            def _send(self, scripted: ScriptedResponse) -> None:
                payload = scripted.payload()
                try:
                    self.send_response(scripted.status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(payload)))
                    for name, value in scripted.headers.items():
                        self.send_header(name, value)
                    self.end_headers()
                    self.wfile.write(payload)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeout test); nothing to answer

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
                pass  # keep pytest output clean

        return Handler
