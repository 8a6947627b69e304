import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request

import pytest

from conftest import GOLDEN, ROOT
from rollout_trainer.serve import parse_tool_calls, vllm_argv


def call(url, body=None, key=None):
    req = urllib.request.Request(url, data=json.dumps(body).encode() if body is not None else None, headers={"content-type": "application/json", **({"authorization": f"Bearer {key}"} if key else {})}, method="POST" if body is not None else "GET")
    try:
        with urllib.request.urlopen(req, timeout=120) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


@pytest.fixture
def server(bundle):
    path = bundle("serve", None, {"max_new_tokens": 24, "learning_rate": 0.001, "max_steps": 1, "batch_size": 2, "kl_coef": 0.0}, ", servedName: policy")
    env = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "PYTHONUNBUFFERED": "1", "ROLLOUT_TRAINER_API_KEY": "k3y"}
    proc = subprocess.Popen([sys.executable, "-m", "rollout_trainer", "serve", "--spec", "job.yaml"], cwd=path.parent, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    serving = path.parent / "out" / "serving.json"
    for _ in range(300):
        if serving.exists() or proc.poll() is not None:
            break
        time.sleep(0.1)
    assert serving.exists(), proc.stderr.read() if proc.poll() is not None else "no serving.json"
    url = json.loads(serving.read_text())["url"]
    yield proc, url.rsplit("/v1", 1)[0], path.parent
    if proc.poll() is None:
        proc.kill()


def test_tool_calls_in_the_text_become_openai_tool_calls():
    text, calls = parse_tool_calls('Looking.<tool_call>{"name": "pubmed_search", "arguments": {"query": "tau"}}</tool_call>')
    assert text == "Looking."
    assert calls == [{"id": "call_0", "type": "function", "function": {"name": "pubmed_search", "arguments": '{"query": "tau"}'}}]
    assert parse_tool_calls("<tool_call>{broken</tool_call>") == ("<tool_call>{broken</tool_call>", [])


def test_vllm_is_started_with_lora_and_an_argument_array():
    argv = vllm_argv("Qwen/Qwen2.5-1.5B-Instruct", "policy", 8123, 16, "/b/adapter")
    assert argv[1:] == ["-m", "vllm.entrypoints.openai.api_server", "--model", "Qwen/Qwen2.5-1.5B-Instruct", "--served-model-name", "Qwen/Qwen2.5-1.5B-Instruct",
                        "--host", "127.0.0.1", "--port", "8123", "--enable-lora", "--max-lora-rank", "16", "--lora-modules", "policy=/b/adapter"]


def test_the_server_answers_openai_requests_trains_on_groups_and_stops_cleanly(server):
    proc, base, bundle_dir = server
    assert call(f"{base}/v1/models")[0] == 401, "the bearer token is required when set"
    status, body = call(f"{base}/v1/models", key="k3y")
    assert status == 200 and json.loads(body)["data"][0]["id"] == "policy"
    req = {"model": "policy", "messages": [{"role": "user", "content": "Hello"}], "max_tokens": 8, "logprobs": True, "return_token_ids": True, "seed": 1, "temperature": 0.8}
    status, body = call(f"{base}/v1/chat/completions", req, key="k3y")
    assert status == 200, body
    out = json.loads(body)
    choice = out["choices"][0]
    assert len(choice["token_ids"]) == len(choice["logprobs"]["content"]) == out["usage"]["completion_tokens"]
    assert all(t["logprob"] <= 0 for t in choice["logprobs"]["content"])
    assert call(f"{base}/v1/chat/completions", {**req, "model": "other"}, key="k3y")[0] == 404
    status, body = call(f"{base}/v1/chat/completions", {"model": "policy"}, key="k3y")
    assert status == 400 and "messages" in json.loads(body)["error"]["message"]
    records = [json.loads(l) for l in (GOLDEN / "rl-equal.jsonl").read_text().splitlines()]
    status, body = call(f"{base}/control/train", {"records": [{"bad": 1}]}, key="k3y")
    assert status == 400 and "records[0]" in body
    status, body = call(f"{base}/control/train", {"records": records}, key="k3y")
    assert status == 200, body
    trained = json.loads(body)
    assert trained["version"] == "policy-v1"
    assert (bundle_dir / "out" / "versions" / "policy-v1" / "tiny_model.pt").exists()
    assert json.loads(call(f"{base}/control/version", key="k3y")[1])["version"] == "policy-v1"
    assert json.loads(call(f"{base}/control/metrics", key="k3y")[1])["metrics"]
    assert call(f"{base}/v1/chat/completions", {**req, "model": "policy-v1"}, key="k3y")[0] == 200
    status, body = call(f"{base}/control/load", {"adapter": "out/versions/policy-v1", "version": "again"}, key="k3y")
    assert status == 200 and json.loads(body)["version"] == "again"
    assert call(f"{base}/v1/chat/completions", {**req, "model": "policy-v1"}, key="k3y")[0] == 404, "an older version is no longer served"
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=30) == 0
    assert json.loads((bundle_dir / "out" / "result.json").read_text())["status"] == "succeeded"
