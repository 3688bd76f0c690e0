"""A JSON-over-HTTP fake server on 127.0.0.1 for provider tests (embedders, LLMs): subclasses
answer ``respond(path, body) -> (status, payload)``; every request is recorded."""
from __future__ import annotations

import json
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class FakeJSONServer:
    def __init__(self):
        self.requests = []  # (path, body, Authorization header)
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                server.requests.append((self.path, body, self.headers.get("Authorization")))
                code, payload = server.respond(self.path, body)
                data = json.dumps(payload).encode()
                try:
                    self.send_response(code)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):  # the client gave up (timeout tests)
                    pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def respond(self, path: str, body: dict) -> tuple[int, dict]:
        raise NotImplementedError

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()


def free_port() -> int:
    """A port nothing listens on (for 'server down' tests)."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def request_key(body: dict) -> str:
    """What a recorded LLM response is keyed by: the model, the messages and the structured-output
    schema of a chat request, in either dialect (Ollama's ``format``, OpenAI's ``response_format``)."""
    import hashlib
    schema = body.get("format")
    if schema is None and isinstance(body.get("response_format"), dict):
        schema = (body["response_format"].get("json_schema") or {}).get("schema")
    data = json.dumps({"model": body.get("model"), "messages": body.get("messages"), "schema": schema},
                      sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(data.encode("utf-8")).hexdigest()[:16]


def chat_reply(path: str, body: dict, content: str) -> tuple[int, dict]:
    """An assistant message ``content`` as Ollama's ``/api/chat`` or OpenAI's ``/v1/chat/completions``
    answers it (404 on another route): the one reply shape every fake LLM server here speaks."""
    if path == "/api/chat":
        return 200, {"model": body["model"], "created_at": "2026-01-01T00:00:00Z", "done": True,
                     "done_reason": "stop", "message": {"role": "assistant", "content": content}}
    if path == "/v1/chat/completions":
        return 200, {"id": "x", "object": "chat.completion", "model": body["model"],
                     "choices": [{"index": 0, "finish_reason": "stop",
                                  "message": {"role": "assistant", "content": content}}]}
    return 404, {"error": "no route"}


class ReplayLLM(FakeJSONServer):
    """Speaks Ollama's ``/api/chat`` and the OpenAI-compatible ``/v1/chat/completions``, replaying
    ``recordings[request_key(body)]`` (``{"content": str, "status": int, "delay": seconds}``). A request
    nobody recorded is answered 500 and kept in ``unrecorded``; ``__exit__`` then fails the test,
    printing each such request's key and messages so it can be recorded (by hand: no model here)."""

    def __init__(self, recordings: dict):
        super().__init__()
        self.recordings = recordings
        self.unrecorded: list[tuple[str, dict]] = []
        self.replayed: list[str] = []

    def respond(self, path, body):
        import time
        key = request_key(body)
        rec = self.recordings.get(key)
        if rec is None:
            self.unrecorded.append((key, body))
            return 500, {"error": f"no recorded response for request {key}"}
        self.replayed.append(key)
        time.sleep(rec.get("delay", 0))
        if rec.get("status", 200) != 200:
            return rec["status"], {"error": rec.get("content", "error")}
        content = rec["content"] if isinstance(rec["content"], str) else json.dumps(rec["content"])
        return chat_reply(path, body, content)

    def __exit__(self, *exc):
        super().__exit__(*exc)
        if self.unrecorded and exc[0] is None:
            lines = [f"{key}: model={b.get('model')} messages={json.dumps(b.get('messages'), ensure_ascii=False)}"
                     for key, b in self.unrecorded]
            raise AssertionError("unrecorded LLM request(s); record a response for each key:\n" + "\n".join(lines))
