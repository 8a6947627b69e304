"""One rollout as the agent sees it: setup() reads the task and wires the gateway and tracing; finish() hands the output back."""

from __future__ import annotations

import atexit
import json
import os
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import IO, Any

from .gateway_client import chat_completion
from .json_tracing import JsonTracing
from .lab_env import LabEnvironment, lab_environment
from .span_handle import SpanHandle
from .task_io import read_task, write_output

# The GenAI semantic conventions' names (https://opentelemetry.io/docs/specs/semconv/gen-ai/).
EVALUATION_EVENT = "gen_ai.evaluation.result"

_active: Rollout | None = None


def _tracing(env: LabEnvironment, service_name: str, use_otel: bool | None) -> Any:
    if use_otel is not False:
        try:
            from .otel_tracing import OtelTracing
        except ImportError:
            if use_otel:
                raise
        else:
            return OtelTracing(env.traces_endpoint, service_name, env.rollout_id)
    return JsonTracing(env.traces_endpoint, {"service.name": service_name, **env.resource}, env.rollout_id)


class Rollout:
    """The task, the lab's addresses and prompts, spans, rewards and the final output of one run of the agent."""

    def __init__(self, task: dict[str, Any], env: LabEnvironment, tracing: Any, agent: str | None, stdout: IO[str] | None = None) -> None:
        self.task = task
        self.env = env
        self.tracing = tracing
        self.agent = agent
        self.failures: list[dict[str, Any]] = []
        self._stdout = stdout
        self._finished = False

    # --- the gateway -------------------------------------------------------------------------------------------
    def base_url(self, agent: str | None = None) -> str:
        """The OpenAI base URL for the agent: its own gateway URL (calls are recorded as its own), else the rollout's."""
        url = self.env.agent_base_url(agent or self.agent)
        if not url:
            raise RuntimeError("OPENAI_BASE_URL is not set: run the agent through the lab (rollout-lab run), or set OPENAI_BASE_URL to an OpenAI-compatible server")
        return url

    def trace_headers(self) -> dict[str, str]:
        """The W3C trace context of the current span (`traceparent`), for an HTTP client that does not send it itself."""
        return self.tracing.trace_headers()

    def chat(self, messages: list[dict[str, Any]], *, agent: str | None = None, **params: Any) -> dict[str, Any]:
        """One chat completion through the gateway as AGENT (the standard library's client); returns the whole answer."""
        who = agent or self.agent
        return chat_completion(self.base_url(who), {"model": who or "default", "messages": messages, **params}, agent=who, headers=self.trace_headers())

    def http_client(self, *, asynchronous: bool = False, **kwargs: Any) -> Any:
        """An httpx client that sends the current span's trace context with every request: pass it to OpenAI(http_client=...)."""
        import httpx

        def inject(request: httpx.Request) -> None:
            for k, v in self.trace_headers().items():
                request.headers.setdefault(k, v)

        if asynchronous:

            async def inject_async(request: httpx.Request) -> None:
                inject(request)

            return httpx.AsyncClient(event_hooks={"request": [inject_async]}, **kwargs)
        return httpx.Client(event_hooks={"request": [inject]}, **kwargs)

    # --- prompts -----------------------------------------------------------------------------------------------
    def prompt(self, agent: str, default: str) -> str:
        """The lab's prompt for AGENT (so prompt edits and optimisation reach the program), else DEFAULT."""
        return self.env.prompts().get(agent, default)

    # --- spans -------------------------------------------------------------------------------------------------
    @contextmanager
    def span(self, name: str, attributes: Mapping[str, Any] | None = None) -> Iterator[SpanHandle]:
        with self.tracing.span(name, dict(attributes or {})) as s:
            yield s

    @contextmanager
    def agent_span(self, agent: str | None = None, attributes: Mapping[str, Any] | None = None) -> Iterator[SpanHandle]:
        """An `invoke_agent NAME` span: the model calls and tools inside it are the agent's."""
        name = agent or self.agent
        if not name:
            raise ValueError("agent_span needs the agent's name (or setup(agent=...))")
        with self.span(f"invoke_agent {name}", {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": name, **(attributes or {})}) as s:
            yield s

    @contextmanager
    def tool_span(self, tool: str, arguments: Any = None, *, call_id: str | None = None, agent: str | None = None) -> Iterator[ToolSpan]:
        """An `execute_tool NAME` span. Set `.result` inside; an exception (or `.fail(...)`) marks the call failed.
        `call_id` is the model's tool-call id: it ties the tool (and any reward on it) to the call that asked for it."""
        attrs = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": tool,
            "gen_ai.tool.call.id": call_id,
            "gen_ai.agent.name": agent,
            "gen_ai.tool.call.arguments": arguments if isinstance(arguments, str) or arguments is None else json.dumps(arguments),
        }
        with self.span(f"execute_tool {tool}", attrs) as s:
            t = ToolSpan(s)
            yield t
            if t.result is not None:
                s.set_attribute("gen_ai.tool.call.result", t.result if isinstance(t.result, str) else json.dumps(t.result))

    # --- rewards -----------------------------------------------------------------------------------------------
    def emit_reward(self, value: float, name: str = "reward", *, agent: str | None = None, explanation: str | None = None) -> None:
        """An intermediate reward from inside the agent, on the current span (a `gen_ai.evaluation.result` event).
        The lab stores it as a reward of the rollout: inside a tool span it goes to the model call that asked for the
        tool, elsewhere to the agent's model calls as AIR rewards do. Without an open span it gets a span of its own."""
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise TypeError(f"a reward is a number, got {value!r}")
        attrs = {"gen_ai.evaluation.name": name, "gen_ai.evaluation.score.value": float(value), "gen_ai.agent.name": agent, "gen_ai.evaluation.explanation": explanation}
        if not self.tracing.add_event(EVALUATION_EVENT, attrs):
            with self.span(f"evaluation {name}"):
                self.tracing.add_event(EVALUATION_EVENT, attrs)

    # --- the end -----------------------------------------------------------------------------------------------
    def fail(self, error: str, agent: str | None = None) -> None:
        """Records a failure of an agent; the rollout's outcome lists it."""
        self.failures.append({"agent": agent or self.agent or "unknown", "error": error})

    def flush(self) -> None:
        """Sends the spans recorded so far (finish() does it; call it before an exit that skips finish)."""
        self.tracing.shutdown()

    def finish(self, final_output: Any, *, decision: str | None = None, turns: int | None = None, **extra: Any) -> None:
        """Sends the spans, then prints the final output as the lab reads it (the last JSON line on standard output)."""
        if self._finished:
            raise RuntimeError("finish() was called twice: a rollout has one final output")
        self._finished = True
        self.flush()
        write_output(final_output, stream=self._stdout, decision=decision, turns=turns, failures=self.failures, **extra)


def setup(
    agent: str | None = None,
    *,
    service_name: str | None = None,
    use_otel: bool | None = None,
    stdin: IO[str] | None = None,
    stdout: IO[str] | None = None,
    env: Mapping[str, str] | None = None,
) -> Rollout:
    """Reads the task from standard input and wires the rollout: OPENAI_BASE_URL becomes AGENT's own gateway URL
    (so an OpenAI client, LangChain or the Agents SDK reading it is recorded as that agent), and spans go to the lab's
    OTLP receiver — through the OpenTelemetry SDK's global tracer provider when opentelemetry-sdk and
    opentelemetry-exporter-otlp-proto-http are installed (use_otel=None: when importable), else as OTLP/JSON."""
    global _active
    lab = lab_environment(env)
    tracing = _tracing(lab, service_name or os.path.basename(sys.argv[0] or "python-agent") or "python-agent", use_otel)
    task = read_task(stdin)
    url = lab.agent_base_url(agent)
    if url and env is None:
        os.environ["OPENAI_BASE_URL"] = url
    rollout = Rollout(task, lab, tracing, agent, stdout)
    # Spans still reach the lab when the agent dies before finish(): the lab then shows where it failed.
    atexit.register(tracing.shutdown)
    _active = rollout
    return rollout


def current() -> Rollout:
    """The rollout setup() started in this process."""
    if _active is None:
        raise RuntimeError("no rollout: call rollout_lab_agent.setup() first")
    return _active


def emit_reward(value: float, name: str = "reward", *, agent: str | None = None, explanation: str | None = None) -> None:
    """emit_reward of the rollout setup() started (see Rollout.emit_reward)."""
    current().emit_reward(value, name, agent=agent, explanation=explanation)


class ToolSpan:
    """The open tool span: its `result` is recorded when the block ends."""

    def __init__(self, span: SpanHandle) -> None:
        self.span = span
        self.result: Any = None

    def fail(self, message: str) -> None:
        self.span.set_error(message)
