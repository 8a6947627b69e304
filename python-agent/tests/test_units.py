"""The helper's parts on their own: the environment, the task, the final output line, the trace context."""

from __future__ import annotations

import io
import json

import pytest
from fake_lab import ROLLOUT_ID, FakeLab

from rollout_lab_agent import LabEnvironmentError, TaskInputError, final_output_line, lab_environment, read_task, setup
from rollout_lab_agent.lab_env import resource_attributes, traces_endpoint


def test_resource_attributes_are_percent_decoded_pairs() -> None:
    assert resource_attributes("a=1, b=x%2Cy,broken,c==d") == {"a": "1", "b": "x,y", "c": "=d"}


def test_the_traces_endpoint_follows_the_otlp_http_rule() -> None:
    assert traces_endpoint({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://h/x"}) == "http://h/x"
    assert traces_endpoint({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://h:4318/"}) == "http://h:4318/v1/traces"
    assert traces_endpoint({}) is None


def test_each_agent_has_its_own_base_url_else_the_rollouts() -> None:
    lab = FakeLab()
    try:
        env = lab_environment(lab.env())
        assert env.in_lab and env.seed == 7 and env.sample == 0
        assert env.agent_base_url("Support") == f"{lab.url}/rollouts/{ROLLOUT_ID}/agents/Support/v1"
        assert env.agent_base_url("Stranger") == f"{lab.url}/rollouts/{ROLLOUT_ID}/v1"
    finally:
        lab.close()


def test_an_unusable_environment_says_which_variable() -> None:
    with pytest.raises(LabEnvironmentError, match="ROLLOUT_LAB_AGENT_BASE_URLS is not JSON"):
        lab_environment({"ROLLOUT_LAB_AGENT_BASE_URLS": "{oops"})
    with pytest.raises(LabEnvironmentError, match="agent name to URL"):
        lab_environment({"ROLLOUT_LAB_AGENT_BASE_URLS": '["a"]'})
    with pytest.raises(LabEnvironmentError, match="ROLLOUT_LAB_SEED must be an integer"):
        lab_environment({"ROLLOUT_LAB_SEED": "x"})


def test_the_task_is_one_json_object() -> None:
    assert read_task(io.StringIO('{"id": "t", "goal": "g"}\n')) == {"id": "t", "goal": "g"}
    with pytest.raises(TaskInputError, match="empty"):
        read_task(io.StringIO("  \n"))


def test_the_final_output_line_is_what_the_lab_parses() -> None:
    assert json.loads(final_output_line("bill")) == {"final_output": "bill", "failures": []}
    assert json.loads(final_output_line({"queue": "tech"}, turns=2))["final_output"] == '{"queue": "tech"}'
    assert json.loads(final_output_line(None, failures=[{"agent": "A", "error": "boom"}])) == {"final_output": None, "failures": [{"agent": "A", "error": "boom"}]}
    with pytest.raises(ValueError, match="turns"):
        final_output_line("x", turns=-1)
    with pytest.raises(ValueError, match="each failure"):
        final_output_line("x", failures=[{"agent": "A"}])


def test_setup_in_process_reads_the_given_streams_and_finish_prints_once() -> None:
    lab = FakeLab()
    try:
        out = io.StringIO()
        run = setup("Support", use_otel=False, stdin=io.StringIO('{"id": "t", "goal": "g"}'), stdout=out, env=lab.env())
        with run.agent_span():
            assert run.trace_headers()["traceparent"].startswith(f"00-{ROLLOUT_ID}-")
        assert run.trace_headers() == {}, "no span open: no trace context"
        run.fail("the tool timed out")
        run.finish("done", turns=0)
        assert json.loads(out.getvalue().strip().splitlines()[-1]) == {"final_output": "done", "turns": 0, "failures": [{"agent": "Support", "error": "the tool timed out"}]}
        with pytest.raises(RuntimeError, match="twice"):
            run.finish("again")
        with pytest.raises(TypeError, match="a reward is a number"):
            run.emit_reward(True)
    finally:
        lab.close()


def test_the_httpx_client_sends_the_current_spans_trace_context() -> None:
    import httpx
    lab = FakeLab()
    try:
        run = setup("Support", use_otel=False, stdin=io.StringIO('{"id": "t"}'), stdout=io.StringIO(), env=lab.env())
        with httpx.Client() as plain:
            plain.post(f"{lab.url}/plain", content=b"{}")
        with run.http_client() as client, run.agent_span():
            client.post(f"{lab.url}/traced", content=b"{}")
            expected = run.trace_headers()["traceparent"]
        assert "traceparent" not in lab.posted("/plain")[0]["headers"]
        assert lab.posted("/traced")[0]["headers"]["traceparent"] == expected
        run.flush()
    finally:
        lab.close()
