"""The OpenAI chat-completions wire format: a request checked field by field (a client
that sends something this server would misread gets a 400 naming the field, not a
silently different completion), and the response, whole or as server-sent-event chunks.

Token ids follow vLLM: `return_token_ids` adds `token_ids` to the choice and
`prompt_token_ids` to the response, so Rollout Lab's GRPO records carry the exact tokens
and logprobs the behaviour policy sampled."""

import json
import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from ..data import TOOL_SHAPE, tool_definition

ROLES = {"system", "user", "assistant", "tool"}
# OpenAI's limit on top_logprobs (vLLM's default --max-logprobs is the same).
MAX_TOP_LOGPROBS = 20
# The logprob OpenAI reports for a token of probability 0 (JSON has no -Infinity).
MIN_LOGPROB = -9999.0


class ApiError(Exception):
    """An answer other than 200, with an OpenAI-style error body."""

    def __init__(self, status: int, message: str, code: str | None = None, param: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.param = param

    @property
    def kind(self) -> str:
        if self.status == 401:
            return "authentication_error"
        if self.status >= 500:
            return "server_error"
        return "invalid_request_error"

    def body(self) -> dict[str, Any]:
        return {"error": {"message": str(self), "type": self.kind, "code": self.code, "param": self.param}}


def bad(param: str, message: str) -> ApiError:
    return ApiError(400, f"{param}: {message}", "invalid_value", param)


@dataclass
class ChatRequest:
    """A checked chat-completions request, in the shape the generator needs."""

    model: str | None
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]] | None = None
    temperature: float = 1.0
    top_p: float = 1.0
    max_tokens: int | None = None
    seed: int | None = None
    stop: list[str] = field(default_factory=list)
    logprobs: bool = False
    top_logprobs: int = 0
    return_token_ids: bool = False
    stream: bool = False
    include_usage: bool = False
    parse_tools: bool = True


def _number(body: dict[str, Any], name: str, default: float, low: float, high: float, low_open: bool = False) -> float:
    value = body.get(name)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise bad(name, f"expected a number, got {json.dumps(value)}")
    if value > high or value < low or (low_open and value == low):
        interval = f"{'(' if low_open else '['}{low:g}, {high:g}]"
        raise bad(name, f"{value} is outside {interval}")
    return float(value)


def _integer(body: dict[str, Any], name: str, minimum: int | None = None, maximum: int | None = None) -> int | None:
    value = body.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise bad(name, f"expected an integer, got {json.dumps(value)}")
    if minimum is not None and value < minimum:
        raise bad(name, f"must be at least {minimum}, got {value}")
    if maximum is not None and value > maximum:
        raise bad(name, f"must be at most {maximum}, got {value}")
    return value


def _flag(body: dict[str, Any], name: str) -> bool:
    value = body.get(name)
    if value is None:
        return False
    if not isinstance(value, bool):
        raise bad(name, f"expected true or false, got {json.dumps(value)}")
    return value


def _text_content(content: Any, where: str) -> str:
    """Message content as text: a string, null, or a list of text parts."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise bad(where, "expected a string or a list of text parts")
    texts = []
    for j, part in enumerate(content):
        if isinstance(part, str):
            texts.append(part)
            continue
        if not isinstance(part, dict) or part.get("type") not in ("text", "input_text") or not isinstance(part.get("text"), str):
            kind = part.get("type") if isinstance(part, dict) else type(part).__name__
            raise bad(f"{where}[{j}]", f"only text parts are supported by this model server, got {kind!r}")
        texts.append(part["text"])
    return "".join(texts)


def _tool_calls(calls: Any, where: str) -> list[dict[str, Any]]:
    """An assistant turn's tool calls in the one shape the chat template and the training
    data use: {id, type: function, function: {name, arguments (JSON text)}}."""
    if not isinstance(calls, list):
        raise bad(where, "expected a list of tool calls")
    out = []
    for j, call in enumerate(calls):
        fn = call.get("function") if isinstance(call, dict) else None
        if not isinstance(fn, dict) or not isinstance(fn.get("name"), str):
            raise bad(f"{where}[{j}]", "expected {type: function, id, function: {name, arguments}}")
        args = fn.get("arguments", "{}")
        if isinstance(args, dict):
            args = json.dumps(args, ensure_ascii=False)
        if not isinstance(args, str):
            raise bad(f"{where}[{j}].function.arguments", "expected a JSON string")
        call_id = call.get("id")
        out.append({"id": call_id if isinstance(call_id, str) else f"call_{j}", "type": "function", "function": {"name": fn["name"], "arguments": args}})
    return out


def parse_messages(messages: Any) -> list[dict[str, Any]]:
    if not isinstance(messages, list) or not messages:
        raise ApiError(400, "messages: a non-empty list of chat messages is required", "missing_field", "messages")
    out = []
    for i, m in enumerate(messages):
        where = f"messages[{i}]"
        if not isinstance(m, dict):
            raise bad(where, "expected an object with role and content")
        role = "system" if m.get("role") == "developer" else m.get("role")
        if role not in ROLES:
            raise bad(f"{where}.role", f"expected one of {', '.join(sorted(ROLES | {'developer'}))}, got {json.dumps(m.get('role'))}")
        msg: dict[str, Any] = {"role": role, "content": _text_content(m.get("content"), f"{where}.content")}
        if role == "assistant" and m.get("tool_calls"):
            msg["tool_calls"] = _tool_calls(m["tool_calls"], f"{where}.tool_calls")
        if role == "tool" and m.get("tool_call_id") is not None:
            if not isinstance(m["tool_call_id"], str):
                raise bad(f"{where}.tool_call_id", "expected a string")
            msg["tool_call_id"] = m["tool_call_id"]
        if isinstance(m.get("name"), str):
            msg["name"] = m["name"]
        out.append(msg)
    return out


def parse_tools(tools: Any) -> list[dict[str, Any]] | None:
    if tools is None or tools == []:
        return None
    if not isinstance(tools, list):
        raise bad("tools", f"expected a list of {TOOL_SHAPE}")
    out = []
    for i, tool in enumerate(tools):
        d = tool_definition(tool)
        if d is None:
            raise bad(f"tools[{i}]", f"expected {TOOL_SHAPE}")
        out.append(d)
    return out


def _stops(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(s, str) for s in value):
        raise bad("stop", "expected a string or a list of strings")
    return [s for s in value if s]


def top_logprobs_of(body: dict[str, Any]) -> int:
    """How many alternatives per token the request asks for (0 to 20); alternatives
    without logprobs would have nowhere to go, so that is refused, as OpenAI and vLLM do."""
    k = _integer(body, "top_logprobs", 0, MAX_TOP_LOGPROBS) or 0
    if k and body.get("logprobs") is not True:
        raise bad("top_logprobs", "needs logprobs: true (the alternatives are reported next to each sampled token's logprob)")
    return k


def asks_for_format(body: dict[str, Any]) -> bool:
    """Whether response_format asks for more than plain text (OpenAI's default)."""
    fmt = body.get("response_format")
    return fmt is not None and not (isinstance(fmt, dict) and fmt.get("type") == "text")


def check_response_format(body: dict[str, Any]) -> None:
    """This server samples from the policy as it is, so a format it would have to enforce
    is refused rather than ignored."""
    if not asks_for_format(body):
        return
    fmt = body["response_format"]
    kind = fmt.get("type") if isinstance(fmt, dict) else None
    shown = json.dumps(kind) if isinstance(kind, str) else "this value"
    raise bad("response_format", f"{shown} is not supported: this server does not constrain decoding; leave response_format out and read the JSON from the completion's text")


def parse_chat_request(body: dict[str, Any]) -> ChatRequest:
    """Fields this server does not implement but that do not change what a completion
    means (user, metadata, penalties, ...) are accepted and ignored; fields that would
    (n > 1, response_format, non-text content) are refused."""
    model = body.get("model")
    if model is not None and not isinstance(model, str):
        raise bad("model", "expected the served model name")
    n = _integer(body, "n", 1)
    if n not in (None, 1):
        raise bad("n", f"this server returns one choice per request; send {n} requests (with different seeds) instead")
    check_response_format(body)
    max_tokens = _integer(body, "max_completion_tokens", 1)
    if max_tokens is None:
        max_tokens = _integer(body, "max_tokens", 1)
    options = body.get("stream_options")
    if options is not None and not isinstance(options, dict):
        raise bad("stream_options", "expected an object like {include_usage: true}")
    choice = body.get("tool_choice")
    if choice is not None and not isinstance(choice, (str, dict)):
        raise bad("tool_choice", "expected none, auto, required or {type: function, function: {name}}")
    return ChatRequest(
        model=model,
        messages=parse_messages(body.get("messages")),
        tools=parse_tools(body.get("tools")),
        temperature=_number(body, "temperature", 1.0, 0.0, 2.0),
        top_p=_number(body, "top_p", 1.0, 0.0, 1.0, low_open=True),
        max_tokens=max_tokens,
        seed=_integer(body, "seed"),
        stop=_stops(body.get("stop")),
        logprobs=_flag(body, "logprobs"),
        top_logprobs=top_logprobs_of(body),
        return_token_ids=_flag(body, "return_token_ids"),
        stream=_flag(body, "stream"),
        include_usage=bool((options or {}).get("include_usage")),
        parse_tools=choice != "none",
    )


@dataclass
class TokenLogprob:
    """One token and its logprob, as logprobs.content reports it."""

    id: int
    token: str
    logprob: float
    bytes: list[int]


@dataclass
class Generation:
    """What the policy produced for one request; `top` has, per sampled token, the
    alternatives the request asked for (top_logprobs of them, most likely first)."""

    prompt_ids: list[int]
    ids: list[int]
    logprobs: list[float]
    tokens: list[str]
    token_bytes: list[list[int]]
    content: str | None
    tool_calls: list[dict[str, Any]]
    finish_reason: str
    top: list[list[TokenLogprob]]


def _logprob(value: float) -> float:
    return value if math.isfinite(value) else MIN_LOGPROB


def _entry(t: TokenLogprob) -> dict[str, Any]:
    # `id` is not OpenAI's, but llama.cpp sends it too and clients ignore what they do not know.
    return {"id": t.id, "token": t.token, "logprob": _logprob(t.logprob), "bytes": t.bytes}


def logprobs_content(gen: Generation) -> list[dict[str, Any]]:
    return [{"token": t, "logprob": _logprob(lp), "bytes": b, "top_logprobs": [_entry(a) for a in alts]}
            for t, lp, b, alts in zip(gen.tokens, gen.logprobs, gen.token_bytes, gen.top)]


def usage(gen: Generation) -> dict[str, int]:
    return {"prompt_tokens": len(gen.prompt_ids), "completion_tokens": len(gen.ids), "total_tokens": len(gen.prompt_ids) + len(gen.ids)}


def completion_body(req: ChatRequest, gen: Generation, model: str, request_id: str, created: int) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": gen.content}
    if gen.tool_calls:
        message["tool_calls"] = gen.tool_calls
    choice: dict[str, Any] = {"index": 0, "message": message, "logprobs": None, "finish_reason": gen.finish_reason}
    if req.logprobs:
        choice["logprobs"] = {"content": logprobs_content(gen), "refusal": None}
    if req.return_token_ids:
        choice["token_ids"] = list(gen.ids)
    body: dict[str, Any] = {"id": request_id, "object": "chat.completion", "created": created, "model": model, "choices": [choice], "usage": usage(gen)}
    if req.return_token_ids:
        body["prompt_token_ids"] = list(gen.prompt_ids)
    return body


def stream_chunks(req: ChatRequest, gen: Generation, model: str, request_id: str, created: int) -> Iterator[dict[str, Any]]:
    """The completion as chat.completion.chunk objects: the role, the content (with its
    logprobs and token ids when asked), the tool calls, the finish reason, and the usage
    when stream_options.include_usage asks for it. Generation is not incremental, so the
    chunks come once the completion is done."""

    def chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> dict[str, Any]:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish, **extra}
        return {"id": request_id, "object": "chat.completion.chunk", "created": created, "model": model, "choices": [choice]}

    first = chunk({"role": "assistant", "content": ""})
    if req.return_token_ids:
        first["prompt_token_ids"] = list(gen.prompt_ids)
    yield first
    extra: dict[str, Any] = {}
    if req.logprobs:
        extra["logprobs"] = {"content": logprobs_content(gen), "refusal": None}
    if req.return_token_ids:
        extra["token_ids"] = list(gen.ids)
    if gen.content or extra:
        yield chunk({"content": gen.content or ""}, **extra)
    if gen.tool_calls:
        yield chunk({"tool_calls": [{"index": i, **call} for i, call in enumerate(gen.tool_calls)]})
    yield chunk({}, gen.finish_reason)
    if req.include_usage:
        yield {"id": request_id, "object": "chat.completion.chunk", "created": created, "model": model, "choices": [], "usage": usage(gen)}
