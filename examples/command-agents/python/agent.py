#!/usr/bin/env python3
"""A command agent in Python with nothing but the standard library.

Rollout Lab starts it once per rollout: the task comes as JSON on standard
input, OPENAI_BASE_URL points at the lab's recording gateway (so every model
call is recorded, with token ids and logprobs when the model returns them),
and OTEL_EXPORTER_OTLP_TRACES_ENDPOINT at the lab's OTLP receiver. The final
output is one JSON object on standard output.

Two agents: the Router names the ticket's queue, then checks it with a local
tool (normalize_queue, recorded as an OpenTelemetry execute_tool span); the
Responder writes the customer a one-line acknowledgement.
"""
import json
import os
import secrets
import sys
import time
import urllib.error
import urllib.parse
import urllib.request

QUEUES = ("bill", "ship", "tech", "user")
DEFAULT_PROMPTS = {
    "Router": "You route support tickets. Answer with one word: bill, ship, tech or user.",
    "Responder": "You acknowledge support tickets in one short sentence that names the queue.",
}


def prompts():
    """The lab's prompt per agent (so prompt edits and optimisation reach this program), else our own."""
    path = os.environ.get("ROLLOUT_LAB_PROMPTS_FILE")
    if path and os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            return {**DEFAULT_PROMPTS, **json.load(f)}
    return DEFAULT_PROMPTS


def chat(agent, messages):
    """One chat completion through the gateway; the header names the calling agent."""
    body = json.dumps({"model": agent, "messages": messages}).encode()
    req = urllib.request.Request(
        os.environ["OPENAI_BASE_URL"].rstrip("/") + "/chat/completions",
        data=body,
        headers={
            "Content-Type": "application/json",
            "Authorization": "Bearer " + os.environ.get("OPENAI_API_KEY", "none"),
            "X-Rollout-Lab-Agent": agent,
        },
    )
    with urllib.request.urlopen(req, timeout=120) as resp:
        answer = json.load(resp)
    return answer["choices"][0]["message"].get("content") or ""


class Spans:
    """Collects OpenTelemetry spans and sends them as OTLP/JSON when the agent is done."""

    def __init__(self):
        self.trace_id = secrets.token_hex(16)
        self.spans = []

    def record(self, name, parent, start, attributes, ok=True, message="", span_id=None):
        span_id = span_id or secrets.token_hex(8)
        attrs = [{"key": k, "value": {"stringValue": str(v)}} for k, v in attributes.items()]
        self.spans.append({
            "traceId": self.trace_id,
            "spanId": span_id,
            "parentSpanId": parent or "",
            "name": name,
            "kind": 1,
            "startTimeUnixNano": str(int(start * 1e9)),
            "endTimeUnixNano": str(time.time_ns()),
            "attributes": attrs,
            "status": {"code": 1 if ok else 2, "message": message},
        })
        return span_id

    def export(self):
        url = os.environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
        if not url or not self.spans:
            return
        resource = []
        for pair in os.environ.get("OTEL_RESOURCE_ATTRIBUTES", "").split(","):
            if "=" in pair:
                key, value = pair.split("=", 1)
                resource.append({"key": key.strip(), "value": {"stringValue": urllib.parse.unquote(value.strip())}})
        resource.append({"key": "service.name", "value": {"stringValue": "ticket-agent-python"}})
        payload = {"resourceSpans": [{"resource": {"attributes": resource}, "scopeSpans": [{"scope": {"name": "ticket-agent"}, "spans": self.spans}]}]}
        req = urllib.request.Request(url, data=json.dumps(payload).encode(), headers={"Content-Type": "application/json"})
        try:
            urllib.request.urlopen(req, timeout=30).read()
        except urllib.error.URLError as err:
            print(f"could not export spans: {err}", file=sys.stderr)


def normalize_queue(answer):
    """The tool: the queue named in the Router's answer, or None."""
    words = [w.strip(".,:;!\"'").lower() for w in answer.split()]
    return next((w for w in words if w in QUEUES), None)


def main():
    task = json.load(sys.stdin)
    ticket = task["goal"]
    p = prompts()
    spans = Spans()

    started = time.time()
    answer = chat("Router", [{"role": "system", "content": p["Router"]}, {"role": "user", "content": ticket}])
    tool_started = time.time()
    queue = normalize_queue(answer)
    router_span = secrets.token_hex(8)
    spans.record(
        "execute_tool normalize_queue",
        router_span,
        tool_started,
        {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": "normalize_queue",
            "gen_ai.agent.name": "Router",
            "gen_ai.tool.call.arguments": json.dumps({"answer": answer}),
            "gen_ai.tool.call.result": json.dumps({"queue": queue}),
        },
        ok=queue is not None,
        message="" if queue else "no queue named",
    )
    # The agent's span ends after its tool's, under the id the tool span already names as its parent.
    spans.record("invoke_agent Router", None, started, {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "Router"}, span_id=router_span)

    started = time.time()
    reply = chat("Responder", [{"role": "system", "content": p["Responder"]},
                               {"role": "user", "content": f"{ticket}\nQueue: {queue or 'unknown'}"}])
    spans.record("invoke_agent Responder", None, started, {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "Responder"})
    spans.export()

    failures = [] if queue else [{"agent": "Router", "error": f"no queue in the answer {answer!r}"}]
    print(json.dumps({"final_output": queue, "decision": queue, "turns": 2, "failures": failures, "reply": reply}))


if __name__ == "__main__":
    main()
