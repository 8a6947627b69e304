"""The task in, the final output out: the two ends of a command agent's contract with the lab."""

from __future__ import annotations

import json
import sys
from typing import IO, Any


class TaskInputError(ValueError):
    """Standard input held no task the agent can use; the message says what came instead."""


def read_task(stream: IO[str] | None = None) -> dict[str, Any]:
    """The task the lab writes to standard input: one JSON object ({"id", "goal", "context", ...the fields the agents may see})."""
    text = (stream or sys.stdin).read()
    if not text.strip():
        raise TaskInputError('standard input is empty: the lab writes the task there as one JSON object, e.g. echo \'{"id": "t1", "goal": "..."}\' | python agent.py')
    try:
        task = json.loads(text)
    except json.JSONDecodeError as err:
        raise TaskInputError(f"standard input is not JSON ({err.msg} at line {err.lineno} column {err.colno}): {text.strip()[:200]!r}") from err
    if not isinstance(task, dict):
        raise TaskInputError(f"the task on standard input must be a JSON object, got {type(task).__name__}: {text.strip()[:200]!r}")
    return task


def final_output_line(
    final_output: Any,
    *,
    decision: str | None = None,
    turns: int | None = None,
    failures: list[dict[str, Any]] | None = None,
    **extra: Any,
) -> str:
    """The one JSON line the lab reads as the rollout's outcome. A final output that is not a string is sent as JSON text."""
    if turns is not None and (not isinstance(turns, int) or isinstance(turns, bool) or turns < 0):
        raise ValueError(f"turns must be a non-negative integer, got {turns!r}")
    for f in failures or []:
        if not isinstance(f, dict) or "error" not in f:
            raise ValueError(f'each failure must be a dict {{"agent": ..., "error": ...}}, got {f!r}')
    doc: dict[str, Any] = {**extra, "final_output": final_output if isinstance(final_output, str) or final_output is None else json.dumps(final_output)}
    if decision is not None:
        doc["decision"] = decision
    if turns is not None:
        doc["turns"] = turns
    doc["failures"] = list(failures or [])
    return json.dumps(doc, ensure_ascii=False, default=str)


def write_output(final_output: Any, *, stream: IO[str] | None = None, **fields: Any) -> None:
    """Prints the final output as the last line of standard output (anything the agent printed before is ignored by the lab)."""
    out = stream or sys.stdout
    out.write("\n" + final_output_line(final_output, **fields) + "\n")
    out.flush()
