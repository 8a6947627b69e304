"""The HTTP front: the OpenAI endpoints and the control API on one standard-library
server (a job bundle must run with nothing but torch installed), the optional bearer
check, and errors as OpenAI-style JSON bodies a client can show as they are."""

import hmac
import json
import socket
import socketserver
import sys
import time
import traceback
import uuid
from collections.abc import Callable, Iterable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

from .. import __version__
from .control import Controller
from .local import LocalGenerator
from .protocol import ApiError, completion_body, parse_chat_request, stream_chunks
from .vllm import VllmEngine

# Training batches can be large (every call of every rollout of a round, with its messages).
MAX_BODY_BYTES = 512 * 1024 * 1024


class App:
    """What the handlers serve: the controller (versions, control API) and one engine,
    the in-process generator or vLLM."""

    def __init__(self, controller: Controller, generator: LocalGenerator | None = None, engine: VllmEngine | None = None, api_key: str | None = None) -> None:
        if (generator is None) == (engine is None):
            raise ValueError("an App serves through exactly one of generator and engine")
        self.controller = controller
        self.generator = generator
        self.engine = engine
        self.api_key = api_key or None

    def authorised(self, header: str | None) -> bool:
        if not self.api_key:
            return True
        expected = f"Bearer {self.api_key}".encode()
        return hmac.compare_digest((header or "").strip().encode(), expected)

    def models(self) -> dict[str, Any]:
        c = self.controller
        return {"object": "list", "data": c.versions.listing(int(c.started), c.policy.base_model)}


class PolicyHTTPServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address: tuple[str, int], app: App) -> None:
        self.address_family = socket.AF_INET6 if ":" in address[0] else socket.AF_INET
        self.app = app
        super().__init__(address, Handler)

    def server_bind(self) -> None:
        # HTTPServer.server_bind looks the host's name up in DNS, which can hang on a
        # cluster node; the name is never used here.
        socketserver.TCPServer.server_bind(self)
        host, port = self.server_address[:2]
        self.server_name, self.server_port = str(host), int(port)


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = f"rollout-trainer/{__version__}"
    # An idle keep-alive connection is closed after this long (clients give up on theirs
    # within seconds); it bounds socket reads and writes, not how long an update may take.
    timeout = 600
    server: PolicyHTTPServer  # pyright: ignore[reportIncompatibleVariableOverride] — the only server a Handler runs in

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 — the job log carries events, not access lines
        return

    # -- dispatch ---------------------------------------------------------------------------
    def do_GET(self) -> None:  # noqa: N802
        self._dispatch("GET")

    def do_POST(self) -> None:  # noqa: N802
        self._dispatch("POST")

    def _routes(self) -> dict[str, dict[str, Callable[[Any], None]]]:
        app = self.server.app
        c = app.controller
        routes: dict[str, dict[str, Callable[[Any], None]]] = {
            "/v1/models": {"GET": lambda _: self._json(200, app.models())},
            "/v1/chat/completions": {"POST": self._chat},
            "/control/status": {"GET": lambda _: self._json(200, c.status())},
            "/control/metrics": {"GET": lambda _: self._json(200, c.metrics())},
            "/control/version": {"GET": lambda _: self._json(200, c.version())},
            "/control/load": {"POST": lambda body: self._json(200, c.load(body))},
            "/control/train": {"POST": lambda body: self._json(200, c.train(body))},
        }
        if app.engine:
            routes["/v1/completions"] = {"POST": lambda body: self._proxy("/v1/completions", body)}
        return routes

    def _dispatch(self, method: str) -> None:
        self._body_read = False
        self._answered = False
        path = urlsplit(self.path).path.rstrip("/") or "/"
        try:
            if not self.server.app.authorised(self.headers.get("authorization")):
                raise ApiError(401, "this server needs the header `Authorization: Bearer <key>`, with the ROLLOUT_TRAINER_API_KEY it was started with", "invalid_api_key")
            route = self._routes().get(path)
            if route is None:
                raise ApiError(404, f"no endpoint {path}; the policy server answers /v1/models, /v1/chat/completions and /control/(status|metrics|version|load|train)", "not_found")
            if method not in route:
                raise ApiError(405, f"{path} takes {' or '.join(route)}, not {method}", "method_not_allowed")
            route[method](self._read_json() if method == "POST" else None)
        except ApiError as exc:
            self._error(exc)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True
        except Exception as exc:  # noqa: BLE001 — every request gets an answer; the log gets the trace
            traceback.print_exc(file=sys.stderr)
            self._error(ApiError(500, f"{type(exc).__name__}: {exc}", "server_error"))

    # -- requests ---------------------------------------------------------------------------
    def _read_json(self) -> dict[str, Any]:
        if "chunked" in self.headers.get("transfer-encoding", "").lower():
            raise ApiError(411, "send the request body with a Content-Length, not chunked", "length_required")
        try:
            length = int(self.headers.get("content-length") or 0)
        except ValueError:
            raise ApiError(400, "Content-Length is not a number", "invalid_request") from None
        if length > MAX_BODY_BYTES:
            raise ApiError(413, f"the body is {length} bytes; at most {MAX_BODY_BYTES} are accepted (send fewer records per /control/train)", "body_too_large")
        raw = self.rfile.read(length) if length > 0 else b""
        self._body_read = True
        if not raw.strip():
            raise ApiError(400, "the request body must be a JSON object, and it is empty", "invalid_json")
        try:
            body = json.loads(raw.decode("utf-8"))
        except UnicodeDecodeError:
            raise ApiError(400, "the request body is not UTF-8 text", "invalid_json") from None
        except json.JSONDecodeError as exc:
            raise ApiError(400, f"the request body is not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}", "invalid_json") from None
        if not isinstance(body, dict):
            raise ApiError(400, f"the request body must be a JSON object, not a {type(body).__name__}", "invalid_json")
        return body

    def _chat(self, body: dict[str, Any]) -> None:
        app = self.server.app
        if app.engine:
            return self._proxy("/v1/chat/completions", body)
        req = parse_chat_request(body)
        policy = app.controller.policy
        # The version is named under the same lock the update switches it under, so the
        # answer's model is the one that produced it.
        assert app.generator is not None  # an App without an engine has a generator
        with policy.lock:
            version = app.controller.versions.resolve(req.model)
            gen = app.generator.generate(req)
        request_id, created = f"chatcmpl-{uuid.uuid4().hex}", int(time.time())
        if req.stream:
            self._events(stream_chunks(req, gen, version, request_id, created))
        else:
            self._json(200, completion_body(req, gen, version, request_id, created))

    def _proxy(self, path: str, body: dict[str, Any]) -> None:
        """vLLM answers; its status, headers and body (a stream included) pass through."""
        app = self.server.app
        model = body.get("model")
        if model is not None and not isinstance(model, str):
            raise ApiError(400, "model: expected the served model name", "invalid_value", "model")
        app.controller.versions.resolve(model)
        assert app.engine is not None  # routed here only when vLLM serves
        status, headers, res = app.engine.forward(path, body)
        lower = {k.lower(): v for k, v in headers.items()}
        try:
            self.send_response(status)
            self.send_header("content-type", lower.get("content-type", "application/json"))
            if lower.get("content-length"):
                self.send_header("content-length", lower["content-length"])
            else:
                self.send_header("connection", "close")
                self.close_connection = True
            self.end_headers()
            self._answered = True
            read = getattr(res, "read1", res.read)
            while True:
                chunk = read(65536)
                if not chunk:
                    break
                self.wfile.write(chunk)
                self.wfile.flush()
        finally:
            res.close()

    # -- answers ----------------------------------------------------------------------------
    def _json(self, status: int, obj: dict[str, Any], headers: Iterable[tuple[str, str]] = ()) -> None:
        data = json.dumps(obj, allow_nan=False).encode("utf-8")
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        for k, v in headers:
            self.send_header(k, v)
        if self.close_connection:
            self.send_header("connection", "close")
        self.end_headers()
        self._answered = True
        self.wfile.write(data)

    def _events(self, chunks: Iterable[dict[str, Any]]) -> None:
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("cache-control", "no-cache")
        self.send_header("connection", "close")
        self.end_headers()
        self._answered = True
        self.close_connection = True
        for chunk in chunks:
            self.wfile.write(b"data: " + json.dumps(chunk, allow_nan=False).encode("utf-8") + b"\n\n")
        self.wfile.write(b"data: [DONE]\n\n")
        self.wfile.flush()

    def _error(self, exc: ApiError) -> None:
        if self._answered:  # headers are out (a stream broke): all that is left is to hang up
            self.close_connection = True
            return
        if self.command == "POST" and not self._body_read:
            self.close_connection = True  # the unread body would be taken for the next request
        headers = [("www-authenticate", "Bearer")] if exc.status == 401 else []
        try:
            self._json(exc.status, exc.body(), headers)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True
