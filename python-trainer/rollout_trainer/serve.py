"""The policy server: an OpenAI-compatible chat endpoint for the policy under training and
a control API (status, metrics, version, load an adapter, train on a batch of groups), so
Rollout Lab can run rollouts against the policy, send it their groups and get a new version.

With vLLM installed (engine auto or vllm, transformers backend) the chat endpoints are
vLLM's own and new adapters are hot-loaded into it; otherwise this process answers."""

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.request
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

from .backends import load_policy
from .data import check_rl_record
from .errors import SpecError
from .events import Emitter, now

TOOL_CALL = re.compile(r"<tool_call>\s*(\{.*?\})\s*</tool_call>", re.S)


class HttpError(Exception):
    def __init__(self, status: int, message: str, kind: str = "invalid_request_error") -> None:
        super().__init__(message)
        self.status, self.kind = status, kind


def parse_tool_calls(text: str) -> Tuple[str, List[Dict[str, Any]]]:
    """Hermes-style `<tool_call>{"name", "arguments"}</tool_call>` blocks as OpenAI tool calls;
    a block that is not such JSON stays in the text."""
    calls: List[Dict[str, Any]] = []

    def take(m: "re.Match[str]") -> str:
        try:
            obj = json.loads(m.group(1))
        except json.JSONDecodeError:
            return m.group(0)
        if not isinstance(obj, dict) or not isinstance(obj.get("name"), str):
            return m.group(0)
        args = obj.get("arguments", {})
        calls.append({"id": f"call_{len(calls)}", "type": "function", "function": {"name": obj["name"], "arguments": args if isinstance(args, str) else json.dumps(args)}})
        return ""

    rest = TOOL_CALL.sub(take, text)
    return (rest.strip() if calls else rest), calls


def vllm_argv(base: str, name: str, port: int, max_lora_rank: int, adapter: Optional[str]) -> List[str]:
    argv = [sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--model", base, "--served-model-name", base,
            "--host", "127.0.0.1", "--port", str(port), "--enable-lora", "--max-lora-rank", str(max_lora_rank)]
    if adapter:
        argv += ["--lora-modules", f"{name}={adapter}"]
    return argv


class Server:
    def __init__(self, spec: Any, emitter: Emitter) -> None:
        self.spec, self.emitter = spec, emitter
        self.hp = dict(spec.hyperparameters)
        self.policy = load_policy(spec)
        self.name = spec.served_name
        self.current = self.name if not spec.model.adapter else self.name
        self.versions: List[str] = []
        self.adapter: Optional[str] = spec.model.adapter
        self.state = "idle"
        self.steps = 0
        self.started = time.time()
        self.api_key = os.environ.get("ROLLOUT_TRAINER_API_KEY") or None
        self.vllm: Optional[subprocess.Popen] = None
        self.vllm_url: Optional[str] = None

    # -- chat -------------------------------------------------------------------------------
    def chat(self, body: Dict[str, Any]) -> Dict[str, Any]:
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages:
            raise HttpError(400, "messages must be a non-empty list")
        model = body.get("model")
        if model not in (self.name, self.current):
            if model in self.versions:
                raise HttpError(404, f"version {model} is no longer served; the current one is {self.current}", "model_not_found")
            raise HttpError(404, f"model {model!r} is not served here; ask for {self.name!r}", "model_not_found")
        if int(body.get("n") or 1) != 1:
            raise HttpError(400, "n must be 1")
        if self.vllm_url:
            # vLLM answers; the served name maps to the newest LoRA (or the base model before any).
            target = self.current if self.current != self.name else self.policy.base_model
            return {**post_json(f"{self.vllm_url}/v1/chat/completions", {**body, "model": target, "stream": False}), "model": self.current}
        max_new = int(body.get("max_completion_tokens") or body.get("max_tokens") or self.hp["max_new_tokens"])
        temperature = float(body.get("temperature", 1.0) if body.get("temperature") is not None else 1.0)
        top_p = float(body.get("top_p") or 1.0)
        tok = self.policy.tokenizer
        msgs = [{k: v for k, v in m.items() if k in ("role", "content", "tool_calls", "tool_call_id", "name")} for m in messages]
        for m in msgs:
            if not isinstance(m.get("content"), str):
                m["content"] = "".join(p.get("text", "") for p in m.get("content") or [] if isinstance(p, dict))
        with self.policy.lock:
            prompt = tok.encode(tok.render(msgs, body.get("tools") or None, add_generation_prompt=True))
            limit = self.policy.max_positions() if hasattr(self.policy, "max_positions") else None
            if limit and len(prompt) >= limit:
                prompt = prompt[-(limit - 1):]
            if limit:
                max_new = max(1, min(max_new, limit - len(prompt)))
            stops = body.get("stop") or []
            ids, lps = self.policy.generate(prompt, max_new, temperature, top_p, body.get("seed"))
        finish = "stop" if ids and ids[-1] == tok.eos_token_id else "length"
        text = tok.decode([i for i in ids if i != tok.eos_token_id])
        for s in [stops] if isinstance(stops, str) else stops:
            if s and s in text:
                text, finish = text[: text.index(s)], "stop"
        content, calls = parse_tool_calls(text)
        message: Dict[str, Any] = {"role": "assistant", "content": content if content or not calls else None}
        if calls:
            message["tool_calls"] = calls
            finish = "tool_calls"
        choice: Dict[str, Any] = {"index": 0, "message": message, "finish_reason": finish, "logprobs": None}
        if body.get("logprobs"):
            choice["logprobs"] = {"content": [{"token": tok.token_text(i), "logprob": lp, "bytes": list(tok.token_text(i).encode("utf-8")), "top_logprobs": []} for i, lp in zip(ids, lps)], "refusal": None}
        if body.get("return_token_ids"):
            choice["token_ids"] = ids
        out = {"id": f"chatcmpl-{uuid.uuid4().hex[:24]}", "object": "chat.completion", "created": int(time.time()), "model": self.current,
               "choices": [choice], "usage": {"prompt_tokens": len(prompt), "completion_tokens": len(ids), "total_tokens": len(prompt) + len(ids)}}
        if body.get("return_token_ids"):
            out["prompt_token_ids"] = prompt
        return out

    # -- control ----------------------------------------------------------------------------
    def status(self) -> Dict[str, Any]:
        return {"state": self.state, "version": self.current, "base_model": self.policy.base_model, "backend": self.policy.backend,
                "device": str(self.policy.device), "steps": self.steps, "uptime_s": time.time() - self.started}

    def load(self, body: Dict[str, Any]) -> Dict[str, Any]:
        adapter = body.get("adapter")
        if not isinstance(adapter, str) or not adapter:
            raise HttpError(400, "adapter: the adapter folder to serve (relative to the bundle, or absolute on this machine)")
        path = Path(adapter) if os.path.isabs(adapter) else self.spec.bundle_dir / adapter
        if not path.is_dir():
            raise HttpError(400, f"adapter: no folder {path}")
        version = str(body.get("version") or f"{self.name}-v{len(self.versions) + 1}")
        try:
            self.policy.load_adapter(path, version)
        except SpecError as exc:
            raise HttpError(400, str(exc)) from None
        self._switch(version, str(path))
        return {"version": version, "adapter": str(path)}

    def train(self, body: Dict[str, Any]) -> Dict[str, Any]:
        from .grpo import grpo_update
        from .hparams import resolve_hparams

        records = body.get("records")
        if not isinstance(records, list) or not records:
            raise HttpError(400, "records: a non-empty list of RL records (rollout-lab export --format rl)")
        for i, rec in enumerate(records):
            if not isinstance(rec, dict):
                raise HttpError(400, f"records[{i}]: expected an object")
            try:
                check_rl_record(rec, f"records[{i}]")
            except SpecError as exc:
                raise HttpError(400, str(exc)) from None
        try:
            hp = resolve_hparams("serve", {**{k: v for k, v in self.hp.items()}, **(body.get("hyperparameters") or {})})
        except SpecError as exc:
            raise HttpError(400, str(exc)) from None
        with self.policy.lock:
            self.state = "training"
            try:
                out = grpo_update(self.policy, records, hp, self.emitter, step_offset=self.steps)
            except SpecError as exc:
                raise HttpError(400, str(exc)) from None
            finally:
                self.state = "idle"
            self.steps += out["steps"]
            version = f"{self.name}-v{len(self.versions) + 1}"
            target = self.spec.out / "versions" / version
            self.policy.save_adapter(target)
            self.policy.version = version
            self._switch(version, str(target))
        return {"version": version, "adapter": f"{self.spec.output_dir}/versions/{version}", "metrics": {**out["metrics"], "steps": out["steps"], "records": out["records"], "useful": out["useful"]}}

    def _switch(self, version: str, adapter: str) -> None:
        if self.vllm_url:
            post_json(f"{self.vllm_url}/v1/load_lora_adapter", {"lora_name": version, "lora_path": adapter})
        self.versions.append(self.current) if self.current != self.name else None
        self.current = version
        self.adapter = adapter
        self.emitter.emit({"event": "version", "version": version, "adapter": adapter})


def post_json(url: str, body: Dict[str, Any]) -> Dict[str, Any]:
    req = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"content-type": "application/json"}, method="POST")
    with urllib.request.urlopen(req, timeout=600) as res:  # noqa: S310 — a loopback vLLM
        text = res.read().decode() or "{}"
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return {"text": text}


def start_vllm(server: Server) -> None:
    """vLLM with LoRA hot-swap, when the engine setting and the installation allow it."""
    engine = server.hp["engine"]
    if engine == "transformers" or server.policy.backend != "transformers":
        return
    try:
        import vllm  # noqa: F401
    except ImportError:
        if engine == "vllm":
            raise SpecError("hyperparameters.engine is vllm, but vllm is not installed here — pip install vllm, or use engine auto") from None
        return
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    adapter = str(server.spec.path(server.spec.model.adapter)) if server.spec.model.adapter else None
    env = {**os.environ, "VLLM_ALLOW_RUNTIME_LORA_UPDATING": "True"}
    server.vllm = subprocess.Popen(vllm_argv(server.policy.base_model, server.name, port, int(server.hp["lora_r"]), adapter), env=env)
    url = f"http://127.0.0.1:{port}"
    for _ in range(600):
        if server.vllm.poll() is not None:
            raise SpecError(f"vLLM exited with status {server.vllm.returncode} before it served — see the log above")
        try:
            urllib.request.urlopen(f"{url}/v1/models", timeout=2).read()  # noqa: S310 — loopback
            server.vllm_url = url
            return
        except OSError:
            time.sleep(1)
    raise SpecError("vLLM did not answer within 10 minutes")


def make_handler(server: Server) -> type:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, fmt: str, *args: Any) -> None:  # quiet: the job log carries events, not access lines
            return

        def _send(self, status: int, body: Dict[str, Any]) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _error(self, exc: HttpError) -> None:
            self._send(exc.status, {"error": {"message": str(exc), "type": exc.kind, "code": exc.status}})

        def _authorised(self) -> bool:
            if server.api_key and self.headers.get("authorization") != f"Bearer {server.api_key}":
                self._error(HttpError(401, "missing or wrong bearer token", "authentication_error"))
                return False
            return True

        def _body(self) -> Dict[str, Any]:
            n = int(self.headers.get("content-length") or 0)
            try:
                body = json.loads(self.rfile.read(n) or b"{}")
            except json.JSONDecodeError as exc:
                raise HttpError(400, f"the body is not JSON: {exc.msg}") from None
            if not isinstance(body, dict):
                raise HttpError(400, "the body must be a JSON object")
            return body

        def do_GET(self) -> None:  # noqa: N802
            if not self._authorised():
                return
            path = self.path.split("?")[0].rstrip("/")
            if path == "/v1/models":
                names = [server.name, *([server.current] if server.current != server.name else [])]
                self._send(200, {"object": "list", "data": [{"id": n, "object": "model", "owned_by": "rollout-lab"} for n in names]})
            elif path == "/control/status":
                self._send(200, server.status())
            elif path == "/control/metrics":
                self._send(200, {"metrics": server.emitter.metrics_history})
            elif path == "/control/version":
                self._send(200, {"version": server.current, "adapter": server.adapter})
            else:
                self._error(HttpError(404, f"no such endpoint {path}", "not_found"))

        def do_POST(self) -> None:  # noqa: N802
            if not self._authorised():
                return
            path = self.path.split("?")[0].rstrip("/")
            try:
                body = self._body()
                if path == "/v1/chat/completions":
                    out = server.chat(body)
                    if body.get("stream"):
                        return self._stream(out)
                    self._send(200, out)
                elif path == "/control/load":
                    self._send(200, server.load(body))
                elif path == "/control/train":
                    self._send(200, server.train(body))
                else:
                    raise HttpError(404, f"no such endpoint {path}", "not_found")
            except HttpError as exc:
                self._error(exc)
            except Exception as exc:  # noqa: BLE001 — a failing request must answer, not hang the client
                self._error(HttpError(500, f"{type(exc).__name__}: {exc}", "server_error"))

        def _stream(self, out: Dict[str, Any]) -> None:
            """The finished completion as SSE chunks: role, content, tool calls, finish, [DONE]."""
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.send_header("cache-control", "no-cache")
            self.send_header("connection", "close")
            self.end_headers()
            choice = out["choices"][0]
            msg = choice["message"]
            head = {k: out[k] for k in ("id", "created", "model")}
            deltas = [{"role": "assistant", "content": ""}]
            if msg.get("content"):
                deltas.append({"content": msg["content"]})
            if msg.get("tool_calls"):
                deltas.append({"tool_calls": [{"index": i, **c} for i, c in enumerate(msg["tool_calls"])]})
            for d in deltas:
                self._event({**head, "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": d, "finish_reason": None}]})
            self._event({**head, "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {}, "finish_reason": choice["finish_reason"]}], "usage": out["usage"]})
            self.wfile.write(b"data: [DONE]\n\n")
            self.wfile.flush()
            self.close_connection = True

        def _event(self, obj: Dict[str, Any]) -> None:
            self.wfile.write(b"data: " + json.dumps(obj).encode() + b"\n\n")

    return Handler


def main(spec: Any, args: Any) -> int:
    emitter = Emitter(spec.out)
    started = now()
    try:
        server = Server(spec, emitter)
    except SpecError as exc:
        print(f"rollout_trainer: {exc}", file=sys.stderr)
        emitter.write_result({"status": "failed", "job": spec.id, "phase": "serve", "error": str(exc), "started_at": started, "ended_at": now()})
        return 2
    try:
        start_vllm(server)
    except SpecError as exc:
        print(f"rollout_trainer: {exc}", file=sys.stderr)
        emitter.write_result({"status": "failed", "job": spec.id, "phase": "serve", "error": str(exc), "started_at": started, "ended_at": now()})
        return 2
    host = spec.serve.host if spec.serve else "127.0.0.1"
    port = args.port if getattr(args, "port", None) is not None else (spec.serve.port if spec.serve else 8000)
    httpd = ThreadingHTTPServer((host, port), make_handler(server))
    httpd.daemon_threads = True
    bound = httpd.server_address[1]
    shown_host = "127.0.0.1" if host in ("0.0.0.0", "") else host
    url = f"http://{shown_host}:{bound}/v1"
    serving = {"event": "serving", "url": url, "model": server.name, "version": server.current, **server.policy.describe()}
    (spec.out / "serving.json").write_text(json.dumps(serving, indent=2), encoding="utf-8")
    emitter.emit(serving)
    stop = threading.Event()

    def on_signal(signum: int, _frame: Any) -> None:
        stop.set()
        threading.Thread(target=httpd.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    try:
        httpd.serve_forever(poll_interval=0.2)
    finally:
        httpd.server_close()
        if server.vllm:
            server.vllm.terminate()
    result = {"status": "succeeded", "job": spec.id, "phase": "serve", "base_model": spec.model.base, "backend": spec.model.backend, "error": None,
              "adapter": server.adapter, "version": server.current, "steps": server.steps, "started_at": started, "ended_at": now(),
              "metrics": {k: v for k, v in (emitter.metrics_history[-1] if emitter.metrics_history else {}).items() if k != "event"}}
    emitter.write_result(result)
    emitter.emit({"event": "done", "result": result})
    return 0
