"""A scripted OpenAI-compatible server on 127.0.0.1 for the hardening tests (no network).

`ProviderServer` answers ``POST /v1/chat/completions`` from a thread. By default it answers
200 with a structured summary; a request for a model named in ``unauthorized`` gets a 401 whose
body echoes every credential it was sent (the bearer token, ``x-api-key``, and the decoded
user-info of a Basic header), as a careless proxy does. With ``echo_everything`` it echoes
every header it was sent, the request path with its query string, and the base64 of each
header value and of the query, the way a debugging proxy dumps a request. With ``echo_forms``
it echoes every credential it was sent (the bearer token, ``x-*`` header values, the decoded
``Proxy-Authorization`` user-info, query values, and the leaves of a ``credentials`` table in
the request body) in every encoding of `tests.hardening._forms.encoded_forms`. A model named in
``status_for`` gets that status (a 503 tests retries). Every request is counted, with its body.
A ``json_responder`` answers in another API's shape (Anthropic's ``/v1/messages``, OpenAI's
``/v1/responses/compact``).
"""

from __future__ import annotations

import base64
import json
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from tests.hardening._forms import encoded_forms

SUMMARY = ('<analysis>checked</analysis>\n```json\n{"user_intent": ["fix the bug in app.py"], '
           '"current_work": "editing app.py"}\n```')


def completion(text: str, *, prompt: int = 100, output: int = 50) -> dict[str, Any]:
    return {
        "id": "chatcmpl-1", "object": "chat.completion", "created": 1700000000,
        "model": "served-model",
        "choices": [{"index": 0, "finish_reason": "stop",
                     "message": {"role": "assistant", "content": text}}],
        "usage": {"prompt_tokens": prompt, "completion_tokens": output,
                  "total_tokens": prompt + output},
    }


class _Handler(BaseHTTPRequestHandler):
    server: ProviderServer

    def do_POST(self) -> None:  # noqa: N802 - http.server's naming
        length = int(self.headers.get("content-length") or 0)
        body = json.loads(self.rfile.read(length) or b"{}")
        server = self.server
        credentials = self._credentials()
        if server.echo_forms:
            credentials = [form for value in self._secrets_seen(body)
                           for form in encoded_forms(value)]
        with server.lock:
            server.requests.append({"model": body.get("model"), "credentials": credentials,
                                    "path": self.path, "body": body,
                                    "headers": {k.lower(): v for k, v in self.headers.items()}})
        server.first_request.set()
        if server.gate is not None:
            server.gate.wait(timeout=60)
        if server.delay:
            time.sleep(server.delay)
        if body.get("model") in server.held:
            server.release.wait(timeout=120)
        if body.get("model") in server.status_for:
            status = server.status_for[body["model"]]
            reply: dict[str, Any] = {"error": {
                "message": f"the server is busy; you sent {' | '.join(credentials)}",
                "type": "server_error", "param": None, "code": None}}
        elif body.get("model") in server.unauthorized:
            status = 401
            reply = {"error": {
                "message": f"Incorrect API key provided: {' | '.join(credentials)}",
                "type": "invalid_request_error", "param": None, "code": "invalid_api_key"}}
        elif server.json_responder is not None:
            status = 200
            reply = server.json_responder(body, self.path)
        else:
            status = 200
            text = server.responder(body) if server.responder is not None else server.reply_text
            if server.echo_in_reply:
                text += "\n" + " ".join(credentials)
            reply = completion(text, prompt=server.prompt_tokens, output=server.output_tokens)
        data = json.dumps(reply).encode()
        try:
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass

    def _credentials(self) -> list[str]:
        if self.server.echo_everything:
            found = [f"{name}: {value}" for name, value in self.headers.items()]
            found += [base64.b64encode(v.encode()).decode() for v in self.headers.values()]
            query = self.path.partition("?")[2]
            found += [f"path: {self.path}", base64.b64encode(query.encode()).decode()]
            return found
        found = []
        for name in ("authorization", "x-api-key", "api-key"):
            value = self.headers.get(name)
            if value:
                found.append(f"{name}: {value}")
                if value.lower().startswith("basic "):
                    found.append(base64.b64decode(value[6:]).decode("utf-8", "replace"))
        return found

    def _secrets_seen(self, body: Any) -> list[str]:
        seen = []
        auth = self.headers.get("authorization") or ""
        if auth.lower().startswith("bearer "):
            seen.append(auth[7:])
        seen += [v for k, v in self.headers.items()
                 if k.lower().startswith("x-") and not k.lower().startswith("x-stainless")]
        proxy = self.headers.get("proxy-authorization") or ""
        if proxy.lower().startswith("basic "):
            userinfo = base64.b64decode(proxy[6:]).decode("utf-8", "replace")
            seen += [userinfo, *userinfo.split(":", 1)]
        seen += [v for _, v in parse_qsl(urlsplit(self.path).query)]
        seen += _leaves(body.get("credentials")) if isinstance(body, dict) else []
        return [v for v in seen if v]

    def log_message(self, format: str, *args: Any) -> None:
        pass


def _leaves(value: Any) -> list[str]:
    if isinstance(value, dict):
        return [leaf for item in value.values() for leaf in _leaves(item)]
    if isinstance(value, list):
        return [leaf for item in value for leaf in _leaves(item)]
    return [] if value is None else [str(value)]


class ProviderServer(ThreadingHTTPServer):
    """The server; start with `start()`, stop with `stop()`.

    Attributes:
        requests: ``{"model", "credentials", "path", "headers"}`` per request received, in order.
        unauthorized: Model names answered with the echoing 401.
        status_for: Model name -> the error status it is answered with (echoing too).
        echo_everything: Echo every header, the path and base64 forms (see the module docstring).
        echo_forms: Echo every credential in every encoding (see the module docstring).
        held: Model names whose answers wait until `release` is set.
        delay: Seconds each answer waits (to keep calls in flight).
        gate: When set to an Event, answers wait until it is set.
        first_request: Set when the first request arrives.
        responder: When set, ``body -> reply text`` computes each answer from the request.
        json_responder: When set, ``(body, path) -> reply JSON`` answers in another API's shape
            (Anthropic's messages, OpenAI's responses).
    """

    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.lock = threading.Lock()
        self.requests: list[dict[str, Any]] = []
        self.unauthorized: set[str] = set()
        self.delay = 0.0
        self.gate: threading.Event | None = None
        self.first_request = threading.Event()
        self.reply_text = SUMMARY
        self.responder: Callable[[dict[str, Any]], str] | None = None
        self.json_responder: Callable[[dict[str, Any], str], dict[str, Any]] | None = None
        self.echo_in_reply = False
        self.echo_everything = False
        self.echo_forms = False
        self.status_for: dict[str, int] = {}
        self.held: set[str] = set()
        self.release = threading.Event()
        self.prompt_tokens, self.output_tokens = 100, 50
        self._thread = threading.Thread(target=self.serve_forever,
                                        kwargs={"poll_interval": 0.05}, daemon=True)

    @property
    def port(self) -> int:
        return int(self.server_address[1])

    def base(self, userinfo: str = "", query: str = "") -> str:
        """The ``api_base`` URL, optionally with ``user:password@`` and a query string in it."""
        at = f"{userinfo}@" if userinfo else ""
        return f"http://{at}127.0.0.1:{self.port}/v1" + (f"?{query}" if query else "")

    def start(self) -> ProviderServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self.release.set()
        self.shutdown()
        self.server_close()
