"""A stand-in for the lab's side of a rollout on 127.0.0.1: the OTLP/HTTP receiver and the gateway's chat endpoint.
It records what the agent sent (bodies and headers) and answers chat calls like an OpenAI-compatible server."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

ROLLOUT_ID = "0af7651916cd43dd8448eb211c80319c"


class FakeLab:
    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        lab = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (the base class names it so)
                pass

            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                lab.requests.append({"path": self.path, "headers": {k.lower(): v for k, v in self.headers.items()}, "body": body})
                if self.path.endswith("/chat/completions"):
                    answer = {
                        "id": f"chatcmpl-{len(lab.requests)}",
                        "object": "chat.completion",
                        "model": "served-model",
                        "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "tech"}}],
                        "usage": {"prompt_tokens": 5, "completion_tokens": 1, "total_tokens": 6},
                    }
                    data = json.dumps(answer).encode()
                    ctype = "application/json"
                else:
                    data, ctype = b"{}", self.headers.get("Content-Type", "application/json")
                self.send_response(200)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def env(self) -> dict[str, str]:
        """The environment the lab gives a command agent for rollout ROLLOUT_ID with the agents Support and Reviewer."""
        base = f"{self.url}/rollouts/{ROLLOUT_ID}"
        return {
            "OPENAI_BASE_URL": f"{base}/v1",
            "OPENAI_API_KEY": "rollout-lab-gateway",
            "ROLLOUT_LAB_AGENT_BASE_URLS": json.dumps({"Support": f"{base}/agents/Support/v1", "Reviewer": f"{base}/agents/Reviewer/v1"}),
            "OTEL_EXPORTER_OTLP_ENDPOINT": self.url,
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": f"{self.url}/v1/traces",
            "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
            "OTEL_RESOURCE_ATTRIBUTES": f"rollout_lab.rollout.id={ROLLOUT_ID},rollout_lab.run.id=run-1,rollout_lab.task.id=T%2C1,rollout_lab.sample=0",
            "ROLLOUT_LAB_ROLLOUT_ID": ROLLOUT_ID,
            "ROLLOUT_LAB_RUN_ID": "run-1",
            "ROLLOUT_LAB_TASK_ID": "T,1",
            "ROLLOUT_LAB_SAMPLE": "0",
            "ROLLOUT_LAB_SEED": "7",
        }

    def posted(self, suffix: str) -> list[dict[str, Any]]:
        return [r for r in self.requests if r["path"].endswith(suffix)]

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
