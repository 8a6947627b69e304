"""What the agent holds while one of its spans is open, whichever tracing records it."""

from __future__ import annotations

from typing import Any, Protocol


class SpanHandle(Protocol):
    def set_attribute(self, key: str, value: Any) -> None: ...

    def set_error(self, message: str) -> None:
        """Marks the span failed (an error status with this message) without raising."""
        ...
