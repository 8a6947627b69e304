"""What the lab tells a command agent through its environment, read once and checked."""

from __future__ import annotations

import json
import os
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass, field


class LabEnvironmentError(RuntimeError):
    """The environment the lab set is missing something or holds something unusable; the message says what."""


def _json_object(env: Mapping[str, str], key: str) -> dict[str, str]:
    raw = env.get(key, "").strip()
    if not raw:
        return {}
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as err:
        raise LabEnvironmentError(f"{key} is not JSON ({err.msg} at {err.pos}): the lab sets it to an object of agent name to URL") from err
    if not isinstance(value, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
        raise LabEnvironmentError(f"{key} must be a JSON object of agent name to URL, got {raw[:200]!r}")
    return dict(value)


def resource_attributes(raw: str) -> dict[str, str]:
    """OTEL_RESOURCE_ATTRIBUTES as a dict: comma-separated key=value pairs, values percent-decoded (as the OpenTelemetry spec writes them)."""
    out: dict[str, str] = {}
    for pair in raw.split(","):
        if "=" not in pair:
            continue
        key, value = pair.split("=", 1)
        if key.strip():
            out[key.strip()] = urllib.parse.unquote(value.strip())
    return out


@dataclass(frozen=True)
class LabEnvironment:
    """The addresses and ids of one rollout, as the lab passes them to the program it starts."""

    base_url: str | None
    agent_base_urls: dict[str, str] = field(default_factory=dict)
    traces_endpoint: str | None = None
    resource: dict[str, str] = field(default_factory=dict)
    prompts_file: str | None = None
    rollout_id: str | None = None
    run_id: str | None = None
    task_id: str | None = None
    sample: int | None = None
    seed: int | None = None

    @property
    def in_lab(self) -> bool:
        """True when the lab started this program (it names the rollout); False when run by hand."""
        return self.rollout_id is not None

    def agent_base_url(self, agent: str | None) -> str | None:
        """The agent's own gateway URL (its calls are recorded as its own), else the rollout's."""
        if agent and agent in self.agent_base_urls:
            return self.agent_base_urls[agent]
        return self.base_url

    def prompts(self) -> dict[str, str]:
        """The lab's prompt per agent (edits in the lab and prompt optimisation reach the program through it)."""
        if not self.prompts_file or not os.path.exists(self.prompts_file):
            return {}
        with open(self.prompts_file, encoding="utf-8") as f:
            value = json.load(f)
        if not isinstance(value, dict):
            raise LabEnvironmentError(f"ROLLOUT_LAB_PROMPTS_FILE ({self.prompts_file}) must hold a JSON object of agent name to prompt")
        return {str(k): str(v) for k, v in value.items()}


def _int(env: Mapping[str, str], key: str) -> int | None:
    raw = env.get(key, "").strip()
    if not raw:
        return None
    try:
        return int(raw)
    except ValueError as err:
        raise LabEnvironmentError(f"{key} must be an integer, got {raw!r}") from err


def traces_endpoint(env: Mapping[str, str]) -> str | None:
    """Where spans go: OTEL_EXPORTER_OTLP_TRACES_ENDPOINT as is, else OTEL_EXPORTER_OTLP_ENDPOINT + /v1/traces (the OTLP/HTTP rule)."""
    own = env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "").strip()
    if own:
        return own
    base = env.get("OTEL_EXPORTER_OTLP_ENDPOINT", "").strip()
    return base.rstrip("/") + "/v1/traces" if base else None


def lab_environment(env: Mapping[str, str] | None = None) -> LabEnvironment:
    """Reads the rollout's environment (os.environ by default)."""
    e = os.environ if env is None else env
    return LabEnvironment(
        base_url=e.get("OPENAI_BASE_URL") or None,
        agent_base_urls=_json_object(e, "ROLLOUT_LAB_AGENT_BASE_URLS"),
        traces_endpoint=traces_endpoint(e),
        resource=resource_attributes(e.get("OTEL_RESOURCE_ATTRIBUTES", "")),
        prompts_file=e.get("ROLLOUT_LAB_PROMPTS_FILE") or None,
        rollout_id=e.get("ROLLOUT_LAB_ROLLOUT_ID") or None,
        run_id=e.get("ROLLOUT_LAB_RUN_ID") or None,
        task_id=e.get("ROLLOUT_LAB_TASK_ID") or None,
        sample=_int(e, "ROLLOUT_LAB_SAMPLE"),
        seed=_int(e, "ROLLOUT_LAB_SEED"),
    )
