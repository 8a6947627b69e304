"""Spans without the OpenTelemetry SDK: recorded in memory and sent to the lab as one OTLP/JSON request at the end."""

from __future__ import annotations

import contextvars
import json
import secrets
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from .span_handle import SpanHandle


def otlp_value(value: Any) -> dict[str, Any]:
    """An attribute value as OTLP/JSON's AnyValue (ints as strings, as the protobuf JSON mapping writes int64)."""
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)}
    if isinstance(value, float):
        return {"doubleValue": value}
    if isinstance(value, (list, tuple)):
        return {"arrayValue": {"values": [otlp_value(v) for v in value]}}
    return {"stringValue": value if isinstance(value, str) else json.dumps(value, default=str)}


def otlp_attributes(attributes: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [{"key": k, "value": otlp_value(v)} for k, v in attributes.items() if v is not None]


@dataclass
class _Span:
    trace_id: str
    span_id: str
    parent_id: str | None
    name: str
    start_ns: int
    attributes: dict[str, Any]
    events: list[dict[str, Any]] = field(default_factory=list)
    end_ns: int | None = None
    error: str | None = None

    def otlp(self) -> dict[str, Any]:
        return {
            "traceId": self.trace_id,
            "spanId": self.span_id,
            "parentSpanId": self.parent_id or "",
            "name": self.name,
            "kind": 1,
            "startTimeUnixNano": str(self.start_ns),
            "endTimeUnixNano": str(self.end_ns or time.time_ns()),
            "attributes": otlp_attributes(self.attributes),
            "events": self.events,
            "status": {"code": 2, "message": self.error} if self.error is not None else {"code": 1},
        }


class _JsonSpanHandle(SpanHandle):
    def __init__(self, span: _Span) -> None:
        self._span = span

    def set_attribute(self, key: str, value: Any) -> None:
        self._span.attributes[key] = value

    def set_error(self, message: str) -> None:
        self._span.error = message


class JsonTracing:
    """The standard library's tracing: nested spans (the current one per context), events, the W3C traceparent of the current span."""

    def __init__(self, endpoint: str | None, resource: Mapping[str, str], trace_id: str | None = None, scope: str = "rollout_lab_agent") -> None:
        self.endpoint = endpoint
        self.resource = dict(resource)
        self.trace_id = trace_id or secrets.token_hex(16)
        self.scope = scope
        self.spans: list[_Span] = []
        self._current: contextvars.ContextVar[_Span | None] = contextvars.ContextVar(f"rollout_lab_agent_span_{id(self)}", default=None)
        self._shut = False

    @contextmanager
    def span(self, name: str, attributes: Mapping[str, Any]) -> Iterator[SpanHandle]:
        parent = self._current.get()
        s = _Span(self.trace_id, secrets.token_hex(8), parent.span_id if parent else None, name, time.time_ns(), dict(attributes))
        self.spans.append(s)
        token = self._current.set(s)
        try:
            yield _JsonSpanHandle(s)
        except BaseException as err:
            if s.error is None:
                s.error = f"{type(err).__name__}: {err}"
            raise
        finally:
            s.end_ns = time.time_ns()
            self._current.reset(token)

    def add_event(self, name: str, attributes: Mapping[str, Any]) -> bool:
        s = self._current.get()
        if s is None:
            return False
        s.events.append({"timeUnixNano": str(time.time_ns()), "name": name, "attributes": otlp_attributes(attributes)})
        return True

    def trace_headers(self) -> dict[str, str]:
        s = self._current.get()
        return {"traceparent": f"00-{self.trace_id}-{s.span_id}-01"} if s else {}

    def payload(self) -> dict[str, Any]:
        resource = {"service.name": "python-agent", **self.resource}
        return {"resourceSpans": [{"resource": {"attributes": otlp_attributes(resource)}, "scopeSpans": [{"scope": {"name": self.scope}, "spans": [s.otlp() for s in self.spans]}]}]}

    def shutdown(self) -> None:
        """Sends what was recorded (once). A receiver that cannot be reached is reported on standard error; the agent's output still counts."""
        if self._shut:
            return
        self._shut = True
        if not self.endpoint or not self.spans:
            return
        req = urllib.request.Request(self.endpoint, data=json.dumps(self.payload()).encode(), headers={"Content-Type": "application/json"}, method="POST")
        try:
            with urllib.request.urlopen(req, timeout=30) as resp:
                resp.read()
        except (urllib.error.URLError, OSError) as err:
            print(f"rollout_lab_agent: could not send {len(self.spans)} span(s) to {self.endpoint}: {err}", file=sys.stderr)
