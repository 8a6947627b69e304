"""Tool calls in generated text. Hermes-style chat templates (Qwen's, and hf_build's for a
model built from a config) teach the model to write `<tool_call>{"name": .., "arguments":
{..}}</tool_call>`; OpenAI clients expect them as `tool_calls` with the arguments as a
JSON string. A block that is not such an object stays in the text, so nothing the model
wrote is silently lost."""

import json
import re
from typing import Any

TOOL_CALL_BLOCK = re.compile(r"<tool_call>(.*?)</tool_call>", re.S)


def _function_of(block: str) -> dict[str, str] | None:
    """{name, arguments (JSON text)} of one block, or None when the block is malformed."""
    try:
        obj = json.loads(block.strip())
    except json.JSONDecodeError:
        return None
    if not isinstance(obj, dict) or not isinstance(obj.get("name"), str) or not obj["name"].strip():
        return None
    # Llama-style templates say "parameters"; both mean the arguments object.
    args: Any = obj.get("arguments", obj.get("parameters", {}))
    if isinstance(args, str):
        try:
            parsed = json.loads(args)
        except json.JSONDecodeError:
            return None
        if not isinstance(parsed, dict):
            return None
        return {"name": obj["name"], "arguments": args}
    if not isinstance(args, dict):
        return None
    return {"name": obj["name"], "arguments": json.dumps(args, ensure_ascii=False)}


def parse_tool_calls(text: str, first_id: int = 0) -> tuple[str | None, list[dict[str, Any]]]:
    """(content, tool_calls) of a completion's text. Call ids are `call_<n>` counting from
    first_id, so a server can keep them unique over its lifetime. With no well-formed call
    the text comes back unchanged; with calls, the remaining text stripped, or None if empty
    (as OpenAI answers a pure tool call)."""
    calls: list[dict[str, Any]] = []
    kept: list[str] = []
    pos = 0
    for match in TOOL_CALL_BLOCK.finditer(text):
        function = _function_of(match.group(1))
        if function is None:
            continue
        kept.append(text[pos : match.start()])
        pos = match.end()
        calls.append({"id": f"call_{first_id + len(calls)}", "type": "function", "function": function})
    if not calls:
        return text, []
    kept.append(text[pos:])
    content = "".join(kept).strip()
    return (content or None), calls
