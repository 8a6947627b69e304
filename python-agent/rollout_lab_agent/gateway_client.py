"""One chat completion through the lab's gateway with nothing but the standard library."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Mapping
from typing import Any

AGENT_HEADER = "X-Rollout-Lab-Agent"


class GatewayCallError(RuntimeError):
    """The gateway (or the model behind it) refused or failed the call; the message quotes its answer."""


def chat_completion(
    base_url: str,
    body: Mapping[str, Any],
    *,
    agent: str | None = None,
    headers: Mapping[str, str] | None = None,
    api_key: str = "rollout-lab-gateway",
    timeout: float = 120,
) -> dict[str, Any]:
    """POSTs an OpenAI chat-completions body to BASE_URL/chat/completions and returns the parsed answer."""
    h = {"Content-Type": "application/json", "Authorization": f"Bearer {api_key}", **(headers or {})}
    if agent:
        h[AGENT_HEADER] = agent
    req = urllib.request.Request(base_url.rstrip("/") + "/chat/completions", data=json.dumps(body).encode(), headers=h, method="POST")
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return json.load(resp)
    except urllib.error.HTTPError as err:
        detail = err.read().decode("utf-8", "replace")[:2000]
        raise GatewayCallError(f"chat completion at {base_url} failed with HTTP {err.code}: {detail}") from err
    except urllib.error.URLError as err:
        raise GatewayCallError(f"chat completion at {base_url} could not be sent: {err.reason}") from err
