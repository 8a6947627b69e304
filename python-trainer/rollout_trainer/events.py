"""Events the job prints among its log lines (prefixed, one JSON object each) and keeps in
out/events.jsonl: Rollout Lab streams the log and draws its curves from them."""

import json
import math
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any, Dict, List

PREFIX = "@rollout-trainer "


class Emitter:
    def __init__(self, out_dir: Path):
        self.out_dir = Path(out_dir)
        self.out_dir.mkdir(parents=True, exist_ok=True)
        self._file = self.out_dir / "events.jsonl"
        self._lock = threading.Lock()
        self.metrics_history: List[Dict[str, Any]] = []

    def emit(self, event: Dict[str, Any]) -> None:
        line = json.dumps(event, separators=(",", ":"), default=str)
        with self._lock:
            sys.stdout.write(PREFIX + line + "\n")
            sys.stdout.flush()
            with self._file.open("a", encoding="utf-8") as f:
                f.write(line + "\n")

    def log(self, text: str) -> None:
        with self._lock:
            sys.stdout.write(text + "\n")
            sys.stdout.flush()

    def metrics(self, step: int, **values: float) -> Dict[str, Any]:
        event: Dict[str, Any] = {"event": "metrics", "step": step}
        for k, v in values.items():
            if v is not None and isinstance(v, (int, float)) and math.isfinite(float(v)):
                event[k] = float(v) if isinstance(v, float) else v
        self.metrics_history.append(event)
        self.emit(event)
        return event

    def write_result(self, result: Dict[str, Any]) -> None:
        """result.json, replaced atomically: a reader sees the old one or the new one."""
        tmp = self.out_dir / f".result.json.{os.getpid()}.tmp"
        tmp.write_text(json.dumps(result, indent=2, default=str) + "\n", encoding="utf-8")
        os.replace(tmp, self.out_dir / "result.json")


def now() -> float:
    return time.time()
