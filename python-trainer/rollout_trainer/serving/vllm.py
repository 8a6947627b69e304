"""The vLLM engine: with vLLM installed (engine auto or vllm) the
chat endpoints are vLLM's own, reached through this server, which keeps the served names,
the control API and the bearer check. Updates still train the in-process transformers
policy; each new adapter is saved and hot-loaded into vLLM with /v1/load_lora_adapter
(which VLLM_ALLOW_RUNTIME_LORA_UPDATING allows), and the served name moves to it.

Nothing here runs without vLLM and a GPU; the argument list is a pure function so its
shape is tested anyway."""

import json
import os
import secrets
import shlex
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..errors import SpecError
from ..spec import JobSpec
from .protocol import ApiError, asks_for_format, bad

# The values vLLM accepts for --max-lora-rank.
LORA_RANKS = (8, 16, 32, 64, 128, 256, 320, 512)
# vLLM shares the GPU with the in-process policy that trains; by default it would take 90%.
GPU_MEMORY_UTILIZATION = 0.45
EXTRA_ARGS_ENV = "ROLLOUT_TRAINER_VLLM_ARGS"


def lora_rank_for(r: int) -> int:
    """The smallest rank vLLM accepts that holds a rank-r adapter."""
    return next((k for k in LORA_RANKS if k >= r), int(r))


def wants_vllm(engine: str, importable: bool) -> bool:
    """Whether to serve through vLLM; engine vllm where it cannot work is a spec error."""
    if engine == "transformers":
        return False
    if engine == "vllm":
        if not importable:
            raise SpecError("hyperparameters.engine: vllm, but vllm is not installed on this machine; pip install vllm, or use engine auto")
        return True
    return importable


def vllm_argv(base: str, served_name: str, port: int, lora_r: int, executable: str = "vllm",
              gpu_memory_utilization: float = GPU_MEMORY_UTILIZATION, extra: Sequence[str] = ()) -> list[str]:
    """The `vllm serve` command as an argument array (no shell ever sees the model name)."""
    return [executable, "serve", base, "--enable-lora", "--max-lora-rank", str(lora_rank_for(lora_r)),
            "--port", str(port), "--host", "127.0.0.1", "--served-model-name", served_name,
            "--gpu-memory-utilization", str(gpu_memory_utilization), *extra]


def vllm_executable() -> str:
    """The `vllm` command of this Python environment, else the one on PATH."""
    beside = Path(sys.executable).with_name("vllm")
    found = str(beside) if beside.exists() else shutil.which("vllm")
    if not found:
        raise SpecError("vllm is importable but its `vllm` command is neither beside this Python nor on PATH; reinstall vllm, or use engine transformers")
    return found


def model_source(spec: JobSpec) -> str:
    """What `vllm serve` loads: the bundle's directory where model.base names one (vLLM
    runs with the bundle as its directory too, but a full path leaves no doubt), else the
    Hugging Face id or absolute path as given."""
    base = spec.model.base
    if not os.path.isabs(base):
        try:
            local = spec.path(base)
        except SpecError:
            return base
        if local.is_dir():
            return str(local)
    return base


def check_forwarded(body: dict[str, Any]) -> None:
    """vLLM answers top_logprobs and response_format itself (the latter with guided
    decoding). One combination is refused: vLLM applies the grammar's mask to the logits
    before it computes logprobs, so with a format the logprobs it reports are those of the
    constrained distribution, not the policy's own that a GRPO record's ratio needs."""
    logprobs = body.get("logprobs")
    if asks_for_format(body) and logprobs is not None and logprobs is not False:
        raise bad("response_format", "not with logprobs on this server: constrained decoding changes the logprobs vLLM reports, and training needs the policy's own; "
                                     "leave response_format out and read the JSON from the completion's text, or ask without logprobs")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class VllmEngine:
    """A `vllm serve` child process and the LoRA adapters loaded into it."""

    def __init__(self, argv: list[str], port: int, served_name: str, key: str) -> None:
        self.argv = argv
        self.port = port
        self.url = f"http://127.0.0.1:{port}"
        self.served_name = served_name
        self._key = key
        self.process: subprocess.Popen[bytes] | None = None
        self.lora: str | None = None

    @classmethod
    def for_spec(cls, spec: JobSpec) -> "VllmEngine":
        """The engine a serve job starts: `vllm serve` of the spec's base model on a free
        loopback port, with a fresh key (vLLM reads VLLM_API_KEY) so other local users
        cannot reach it around this server's bearer check."""
        port = free_port()
        extra = shlex.split(os.environ.get(EXTRA_ARGS_ENV, ""))
        argv = vllm_argv(model_source(spec), spec.served_name, port, spec.hyperparameters.lora_r, vllm_executable(), extra=extra)
        return cls(argv, port, spec.served_name, secrets.token_urlsafe(24))

    def start(self, timeout_s: float = 1800.0) -> None:
        env = {**os.environ, "VLLM_ALLOW_RUNTIME_LORA_UPDATING": "True", "VLLM_API_KEY": self._key}
        self.process = subprocess.Popen(self.argv, env=env)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"vLLM exited with status {self.process.returncode} before serving (its log is above)")
            try:
                with urllib.request.urlopen(self._request("/v1/models"), timeout=5):  # noqa: S310 — loopback
                    return
            except (urllib.error.URLError, OSError):
                time.sleep(2)
        raise RuntimeError(f"vLLM did not answer on {self.url} within {int(timeout_s)} s")

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()

    def _request(self, path: str, body: dict[str, Any] | None = None) -> urllib.request.Request:
        data = json.dumps(body).encode() if body is not None else None
        headers = {"authorization": f"Bearer {self._key}", **({"content-type": "application/json"} if data else {})}
        return urllib.request.Request(self.url + path, data=data, headers=headers, method="POST" if data else "GET")

    def _post(self, path: str, body: dict[str, Any]) -> None:
        try:
            with urllib.request.urlopen(self._request(path, body), timeout=600) as res:  # noqa: S310 — loopback
                res.read()
        except urllib.error.HTTPError as exc:
            raise ApiError(502, f"vLLM refused {path}: HTTP {exc.code} {exc.read().decode(errors='replace')[:500]}", "engine_error") from None
        except urllib.error.URLError as exc:
            raise ApiError(502, f"vLLM did not answer {path}: {exc.reason}", "engine_error") from None

    def publish(self, version: str, path: Path) -> None:
        """Hot-load the adapter as LoRA `version` and serve it from now on; the previous one
        is unloaded (vLLM keeps few adapters on the GPU)."""
        name = version if version != self.served_name else f"{self.served_name}-initial"
        previous = self.lora
        if previous == name:
            self._post("/v1/unload_lora_adapter", {"lora_name": name})
            previous = None
        self._post("/v1/load_lora_adapter", {"lora_name": name, "lora_path": str(Path(path).resolve())})
        self.lora = name
        if previous:
            try:
                self._post("/v1/unload_lora_adapter", {"lora_name": previous})
            except ApiError:
                pass  # an adapter left loaded costs memory, not correctness

    def target(self) -> str:
        """vLLM's name for what the served name means now: the newest LoRA, or the base."""
        return self.lora or self.served_name

    def forward(self, path: str, body: dict[str, Any]) -> tuple[int, dict[str, str], Any]:
        """(status, headers, readable body) of vLLM's answer to a proxied request, the body
        still unread so a stream can be passed on as it comes."""
        check_forwarded(body)
        try:
            res = urllib.request.urlopen(self._request(path, {**body, "model": self.target()}), timeout=3600)  # noqa: S310 — loopback
        except urllib.error.HTTPError as exc:
            return exc.code, dict(exc.headers.items()), exc
        except urllib.error.URLError as exc:
            raise ApiError(502, f"vLLM did not answer {path}: {exc.reason}", "engine_error") from None
        return res.getcode(), dict(res.headers.items()), res
