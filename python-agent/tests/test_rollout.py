"""The helper as a command agent uses it, run in its own process against a stand-in for the lab (tests/fake_lab.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from fake_lab import ROLLOUT_ID, FakeLab

PACKAGE_ROOT = Path(__file__).resolve().parent.parent
AGENT = Path(__file__).resolve().parent / "agents" / "support_agent.py"
TASK = {"id": "T,1", "goal": "Customer C-17 cannot log in."}


@pytest.fixture
def fake_lab():
    lab = FakeLab()
    yield lab
    lab.close()


def run_agent(lab: FakeLab, *, stdlib_only: bool, args: tuple[str, ...] = (), prompts: dict[str, str] | None = None, tmp_path: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "OPENAI_", "ROLLOUT_LAB_"))}
    env.update(lab.env())
    env["PYTHONPATH"] = str(PACKAGE_ROOT)
    if prompts is not None and tmp_path is not None:
        file = tmp_path / "prompts.json"
        file.write_text(json.dumps(prompts))
        env["ROLLOUT_LAB_PROMPTS_FILE"] = str(file)
    # -S: no site-packages, so no OpenTelemetry: the standard library's path.
    argv = [sys.executable, *(["-S"] if stdlib_only else []), str(AGENT), *args]
    return subprocess.run(argv, input=json.dumps(TASK), capture_output=True, text=True, env=env, timeout=120, check=False)


def plain_value(v: dict[str, Any]) -> Any:
    if "stringValue" in v:
        return v["stringValue"]
    if "intValue" in v:
        return int(v["intValue"])
    if "doubleValue" in v:
        return float(v["doubleValue"])
    if "boolValue" in v:
        return v["boolValue"]
    if "arrayValue" in v:
        return [plain_value(x) for x in v["arrayValue"].get("values", [])]
    return None


def attrs(kvs: list[dict[str, Any]]) -> dict[str, Any]:
    return {kv["key"]: plain_value(kv["value"]) for kv in kvs}


def exported(lab: FakeLab) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The resource and the spans of every OTLP request the agent sent, in OTLP/JSON's shape whichever encoding came."""
    resource: dict[str, Any] = {}
    spans: list[dict[str, Any]] = []
    for req in lab.posted("/v1/traces"):
        if req["headers"].get("content-type", "").startswith("application/x-protobuf"):
            from google.protobuf.json_format import MessageToDict
            from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

            msg = ExportTraceServiceRequest()
            msg.ParseFromString(req["body"])
            doc = MessageToDict(msg)
            # The protobuf JSON mapping writes bytes (ids) as base64: back to the hex of OTLP/JSON.
            for rs in doc.get("resourceSpans", []):
                for ss in rs.get("scopeSpans", []):
                    for s in ss.get("spans", []):
                        for k in ("traceId", "spanId", "parentSpanId"):
                            if s.get(k):
                                import base64

                                s[k] = base64.b64decode(s[k]).hex()
        else:
            doc = json.loads(req["body"])
        for rs in doc.get("resourceSpans", []):
            resource.update(attrs(rs.get("resource", {}).get("attributes", [])))
            for ss in rs.get("scopeSpans", []):
                for s in ss.get("spans", []):
                    spans.append(
                        {
                            "name": s["name"],
                            "traceId": s["traceId"],
                            "spanId": s["spanId"],
                            "parent": s.get("parentSpanId") or None,
                            "attributes": attrs(s.get("attributes", [])),
                            "events": [(e["name"], attrs(e.get("attributes", []))) for e in s.get("events", [])],
                            "status": s.get("status", {}),
                        }
                    )
    return resource, spans


def check_rollout(lab: FakeLab, result: subprocess.CompletedProcess[str]) -> list[dict[str, Any]]:
    """What either tracing path must give the lab: the final line, the chat call as Support, the spans and the rewards."""
    assert result.returncode == 0, result.stderr
    last = result.stdout.strip().splitlines()[-1]
    assert json.loads(last) == {"note": "extra field", "final_output": '{"queue": "tech"}', "decision": "tech", "turns": 1, "failures": []}

    [chat] = lab.posted("/chat/completions")
    assert chat["path"] == f"/rollouts/{ROLLOUT_ID}/agents/Support/v1/chat/completions", "the agent's own gateway URL"
    assert chat["headers"]["x-rollout-lab-agent"] == "Support"
    body = json.loads(chat["body"])
    assert body["messages"][1] == {"role": "user", "content": TASK["goal"]}

    resource, spans = exported(lab)
    assert resource["rollout_lab.rollout.id"] == ROLLOUT_ID
    assert resource["rollout_lab.task.id"] == "T,1", "percent-decoded from OTEL_RESOURCE_ATTRIBUTES"
    assert resource["service.name"] == "support-test"
    by_name = {s["name"]: s for s in spans}
    agent = by_name["invoke_agent Support"]
    assert agent["attributes"]["gen_ai.operation.name"] == "invoke_agent"
    assert agent["attributes"]["gen_ai.agent.name"] == "Support"
    assert all(s["traceId"] == ROLLOUT_ID for s in spans), "the rollout's id is the trace id"
    # The chat call carried the trace context of the span it was made in.
    assert chat["headers"]["traceparent"] == f"00-{ROLLOUT_ID}-{agent['spanId']}-01"

    tool = by_name["execute_tool lookup_customer"]
    assert tool["parent"] == agent["spanId"]
    assert tool["attributes"]["gen_ai.tool.name"] == "lookup_customer"
    assert tool["attributes"]["gen_ai.tool.call.id"] == "call_1"
    assert json.loads(tool["attributes"]["gen_ai.tool.call.arguments"]) == {"id": "C-17"}
    assert json.loads(tool["attributes"]["gen_ai.tool.call.result"]) == {"id": "C-17", "plan": "pro"}
    assert tool["events"] == [("gen_ai.evaluation.result", {"gen_ai.evaluation.name": "found_customer", "gen_ai.evaluation.score.value": 0.25, "gen_ai.evaluation.explanation": "C-17 exists"})]
    failing = by_name["execute_tool escalate"]
    assert failing["status"].get("code") in (2, "STATUS_CODE_ERROR")
    assert failing["status"].get("message") == "no on-call engineer"
    assert agent["events"] == [("gen_ai.evaluation.result", {"gen_ai.evaluation.name": "answered", "gen_ai.evaluation.score.value": 1.0})]
    return spans


def test_the_standard_library_path_sends_the_spans_as_otlp_json(fake_lab: FakeLab) -> None:
    check_rollout(fake_lab, run_agent(fake_lab, stdlib_only=True))
    assert all(r["headers"]["content-type"] == "application/json" for r in fake_lab.posted("/v1/traces"))


def test_with_the_opentelemetry_sdk_the_spans_go_through_its_otlp_http_exporter(fake_lab: FakeLab) -> None:
    try:
        import opentelemetry.sdk  # noqa: F401
    except ImportError:
        pytest.fail(f"{sys.executable} has no opentelemetry-sdk: run these tests with the agents' venv (scripts/setupAgentVenv.sh, then .venv-agents/bin/python -m pytest python-agent/tests)")
    check_rollout(fake_lab, run_agent(fake_lab, stdlib_only=False))
    assert all(r["headers"]["content-type"] == "application/x-protobuf" for r in fake_lab.posted("/v1/traces")), "the OTLP/HTTP protobuf exporter"


@pytest.mark.parametrize("stdlib_only", [True, False])
def test_a_reward_outside_any_span_gets_a_span_of_its_own(fake_lab: FakeLab, stdlib_only: bool) -> None:
    result = run_agent(fake_lab, stdlib_only=stdlib_only, args=("--reward-outside",))
    assert result.returncode == 0, result.stderr
    _, spans = exported(fake_lab)
    [own] = [s for s in spans if s["name"] == "evaluation late"]
    assert own["events"] == [("gen_ai.evaluation.result", {"gen_ai.evaluation.name": "late", "gen_ai.evaluation.score.value": -0.5, "gen_ai.agent.name": "Reviewer"})]
    assert "gen_ai.agent.name" not in own["attributes"], "the carrier span is no agent's step"


def test_the_labs_prompt_replaces_the_agents_default(fake_lab: FakeLab, tmp_path: Path) -> None:
    result = run_agent(fake_lab, stdlib_only=True, prompts={"Support": "You are Support, from the lab."}, tmp_path=tmp_path)
    assert result.returncode == 0, result.stderr
    [chat] = fake_lab.posted("/chat/completions")
    assert json.loads(chat["body"])["messages"][0] == {"role": "system", "content": "You are Support, from the lab."}


def test_bad_input_is_an_error_that_says_what_came(fake_lab: FakeLab) -> None:
    env = {**os.environ, **fake_lab.env(), "PYTHONPATH": str(PACKAGE_ROOT)}
    for stdin, expected in [("", "standard input is empty"), ("not json", "standard input is not JSON"), ("[1]", "must be a JSON object, got list")]:
        r = subprocess.run([sys.executable, "-S", str(AGENT)], input=stdin, capture_output=True, text=True, env=env, timeout=60, check=False)
        assert r.returncode != 0
        assert expected in r.stderr, r.stderr
        assert not fake_lab.posted("/chat/completions")
