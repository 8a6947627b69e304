"""`python -m rollout_trainer serve --spec job.yaml`: the policy under training behind an
OpenAI-compatible endpoint and a control API (status, metrics, version, load an adapter,
train on a batch of groups), so Rollout Lab can run rollouts against the policy, send it
their groups and get the next version without restarting anything.

The parts live in rollout_trainer.serving; this module starts them, announces where the
server listens (the serving event and out/serving.json) and stops cleanly on SIGTERM or
SIGINT, which is how a serve job ends."""

import argparse
import importlib.util
import json
import os
import signal
import sys
import threading
import traceback
from typing import Any

from .backends import load_policy
from .errors import SpecError
from .events import Emitter, now
from .hparams import ServeParams
from .serving.control import Controller
from .serving.http import App, PolicyHTTPServer
from .serving.local import LocalGenerator
from .serving.protocol import ApiError
from .serving.vllm import VllmEngine, wants_vllm
from .spec import JobSpec

API_KEY_ENV = "ROLLOUT_TRAINER_API_KEY"


class Stopped(BaseException):
    """A stop signal arrived before the server was listening (a BaseException, like
    KeyboardInterrupt, so no broad `except Exception` on the way swallows it)."""


def build_app(spec: JobSpec, emitter: Emitter, api_key: str | None = None) -> App:
    """The policy, the controller and the engine that answers chat requests. The engine
    choice comes first, so `engine: vllm` on a machine without vLLM fails before any
    weights are loaded."""
    hp = spec.params(ServeParams)
    use_vllm = wants_vllm(hp.engine, importlib.util.find_spec("vllm") is not None)
    policy = load_policy(spec, emitter=emitter)
    model = getattr(policy, "model", None)
    if model is not None:
        model.eval()
    policy.kv_cache = hp.kv_cache
    engine = VllmEngine.for_spec(spec) if use_vllm else None
    controller = Controller(spec, policy, emitter, publish=engine.publish if engine else None)
    generator = None if engine else LocalGenerator(policy, hp.max_new_tokens)
    return App(controller, generator=generator, engine=engine, api_key=api_key)


def start_engine(app: App) -> None:
    """vLLM, when it serves: started, and given the spec's adapter as the first version."""
    if not app.engine:
        return
    app.engine.start()
    spec = app.controller.spec
    if spec.model.adapter:
        app.engine.publish(spec.served_name, spec.path(spec.model.adapter))


def listen_address(spec: JobSpec, args: argparse.Namespace) -> tuple[str, int]:
    port = getattr(args, "port", None)
    if spec.serve is None:
        return "127.0.0.1", 8000 if port is None else int(port)
    return spec.serve.host, int(spec.serve.port if port is None else port)


def open_server(app: App, host: str, port: int) -> PolicyHTTPServer:
    """Bound and listening (port 0: a free port), not yet serving."""
    try:
        return PolicyHTTPServer((host, port), app)
    except OSError as exc:
        raise SpecError(f"serve: cannot listen on {host}:{port} ({exc.strerror or exc}) — choose another serve.port (0 picks a free one)") from None


def public_url(host: str, port: int) -> str:
    """The URL to reach the server at: a wildcard address is reached on loopback (remote
    targets forward the port), an IPv6 address goes in brackets."""
    if host in ("", "0.0.0.0"):
        host = "127.0.0.1"
    elif host == "::":
        host = "::1"
    return f"http://[{host}]:{port}/v1" if ":" in host else f"http://{host}:{port}/v1"


def announce(spec: JobSpec, emitter: Emitter, app: App, url: str) -> dict[str, Any]:
    """The serving event, and the same object in out/serving.json (written whole, so a
    launcher polling for the file never reads half of it)."""
    serving = {"event": "serving", "url": url, "model": spec.served_name, "version": app.controller.versions.current}
    tmp = spec.out / f".serving.json.{os.getpid()}.tmp"
    tmp.write_text(json.dumps(serving, indent=2) + "\n", encoding="utf-8")
    os.replace(tmp, spec.out / "serving.json")
    emitter.emit(serving)
    return serving


def _result(spec: JobSpec, app: App | None, started: float, status: str, error: str | None) -> dict[str, Any]:
    result: dict[str, Any] = {"status": status, "job": spec.id, "phase": "serve", "base_model": spec.model.base, "backend": spec.model.backend,
                              "adapter": spec.model.adapter, "merged": None, "steps": 0, "examples": 0, "metrics": {},
                              "started_at": started, "ended_at": now(), "error": error}
    if app is not None:
        c = app.controller
        last = c.emitter.metrics_history[-1] if c.emitter.metrics_history else {}
        result.update(adapter=c.versions.adapter, steps=c.steps, examples=c.examples, version=c.versions.current,
                      versions=list(c.versions.history), metrics={k: v for k, v in last.items() if k != "event"})
    return result


def _fail(spec: JobSpec, emitter: Emitter, app: App | None, started: float, message: str, code: int) -> int:
    print(f"rollout_trainer: {message}", file=sys.stderr)
    emitter.write_result(_result(spec, app, started, "failed", message))
    emitter.emit({"event": "error", "message": message})
    return code


def _install_stop_handlers(holder: dict[str, Any]) -> None:
    """SIGTERM/SIGINT stop the server cleanly: before it listens, by unwinding the start-up;
    while it serves, by shutting the server down (from another thread: shutdown() waits for
    the serving loop, which runs in this one)."""

    def on_signal(signum: int, _frame: Any) -> None:
        httpd = holder.get("httpd")
        if httpd is None:
            raise Stopped(signal.Signals(signum).name)
        threading.Thread(target=httpd.shutdown, name="serve-shutdown", daemon=True).start()

    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, on_signal)
        signal.signal(signal.SIGINT, on_signal)


def main(spec: JobSpec, args: argparse.Namespace) -> int:
    emitter = Emitter(spec.out)
    started = now()
    holder: dict[str, Any] = {}
    _install_stop_handlers(holder)
    app: App | None = None
    try:
        app = build_app(spec, emitter, os.environ.get(API_KEY_ENV) or None)
        policy = app.controller.policy
        emitter.emit({"event": "start", "job": spec.id, "phase": "serve", "backend": policy.backend, "device": str(policy.device), "base_model": policy.base_model,
                      "engine": "vllm" if app.engine else "local", "examples": 0, "steps": 0, "time": now()})
        start_engine(app)
        host, port = listen_address(spec, args)
        httpd = open_server(app, host, port)
        holder["httpd"] = httpd
    except Stopped:
        if app and app.engine:
            app.engine.stop()
        return _finish(spec, emitter, app, started)
    except (SpecError, ApiError) as exc:
        if app and app.engine:
            app.engine.stop()
        return _fail(spec, emitter, app, started, str(exc), 2 if isinstance(exc, SpecError) else 1)
    except Exception as exc:  # noqa: BLE001 — a server that cannot start says why, in result.json too
        traceback.print_exc()
        if app and app.engine:
            app.engine.stop()
        return _fail(spec, emitter, app, started, f"{type(exc).__name__}: {exc}", 1)
    announce(spec, emitter, app, public_url(host, httpd.server_address[1]))
    try:
        httpd.serve_forever(poll_interval=0.5)
    finally:
        httpd.server_close()
        if app.engine:
            app.engine.stop()
    return _finish(spec, emitter, app, started)


def _finish(spec: JobSpec, emitter: Emitter, app: App | None, started: float) -> int:
    """A serve job ends by being stopped: that is success, with what it trained."""
    result = _result(spec, app, started, "succeeded", None)
    emitter.write_result(result)
    emitter.emit({"event": "done", "result": result})
    return 0

