"""The exported training data (JSONL from `rollout-lab export`), checked line by line so a
broken file is reported as FILE:LINE with what is wrong, before any GPU time is spent."""

import json
from pathlib import Path
from typing import Any, Dict, List

from .errors import SpecError

ROLES = {"system", "user", "assistant", "tool"}


def read_jsonl(path: Path) -> List[Dict[str, Any]]:
    if not path.exists():
        raise SpecError(f"{path}: the training data is missing from the bundle")
    records = []
    with path.open(encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except json.JSONDecodeError as exc:
                raise SpecError(f"{path.name}:{n}: not JSON ({exc.msg} at column {exc.colno})") from None
            if not isinstance(rec, dict):
                raise SpecError(f"{path.name}:{n}: expected a JSON object per line")
            records.append((n, rec))
    return records  # type: ignore[return-value]


def check_messages(messages: Any, where: str) -> None:
    if not isinstance(messages, list) or not messages:
        raise SpecError(f"{where}: messages must be a non-empty list")
    for i, m in enumerate(messages):
        if not isinstance(m, dict) or m.get("role") not in ROLES:
            raise SpecError(f"{where}: messages[{i}].role must be one of {sorted(ROLES)}")
        if not isinstance(m.get("content", ""), str):
            raise SpecError(f"{where}: messages[{i}].content must be text")
        for j, call in enumerate(m.get("tool_calls") or []):
            fn = call.get("function") if isinstance(call, dict) else None
            if not isinstance(fn, dict) or not isinstance(fn.get("name"), str) or not isinstance(fn.get("arguments"), str):
                raise SpecError(f"{where}: messages[{i}].tool_calls[{j}] must be {{type: function, function: {{name, arguments (a JSON string)}}}}")


def read_sft(path: Path) -> List[Dict[str, Any]]:
    out = []
    for n, rec in read_jsonl(path):
        where = f"{path.name}:{n}"
        check_messages(rec.get("messages"), where)
        if not any(m["role"] == "assistant" for m in rec["messages"]):
            raise SpecError(f"{where}: an SFT example needs an assistant turn to learn from")
        out.append({"messages": rec["messages"], "tools": rec.get("tools") or [], "metadata": rec.get("metadata") or {}})
    if not out:
        raise SpecError(f"{path.name}: no examples — export with a lower --min-reward or gather more rollouts")
    return out


def check_rl_record(rec: Dict[str, Any], where: str) -> Dict[str, Any]:
    check_messages(rec.get("messages"), where)
    comp = rec.get("completion")
    if not isinstance(comp, dict) or not isinstance(comp.get("text", ""), str):
        raise SpecError(f"{where}: completion must be {{text, tool_calls}}")
    if not isinstance(rec.get("reward"), (int, float)) or isinstance(rec.get("reward"), bool):
        raise SpecError(f"{where}: reward must be a number")
    if not isinstance(rec.get("group"), str):
        raise SpecError(f"{where}: group must be a string (the task id)")
    for key in ("token_ids", "logprobs"):
        v = rec.get(key)
        if v is not None and (not isinstance(v, list) or not all(isinstance(x, (int, float)) for x in v)):
            raise SpecError(f"{where}: {key} must be a list of numbers or null")
    return rec


def read_rl(path: Path) -> List[Dict[str, Any]]:
    out = [check_rl_record(rec, f"{path.name}:{n}") for n, rec in read_jsonl(path)]
    if not out:
        raise SpecError(f"{path.name}: no transitions — the export found no model calls of the chosen agents")
    return out
