"""Tracing through the OpenTelemetry SDK (when installed): the global tracer provider exports to the lab over OTLP/HTTP,
so framework instrumentations (OpenInference, opentelemetry-instrumentation-openai-v2) land in the rollout too."""

from __future__ import annotations

import random
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from opentelemetry import propagate, trace
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.sdk.trace.id_generator import IdGenerator
from opentelemetry.trace import Status, StatusCode

from .span_handle import SpanHandle


class RolloutIdGenerator(IdGenerator):
    """Trace ids are the rollout's id, so the agent's spans, the traceparent it sends and the lab's rollout share one trace id."""

    def __init__(self, trace_id: str | None) -> None:
        self._trace_id = int(trace_id, 16) if trace_id else None
        self._random = random.SystemRandom()

    def generate_span_id(self) -> int:
        return self._random.getrandbits(64) or 1

    def generate_trace_id(self) -> int:
        return self._trace_id or self._random.getrandbits(128) or 1


class _OtelSpanHandle(SpanHandle):
    def __init__(self, span: trace.Span) -> None:
        self._span = span

    def set_attribute(self, key: str, value: Any) -> None:
        self._span.set_attribute(key, value)

    def set_error(self, message: str) -> None:
        self._span.set_status(Status(StatusCode.ERROR, message))


class OtelTracing:
    def __init__(self, endpoint: str | None, service_name: str, trace_id: str | None = None) -> None:
        current = trace.get_tracer_provider()
        if isinstance(current, TracerProvider):
            # The program set up OpenTelemetry itself: the lab's exporter is added to it.
            self.provider = current
            self._own = False
        else:
            # Resource.create also reads OTEL_RESOURCE_ATTRIBUTES: the rollout's ids the lab routes spans by.
            self.provider = TracerProvider(resource=Resource.create({"service.name": service_name}), id_generator=RolloutIdGenerator(trace_id))
            trace.set_tracer_provider(self.provider)
            self._own = True
        if endpoint:
            self.provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=endpoint)))
        self.tracer = trace.get_tracer("rollout_lab_agent")
        self._shut = False

    @contextmanager
    def span(self, name: str, attributes: Mapping[str, Any]) -> Iterator[SpanHandle]:
        attrs = {k: v for k, v in attributes.items() if v is not None}
        with self.tracer.start_as_current_span(name, attributes=attrs) as s:
            yield _OtelSpanHandle(s)

    def add_event(self, name: str, attributes: Mapping[str, Any]) -> bool:
        s = trace.get_current_span()
        if not s.is_recording():
            return False
        s.add_event(name, {k: v for k, v in attributes.items() if v is not None})
        return True

    def trace_headers(self) -> dict[str, str]:
        carrier: dict[str, str] = {}
        propagate.inject(carrier)
        return carrier

    def shutdown(self) -> None:
        """Sends the spans still queued (once); the provider is shut down only when this package set it up."""
        if self._shut:
            return
        self._shut = True
        self.provider.force_flush()
        if self._own:
            self.provider.shutdown()
