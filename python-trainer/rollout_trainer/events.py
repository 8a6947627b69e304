"""Events: one JSON object per line on standard output, prefixed `@rollout-trainer `,
among the ordinary log lines, and the same objects in out/events.jsonl.

Rollout Lab streams the job's log (over SSH, from SkyPilot or Kubernetes) and draws its
curves from these lines, so they must be complete lines, flushed at once, and numbers
only where the contract says numbers. The file copy lets a finished job be read back
without its log."""

import json
import math
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any

PREFIX = "@rollout-trainer "


def now() -> float:
    """Event and result times: seconds since the epoch (what JavaScript's Date takes after * 1000)."""
    return time.time()


def _json_safe(v: Any) -> Any:
    """v with NaN and infinities as null: they are not JSON, and one must not cost a job its result."""
    if isinstance(v, float) and not math.isfinite(v):
        return None
    if isinstance(v, dict):
        return {k: _json_safe(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_json_safe(x) for x in v]
    return v


def _finite_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(float(v))


class Emitter:
    """Writes events and result.json for one job. Thread-safe: serve emits from its
    request threads while a training update runs."""

    def __init__(self, out_dir: Path) -> None:
        self.out_dir = Path(out_dir)
        self.out_dir.mkdir(parents=True, exist_ok=True)
        self.events_file = self.out_dir / "events.jsonl"
        self._lock = threading.Lock()
        self.metrics_history: list[dict[str, Any]] = []

    def emit(self, event: dict[str, Any]) -> dict[str, Any]:
        line = json.dumps(_json_safe(event), separators=(",", ":"), default=str, allow_nan=False)
        with self._lock:
            sys.stdout.write(PREFIX + line + "\n")
            sys.stdout.flush()
            with self.events_file.open("a", encoding="utf-8") as f:
                f.write(line + "\n")
        return event

    def log(self, text: str) -> None:
        """An ordinary log line (not an event), kept in order with the events."""
        with self._lock:
            sys.stdout.write(text + "\n")
            sys.stdout.flush()

    def metrics(self, step: int, **numbers: Any) -> dict[str, Any]:
        """A metrics event; values that are not finite numbers are left out (a NaN would
        make the line invalid JSON, and the contract says numbers only)."""
        event: dict[str, Any] = {"event": "metrics", "step": int(step)}
        for k, v in numbers.items():
            if _finite_number(v):
                event[k] = v if isinstance(v, int) else float(v)
        with self._lock:
            self.metrics_history.append(event)
        return self.emit(event)

    def checkpoint(self, step: int, path: str) -> dict[str, Any]:
        return self.emit({"event": "checkpoint", "step": int(step), "path": path})

    def write_result(self, result: dict[str, Any]) -> Path:
        """out/result.json, replaced atomically: a reader sees the old file or the new one, never half."""
        target = self.out_dir / "result.json"
        tmp = self.out_dir / f".result.json.{os.getpid()}.{threading.get_ident()}.tmp"
        tmp.write_text(json.dumps(_json_safe(result), indent=2, default=str, allow_nan=False) + "\n", encoding="utf-8")
        os.replace(tmp, target)
        return target

    def last_metrics(self) -> dict[str, Any] | None:
        with self._lock:
            return dict(self.metrics_history[-1]) if self.metrics_history else None
