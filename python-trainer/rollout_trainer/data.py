"""The exported training data (JSONL from `rollout-lab export`), checked line by line.

A broken line is reported as FILE:LINE with what is wrong before any model is loaded,
because the alternative is a chat template failing (or silently rendering "None") an
hour into a GPU job. The checks are the shapes chat templates rely on: known roles,
text content, OpenAI-style tool calls whose arguments are a JSON object, and tool
results that follow the assistant turn that called them."""

import json
import math
from pathlib import Path
from typing import Any

from .errors import DataError

__all__ = ["DataError", "read_jsonl", "read_sft", "read_rl", "check_messages", "check_tools", "tool_definition", "check_rl_record", "check_reward_origin", "tool_call_arguments", "tool_call_json"]

ROLES = ("system", "user", "assistant", "tool")
TOOL_CALL_SHAPE = '{"type": "function", "function": {"name": NAME, "arguments": JSON-OBJECT-STRING}}'


def read_jsonl(path: Path) -> list[tuple[int, dict[str, Any]]]:
    """(line number, object) for every non-blank line; DataError for a line that is not a JSON object."""
    path = Path(path)
    if not path.is_file():
        raise DataError(f"{path}: the training data is not in the bundle — export it again (rollout-lab export) or fix data.train")
    out = []
    with path.open(encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except json.JSONDecodeError as exc:
                raise DataError(f"{path.name}:{n}: not valid JSON ({exc.msg} at column {exc.colno})") from None
            if not isinstance(rec, dict):
                raise DataError(f"{path.name}:{n}: expected one JSON object per line, got {type(rec).__name__}")
            out.append((n, rec))
    return out


def _text(content: Any, where: str) -> str | None:
    """Message content as text: a string, null, or OpenAI's list of text parts (joined)."""
    if content is None or isinstance(content, str):
        return content
    if isinstance(content, list) and all(isinstance(p, dict) and p.get("type") == "text" and isinstance(p.get("text"), str) for p in content):
        return "".join(p["text"] for p in content)
    raise DataError(f"{where}: content must be text (a string, null, or a list of {{type: text, text}} parts)")


def tool_call_arguments(args: Any) -> dict[str, Any]:
    """A tool call's arguments as a dict: OpenAI sends a JSON string, templates want the object."""
    if isinstance(args, dict):
        return args
    parsed = json.loads(args) if isinstance(args, str) and args.strip() else {}
    if not isinstance(parsed, dict):
        raise ValueError("arguments must be a JSON object")
    return parsed


def tool_call_json(call: dict[str, Any]) -> str:
    """A tool call (OpenAI's {function: {name, arguments}}, or the function itself) as the
    Hermes-style JSON object templates write inside <tool_call>: arguments as an object where
    they parse as one, as written otherwise."""
    fn = call.get("function", call)
    try:
        args: Any = tool_call_arguments(fn.get("arguments"))
    except (ValueError, TypeError):
        args = fn.get("arguments")
    return json.dumps({"name": fn.get("name"), "arguments": args}, ensure_ascii=False)


def _check_tool_calls(calls: Any, where: str) -> list[dict[str, Any]]:
    if not isinstance(calls, list):
        raise DataError(f"{where}.tool_calls: must be a list of {TOOL_CALL_SHAPE}")
    out = []
    for j, call in enumerate(calls):
        w = f"{where}.tool_calls[{j}]"
        fn = call.get("function") if isinstance(call, dict) else None
        if not isinstance(fn, dict) or not isinstance(fn.get("name"), str) or not fn["name"]:
            raise DataError(f"{w}: must be {TOOL_CALL_SHAPE}")
        args = fn.get("arguments", "{}")
        try:
            tool_call_arguments(args)
        except (ValueError, TypeError) as exc:
            raise DataError(f"{w}.function.arguments: {args!r} is not a JSON object ({exc})") from None
        out.append({**call, "type": call.get("type", "function"), "function": {"name": fn["name"], "arguments": args if isinstance(args, str) else json.dumps(args)}})
    return out


def check_messages(messages: Any, where: str) -> list[dict[str, Any]]:
    """The messages, normalised (content as text); DataError naming the message otherwise."""
    if not isinstance(messages, list) or not messages:
        raise DataError(f"{where}: messages must be a non-empty list of {{role, content}}")
    out: list[dict[str, Any]] = []
    for i, m in enumerate(messages):
        w = f"{where}: messages[{i}]"
        if not isinstance(m, dict) or m.get("role") not in ROLES:
            got = m.get("role") if isinstance(m, dict) else m
            raise DataError(f"{w}.role must be one of {', '.join(ROLES)} (got {got!r})")
        msg = {**m, "content": _text(m.get("content"), w)}
        if m.get("tool_calls"):
            if m["role"] != "assistant":
                raise DataError(f"{w}: only assistant messages carry tool_calls")
            msg["tool_calls"] = _check_tool_calls(m["tool_calls"], w)
        elif "tool_calls" in msg:
            del msg["tool_calls"]
        if m["role"] == "tool":
            prev = out[-1] if out else None
            if prev is None or not (prev["role"] == "tool" or (prev["role"] == "assistant" and prev.get("tool_calls"))):
                raise DataError(f"{w}: a tool result must follow the assistant message that called the tool (or another tool result)")
            if msg["content"] is None:
                raise DataError(f"{w}: a tool result needs content")
        if m["role"] in ("system", "user") and msg["content"] is None:
            raise DataError(f"{w}: a {m['role']} message needs content")
        out.append(msg)
    return out


TOOL_SHAPE = "{type: function, function: {name, description, parameters}}"


def tool_definition(tool: Any) -> dict[str, Any] | None:
    """A tool as the chat template is given it, the same for training examples and for
    requests to the server, so a model is served the prompt it was trained on: type,
    then name, description and parameters, without the JSON Schema dialect marker
    ("$schema", which zod-made schemas carry in requests and the lab's export leaves out).
    None when it is not a function tool."""
    fn = tool.get("function") if isinstance(tool, dict) else None
    if not isinstance(fn, dict) or not isinstance(fn.get("name"), str):
        return None
    params = fn.get("parameters")
    params = {k: v for k, v in params.items() if k != "$schema"} if isinstance(params, dict) else {"type": "object", "properties": {}}
    description = fn.get("description")
    return {"type": "function", "function": {"name": fn["name"], "description": description if isinstance(description, str) else "", "parameters": params}}


def check_tools(tools: Any, where: str) -> list[dict[str, Any]]:
    if tools is None:
        return []
    if not isinstance(tools, list):
        raise DataError(f"{where}: tools must be a list of {TOOL_SHAPE}")
    out = []
    for j, t in enumerate(tools):
        d = tool_definition(t)
        if d is None:
            raise DataError(f"{where}: tools[{j}] must be {TOOL_SHAPE}")
        out.append(d)
    return out


REWARD_SOURCES = ("scored", "no_output", "penalty")


def check_reward_origin(rec: dict[str, Any], where: str) -> None:
    """`reward_source` and `penalty` (rows from rollout-lab since they carry them; older rows have neither):
    a penalty row says why, so a job can count or refuse them."""
    source = rec.get("reward_source")
    if source is None and "reward_source" not in rec:
        return
    if source not in REWARD_SOURCES:
        raise DataError(f"{where}: reward_source must be one of {', '.join(REWARD_SOURCES)} (got {source!r})")
    penalty = rec.get("penalty")
    if source == "penalty":
        if not isinstance(penalty, dict) or penalty.get("kind") not in ("judge_failed", "custom_reward_failed") or not isinstance(penalty.get("reason"), str):
            raise DataError(f"{where}: a row whose reward_source is penalty needs penalty: {{kind: judge_failed | custom_reward_failed, reason}}")
    elif penalty is not None:
        raise DataError(f"{where}: penalty must be null unless reward_source is penalty (got {source!r})")


def read_sft(path: Path) -> list[dict[str, Any]]:
    """SFT examples: {messages, tools, metadata, line}. Each needs an assistant turn to learn from."""
    path = Path(path)
    out = []
    for n, rec in read_jsonl(path):
        where = f"{path.name}:{n}"
        messages = check_messages(rec.get("messages"), where)
        if not any(m["role"] == "assistant" for m in messages):
            raise DataError(f"{where}: no assistant message — an SFT example needs an assistant turn to learn from")
        metadata = rec.get("metadata") or {}
        check_reward_origin(metadata, f"{where}: metadata")
        out.append({"messages": messages, "tools": check_tools(rec.get("tools"), where), "metadata": metadata, "line": n})
    if not out:
        raise DataError(f"{path.name}: no examples — export with a lower --min-reward or gather more rollouts")
    return out


def _number_list(v: Any, where: str, key: str, ints: bool) -> list[Any] | None:
    if v is None:
        return None
    kind = "integers" if ints else "numbers"
    if not isinstance(v, list) or not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in v):
        raise DataError(f"{where}: {key} must be a list of {kind} or null")
    if ints and not all(isinstance(x, int) or float(x).is_integer() for x in v):
        raise DataError(f"{where}: {key} must be a list of integers or null")
    if not ints and not all(math.isfinite(x) and x <= 1e-4 for x in v):  # rounding may give +0.00001
        raise DataError(f"{where}: {key} must be finite log-probabilities (<= 0)")
    return [int(x) for x in v] if ints else [float(x) for x in v]


def check_rl_record(rec: Any, where: str) -> dict[str, Any]:
    """One RL record (a model call of a rollout), normalised; DataError naming the field otherwise."""
    if not isinstance(rec, dict):
        raise DataError(f"{where}: expected a record object")
    messages = check_messages(rec.get("messages"), where)
    comp = rec.get("completion")
    if not isinstance(comp, dict):
        raise DataError(f"{where}: completion must be {{text, tool_calls}}")
    text = comp.get("text")
    if text is not None and not isinstance(text, str):
        raise DataError(f"{where}: completion.text must be a string or null")
    calls = _check_tool_calls(comp["tool_calls"], f"{where}: completion") if comp.get("tool_calls") else []
    reward = rec.get("reward")
    if not isinstance(reward, (int, float)) or isinstance(reward, bool) or not math.isfinite(reward):
        raise DataError(f"{where}: reward must be a finite number (got {reward!r})")
    check_reward_origin(rec, where)
    group = rec.get("group")
    if not isinstance(group, (str, int)) or isinstance(group, bool) or group == "":
        raise DataError(f"{where}: group must be the task id (a non-empty string)")
    return {
        **rec,
        "group": str(group),
        "messages": messages,
        "tools": check_tools(rec.get("tools"), where),
        "completion": {"text": text or "", "tool_calls": calls},
        "reward": float(reward),
        "token_ids": _number_list(rec.get("token_ids"), where, "token_ids", True),
        "logprobs": _number_list(rec.get("logprobs"), where, "logprobs", False),
    }


def read_rl(path: Path) -> list[dict[str, Any]]:
    """RL records, each checked; DataError for the first broken line."""
    path = Path(path)
    out = [check_rl_record(rec, f"{path.name}:{n}") for n, rec in read_jsonl(path)]
    if not out:
        raise DataError(f"{path.name}: no records — the export found no model calls of the chosen agents")
    return out
