"""The policy server on a one-layer Qwen2 built from a config: the OpenAI endpoints, the control API, errors,
and a clean stop on SIGTERM. Servers listen on 127.0.0.1 port 0; most run in a thread of
the test process, one as the real `python -m rollout_trainer serve` subprocess."""

import json
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
import torch
from conftest import GOLDEN, ROOT

from rollout_trainer.backends import load_policy
from rollout_trainer.backends.common import Sampled
from rollout_trainer.data import check_tools
from rollout_trainer.errors import SpecError
from rollout_trainer.events import Emitter
from rollout_trainer.serve import build_app, open_server, public_url
from rollout_trainer.serving.control import Controller
from rollout_trainer.serving.http import App
from rollout_trainer.serving.protocol import ApiError, parse_chat_request
from rollout_trainer.serving.toolcalls import parse_tool_calls
from rollout_trainer.serving.vllm import VllmEngine, lora_rank_for, vllm_argv, wants_vllm
from rollout_trainer.spec import load_spec

HP = {"max_new_tokens": 12, "learning_rate": 0.001, "max_steps": 1, "batch_size": 2}
HELLO = {"model": "policy", "messages": [{"role": "user", "content": "Hello"}], "max_tokens": 8, "seed": 3, "temperature": 0.8}


def golden_records():
    return [json.loads(line) for line in (GOLDEN / "rl-equal.jsonl").read_text(encoding="utf-8").splitlines() if line.strip()]


class Served:
    """A server running in a thread, and a small urllib client for it."""

    def __init__(self, app, httpd, bundle_dir):
        self.app, self.httpd, self.bundle_dir = app, httpd, bundle_dir
        self.base = f"http://127.0.0.1:{httpd.server_address[1]}"
        self.policy = app.controller.policy

    def call(self, path, body=None, key=None, raw=None, method=None):
        data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
        headers = {"content-type": "application/json", **({"authorization": f"Bearer {key}"} if key else {})}
        req = urllib.request.Request(self.base + path, data=data, headers=headers, method=method or ("POST" if data is not None else "GET"))
        try:
            with urllib.request.urlopen(req, timeout=120) as res:
                return res.status, dict(res.headers.items()), res.read().decode()
        except urllib.error.HTTPError as exc:
            return exc.code, dict(exc.headers.items()), exc.read().decode()

    def json(self, path, body=None, **kw):
        status, _, text = self.call(path, body, **kw)
        return status, json.loads(text)


@pytest.fixture
def serve(bundle):
    """Starts a server on a fresh bundle (servedName policy); stops it after the test."""
    running = []

    def start(hp=None, api_key=None):
        path = bundle("serve", None, {**HP, **(hp or {})}, ", servedName: policy")
        spec = load_spec(str(path))
        app = build_app(spec, Emitter(spec.out), api_key)
        httpd = open_server(app, "127.0.0.1", 0)
        thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        thread.start()
        running.append((httpd, thread))
        return Served(app, httpd, path.parent)

    yield start
    for httpd, thread in running:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=30)


# -- pure parts ------------------------------------------------------------------------------
def test_tool_call_blocks_become_openai_tool_calls():
    text, calls = parse_tool_calls('Looking.<tool_call>{"name": "pubmed_search", "arguments": {"query": "tau"}}</tool_call>')
    assert text == "Looking."
    assert calls == [{"id": "call_0", "type": "function", "function": {"name": "pubmed_search", "arguments": '{"query": "tau"}'}}]
    content, calls = parse_tool_calls('<tool_call>{"name": "a", "arguments": "{\\"x\\": 1}"}</tool_call>\n<tool_call>{"name": "b"}</tool_call>', first_id=7)
    assert content is None
    assert [(c["id"], c["function"]["name"], json.loads(c["function"]["arguments"])) for c in calls] == [("call_7", "a", {"x": 1}), ("call_8", "b", {})]


def test_malformed_tool_calls_stay_in_the_text():
    for text in ("<tool_call>{broken</tool_call>", '<tool_call>{"arguments": {}}</tool_call>', '<tool_call>{"name": "a", "arguments": [1]}</tool_call>',
                 '<tool_call>{"name": "a", "arguments": "not json"}</tool_call>', '<tool_call>{"name": "a"}', "plain answer"):
        assert parse_tool_calls(text) == (text, [])
    content, calls = parse_tool_calls('<tool_call>{bad}</tool_call> then <tool_call>{"name": "ok", "arguments": {}}</tool_call>')
    assert content == "<tool_call>{bad}</tool_call> then" and [c["function"]["name"] for c in calls] == ["ok"]


def test_vllm_is_started_as_an_argument_array_with_lora_enabled():
    argv = vllm_argv("Qwen/Qwen2.5-1.5B-Instruct", "policy", 8123, 12, executable="/venv/bin/vllm")
    assert argv == ["/venv/bin/vllm", "serve", "Qwen/Qwen2.5-1.5B-Instruct", "--enable-lora", "--max-lora-rank", "16", "--port", "8123",
                    "--host", "127.0.0.1", "--served-model-name", "policy", "--gpu-memory-utilization", "0.45"]
    assert vllm_argv("m; rm -rf /", "p", 1, 16, extra=["--max-model-len", "8192"])[2:3] == ["m; rm -rf /"]
    assert vllm_argv("m", "p", 1, 16, extra=["--max-model-len", "8192"])[-2:] == ["--max-model-len", "8192"]
    assert [lora_rank_for(r) for r in (1, 8, 9, 64, 300, 1024)] == [8, 8, 16, 64, 320, 1024]


def test_the_engine_setting_decides_whether_vllm_serves():
    assert wants_vllm("auto", True) and wants_vllm("vllm", True)
    assert not wants_vllm("auto", False) and not wants_vllm("transformers", True)
    with pytest.raises(SpecError, match="not installed"):
        wants_vllm("vllm", False)


def test_requests_are_read_field_by_field():
    req = parse_chat_request({"messages": [{"role": "developer", "content": [{"type": "text", "text": "Be "}, {"type": "text", "text": "brief."}]},
                                           {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": {"a": 1}}}]},
                                           {"role": "tool", "content": "42", "tool_call_id": "c1"}],
                              "max_tokens": 5, "max_completion_tokens": 9, "stop": "END", "tool_choice": "none", "user": "ignored"})
    assert req.messages[0] == {"role": "system", "content": "Be brief."}
    assert req.messages[1]["tool_calls"][0]["function"] == {"name": "f", "arguments": '{"a": 1}'} and req.messages[1]["content"] == ""
    assert req.messages[2] == {"role": "tool", "content": "42", "tool_call_id": "c1"}
    assert (req.max_tokens, req.stop, req.parse_tools, req.temperature, req.top_p) == (9, ["END"], False, 1.0, 1.0)
    for body, param in (({"messages": []}, "messages"), ({**HELLO, "top_p": 0}, "top_p"), ({**HELLO, "seed": 1.5}, "seed"), ({**HELLO, "stop": [1]}, "stop"),
                        ({**HELLO, "messages": [{"role": "robot", "content": "x"}]}, "messages[0].role"), ({**HELLO, "logprobs": "yes"}, "logprobs")):
        with pytest.raises(ApiError) as err:
            parse_chat_request(body)
        assert err.value.status == 400 and err.value.param == param


def test_a_request_s_tools_reach_the_template_as_the_training_examples_gave_them():
    """zod-made tool schemas carry "$schema" and come in the sender's key order; the export
    leaves the marker out. Both are read into one shape, so the served prompt is the trained one."""
    sent = {"function": {"parameters": {"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object",
                                        "properties": {"item": {"type": "string"}}, "required": ["item"]},
                         "description": "The price of an item.", "name": "get_price"}, "type": "function"}
    exported = {"type": "function", "function": {"name": "get_price", "description": "The price of an item.",
                                                 "parameters": {"type": "object", "properties": {"item": {"type": "string"}}, "required": ["item"]}}}
    served = parse_chat_request({**HELLO, "tools": [sent]}).tools
    assert served == check_tools([exported], "line 1") == check_tools([sent], "line 1")
    assert json.dumps(served) == json.dumps([exported]), "same keys in the same order: the template writes them as JSON"
    with pytest.raises(ApiError) as err:
        parse_chat_request({**HELLO, "tools": [{"type": "function"}]})
    assert err.value.param == "tools[0]"


def test_the_announced_url_is_one_a_client_can_reach():
    assert public_url("0.0.0.0", 8000) == "http://127.0.0.1:8000/v1"
    assert public_url("10.1.2.3", 8000) == "http://10.1.2.3:8000/v1"
    assert public_url("::", 9) == "http://[::1]:9/v1"


# -- the OpenAI endpoints ----------------------------------------------------------------------
def test_models_lists_the_served_name(serve):
    s = serve()
    status, body = s.json("/v1/models")
    assert status == 200 and body["object"] == "list"
    assert [(m["id"], m["current"]) for m in body["data"]] == [("policy", True)]


def test_a_completion_reports_its_tokens_logprobs_and_usage(serve):
    s = serve()
    req = {**HELLO, "logprobs": True, "return_token_ids": True}
    status, out = s.json("/v1/chat/completions", req)
    assert status == 200, out
    assert out["object"] == "chat.completion" and out["model"] == "policy" and out["id"].startswith("chatcmpl-")
    choice = out["choices"][0]
    ids, content = choice["token_ids"], choice["logprobs"]["content"]
    assert choice["message"]["role"] == "assistant" and choice["finish_reason"] in ("stop", "length")
    assert len(ids) == len(content) == out["usage"]["completion_tokens"] <= 8
    assert choice["finish_reason"] == "stop" or len(ids) == 8
    assert all(t["logprob"] <= 0 and t["top_logprobs"] == [] and isinstance(t["bytes"], list) for t in content)
    tok = s.policy.tokenizer
    assert [t["token"] for t in content] == [tok.token_text(i) for i in ids]
    assert tok.decode(ids) == choice["message"]["content"]
    assert out["prompt_token_ids"] == tok.encode(tok.render(req["messages"], None, add_generation_prompt=True))
    assert out["usage"]["prompt_tokens"] == len(out["prompt_token_ids"])
    assert out["usage"]["total_tokens"] == out["usage"]["prompt_tokens"] + out["usage"]["completion_tokens"]
    again = s.json("/v1/chat/completions", req)[1]["choices"][0]
    assert again["token_ids"] == ids, "the same seed samples the same completion"
    plain = s.json("/v1/chat/completions", HELLO)[1]["choices"][0]
    assert plain["logprobs"] is None and "token_ids" not in plain


def test_the_kv_cache_setting_switches_decoding_not_the_answer(serve):
    cached, recomputing = serve(), serve({"kv_cache": False})
    assert cached.policy.kv_cache is True and recomputing.policy.kv_cache is False
    req = {**HELLO, "logprobs": True, "return_token_ids": True}
    a = cached.json("/v1/chat/completions", req)[1]["choices"][0]
    b = recomputing.json("/v1/chat/completions", req)[1]["choices"][0]
    assert a["token_ids"] == b["token_ids"] and a["message"] == b["message"]
    assert [t["logprob"] for t in a["logprobs"]["content"]] == pytest.approx([t["logprob"] for t in b["logprobs"]["content"]], abs=1e-5)


def test_a_stream_carries_the_same_completion_as_sse_chunks(serve):
    s = serve()
    req = {**HELLO, "logprobs": True, "return_token_ids": True}
    whole = s.json("/v1/chat/completions", req)[1]
    status, headers, text = s.call("/v1/chat/completions", {**req, "stream": True, "stream_options": {"include_usage": True}})
    assert status == 200 and headers["content-type"] == "text/event-stream"
    events = [line[len("data: "):] for line in text.split("\n\n") if line.startswith("data: ")]
    assert events[-1] == "[DONE]"
    chunks = [json.loads(e) for e in events[:-1]]
    assert all(c["object"] == "chat.completion.chunk" and c["id"] == chunks[0]["id"] for c in chunks)
    deltas = [c["choices"][0] for c in chunks if c["choices"]]
    assert deltas[0]["delta"]["role"] == "assistant"
    assert "".join(d["delta"].get("content") or "" for d in deltas) == whole["choices"][0]["message"]["content"]
    assert [i for d in deltas for i in d.get("token_ids", [])] == whole["choices"][0]["token_ids"]
    assert [t["token"] for d in deltas if d.get("logprobs") for t in d["logprobs"]["content"]] == [t["token"] for t in whole["choices"][0]["logprobs"]["content"]]
    assert deltas[-1]["finish_reason"] == whole["choices"][0]["finish_reason"]
    assert chunks[0]["prompt_token_ids"] == whole["prompt_token_ids"]
    assert chunks[-1]["choices"] == [] and chunks[-1]["usage"] == whole["usage"]


def streamed_logprobs(text):
    """The logprobs.content entries of a server-sent-event stream, in order."""
    chunks = [json.loads(e[len("data: "):]) for e in text.split("\n\n") if e.startswith("data: {")]
    return [e for c in chunks for choice in c["choices"] for e in (choice.get("logprobs") or {}).get("content") or []]


def test_top_logprobs_are_the_most_likely_tokens_where_each_token_was_sampled(serve):
    s = serve()
    tok = s.policy.tokenizer
    req = {**HELLO, "max_tokens": 10, "temperature": 1.0, "logprobs": True, "top_logprobs": 4, "return_token_ids": True}
    status, out = s.json("/v1/chat/completions", req)
    assert status == 200, out
    choice = out["choices"][0]
    ids, content = choice["token_ids"], choice["logprobs"]["content"]
    seq = out["prompt_token_ids"] + ids
    with torch.no_grad(), s.policy.eval_mode():
        x = torch.tensor([seq])
        logits = s.policy.forward_logits(x, torch.ones_like(x))[0, len(out["prompt_token_ids"]) - 1 : -1]
    reference = torch.log_softmax(logits.float(), dim=-1)
    for n, (i, entry) in enumerate(zip(ids, content)):
        top = entry["top_logprobs"]
        lps = [t["logprob"] for t in top]
        assert len(top) == 4 and lps == sorted(lps, reverse=True) and all(lp <= 0 for lp in lps)
        assert lps == pytest.approx(torch.topk(reference[n], 4).values.tolist(), abs=1e-4), "the 4 largest of a softmax of the logits at that position"
        assert lps == pytest.approx(reference[n][[t["id"] for t in top]].tolist(), abs=1e-4)
        assert all(t["token"] == tok.token_text(t["id"]) and t["bytes"] == list(t["token"].encode("utf-8")) for t in top)
        same = [t["logprob"] for t in top if t["id"] == i]
        assert same == [entry["logprob"]] or (not same and entry["logprob"] <= lps[-1])
    greedy = s.json("/v1/chat/completions", {**req, "temperature": 0})[1]["choices"][0]
    assert all(e["top_logprobs"][0]["id"] == i and e["top_logprobs"][0]["logprob"] == e["logprob"] for i, e in zip(greedy["token_ids"], greedy["logprobs"]["content"])), \
        "the sampled token's own logprob is the one reported for it among the alternatives"

    assert streamed_logprobs(s.call("/v1/chat/completions", {**req, "stream": True})[2]) == content, "a stream carries the same alternatives"

    none = s.json("/v1/chat/completions", {**req, "top_logprobs": 0})[1]["choices"][0]
    assert none["token_ids"] == ids and all(e["top_logprobs"] == [] for e in none["logprobs"]["content"])
    assert [e["logprob"] for e in none["logprobs"]["content"]] == [e["logprob"] for e in content], "asking for alternatives changes nothing else"
    streamed_none = streamed_logprobs(s.call("/v1/chat/completions", {**req, "top_logprobs": 0, "stream": True, "stream_options": {"include_usage": True}})[2])
    assert len(streamed_none) == len(ids) and all(e["top_logprobs"] == [] for e in streamed_none)
    assert len(s.json("/v1/chat/completions", {**req, "top_logprobs": 20})[1]["choices"][0]["logprobs"]["content"][0]["top_logprobs"]) == 20


def test_response_format_is_refused_since_decoding_is_not_constrained(serve):
    s = serve()
    formats = ({"type": "json_object"}, {"type": "json_schema", "json_schema": {"name": "answer", "schema": {"type": "object"}, "strict": True}})
    for fmt in formats:
        for stream in (False, True):
            status, out = s.json("/v1/chat/completions", {**HELLO, "response_format": fmt, "stream": stream, "logprobs": True})
            err = out["error"]
            assert status == 400 and err["param"] == "response_format" and err["type"] == "invalid_request_error", out
            assert fmt["type"] in err["message"] and "does not constrain decoding" in err["message"] and "read the JSON from the completion's text" in err["message"]
    assert s.json("/v1/chat/completions", {**HELLO, "response_format": {"type": "text"}})[0] == 200, "plain text is what it answers anyway"
    assert s.json("/v1/chat/completions", {**HELLO, "response_format": None})[0] == 200


def test_the_openai_client_talks_to_the_server(serve):
    import openai
    s = serve()
    client = openai.OpenAI(base_url=f"{s.base}/v1", api_key="unused")
    out = client.chat.completions.create(model="policy", messages=[{"role": "user", "content": "Hi"}], max_tokens=4, seed=1, logprobs=True, top_logprobs=2)
    assert out.choices[0].message.role == "assistant" and len(out.choices[0].logprobs.content) == out.usage.completion_tokens
    assert all(len(t.top_logprobs) == 2 for t in out.choices[0].logprobs.content)
    streamed = list(client.chat.completions.create(model="policy", messages=[{"role": "user", "content": "Hi"}], max_tokens=4, seed=1, stream=True))
    assert streamed[-1].choices[0].finish_reason in ("stop", "length")


def scripted(monkeypatch, policy, text):
    """Makes the policy 'generate' this text (then end of turn), with made-up logprobs: the
    sampled token at -0.5 and, when asked for, alternatives counting down from it."""
    tok = policy.tokenizer
    ids = tok.encode(text) + [tok.eos_token_id]

    def generate(prompt_ids, max_new_tokens, temperature, top_p, seed, stop_ids=None, top_logprobs=0):
        out = ids[:max_new_tokens]
        for n, i in enumerate(out):
            if stop_ids and i in stop_ids:
                out = out[: n + 1]
                break
        top = [[(i, -0.5)] + [((i + j) % 256, -0.5 - j) for j in range(1, top_logprobs)] if top_logprobs else [] for i in out]
        return Sampled(list(out), [-0.5] * len(out), top)

    monkeypatch.setattr(policy, "generate", generate)
    return ids


TOOLS = [{"type": "function", "function": {"name": "protein_lookup", "description": "Look up a protein.", "parameters": {"type": "object", "properties": {"name": {"type": "string"}}}}}]


def test_tool_calls_the_model_writes_come_back_as_tool_calls(serve, monkeypatch):
    s = serve()
    ids = scripted(monkeypatch, s.policy, 'Checking.<tool_call>{"name": "protein_lookup", "arguments": {"name": "GLP-1"}}</tool_call>')
    req = {**HELLO, "max_tokens": 200, "tools": TOOLS, "return_token_ids": True, "logprobs": True}
    choice = s.json("/v1/chat/completions", req)[1]["choices"][0]
    assert choice["finish_reason"] == "tool_calls" and choice["message"]["content"] == "Checking."
    call = choice["message"]["tool_calls"][0]
    assert call["type"] == "function" and call["id"].startswith("call_")
    assert call["function"] == {"name": "protein_lookup", "arguments": '{"name": "GLP-1"}'}
    assert choice["token_ids"] == ids and len(choice["logprobs"]["content"]) == len(ids), "the sampled ids are reported in full, end of turn included"
    second = s.json("/v1/chat/completions", req)[1]["choices"][0]["message"]["tool_calls"][0]
    assert second["id"] != call["id"], "call ids stay unique over the server's life"
    assert s.json("/v1/chat/completions", {**req, "tool_choice": "none"})[1]["choices"][0]["message"].get("tool_calls") is None
    no_tools = s.json("/v1/chat/completions", {**HELLO, "max_tokens": 200})[1]["choices"][0]
    assert no_tools["finish_reason"] == "stop" and no_tools["message"]["content"].startswith("Checking.<tool_call>")
    streamed = s.call("/v1/chat/completions", {**req, "stream": True})[2]
    chunks = [json.loads(e[6:]) for e in streamed.split("\n\n") if e.startswith("data: {")]
    calls = [tc for c in chunks for tc in c["choices"][0]["delta"].get("tool_calls", [])]
    assert calls[0]["index"] == 0 and calls[0]["function"]["name"] == "protein_lookup" and chunks[-1]["choices"][0]["finish_reason"] == "tool_calls"


def test_stop_strings_end_the_text_and_the_reported_tokens(serve, monkeypatch):
    s = serve()
    tok = s.policy.tokenizer
    scripted(monkeypatch, s.policy, "alpha END beta")
    choice = s.json("/v1/chat/completions", {**HELLO, "max_tokens": 100, "stop": ["END"], "return_token_ids": True, "logprobs": True, "top_logprobs": 2})[1]["choices"][0]
    assert choice["message"]["content"] == "alpha " and choice["finish_reason"] == "stop"
    assert tok.decode(choice["token_ids"]) == "alpha END", "the ids end with the stop string's tokens, as vLLM's do"
    assert [e["top_logprobs"][0]["id"] for e in choice["logprobs"]["content"]] == choice["token_ids"], "the alternatives end where the ids do"
    one = s.json("/v1/chat/completions", {**HELLO, "max_tokens": 100, "stop": "b", "return_token_ids": True})[1]["choices"][0]
    assert one["message"]["content"] == "alpha END " and tok.decode(one["token_ids"]) == "alpha END b"
    cut = s.json("/v1/chat/completions", {**HELLO, "max_tokens": 3})[1]["choices"][0]
    assert cut["finish_reason"] == "length" and cut["message"]["content"] == "alp"


# -- errors -------------------------------------------------------------------------------------
def test_bad_requests_get_openai_style_errors(serve):
    s = serve()

    def error(status, path="/v1/chat/completions", body=None, **kw):
        got, _, text = s.call(path, body, **kw)
        assert got == status, text
        err = json.loads(text)["error"]
        assert set(err) >= {"message", "type", "code"} and err["message"]
        return err

    assert "not valid JSON" in error(400, raw=b"{bad")["message"]
    assert "JSON object" in error(400, raw=b"[1, 2]")["message"]
    assert error(400, body={"model": "policy"})["param"] == "messages"
    assert error(400, body={**HELLO, "n": 2})["param"] == "n"
    assert "temperature" in error(400, body={**HELLO, "temperature": "hot"})["message"]
    assert "text parts" in error(400, body={**HELLO, "messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x"}}]}]})["message"]
    for top in (21, -1, 1.5, "3"):
        assert error(400, body={**HELLO, "logprobs": True, "top_logprobs": top})["param"] == "top_logprobs"
    assert "at most 20" in error(400, body={**HELLO, "logprobs": True, "top_logprobs": 21})["message"]
    assert "logprobs: true" in error(400, body={**HELLO, "top_logprobs": 3})["message"], "alternatives without logprobs have nowhere to go"
    assert error(400, body={**HELLO, "messages": [{"role": "user", "content": "x" * 2000}]})["code"] == "context_length_exceeded"
    unknown = error(404, body={**HELLO, "model": "gpt-4o"})
    assert unknown["code"] == "model_not_found" and unknown["type"] == "invalid_request_error" and "policy" in unknown["message"]
    assert error(404, path="/v1/embeddings", body={})["code"] == "not_found"
    assert error(405, path="/v1/chat/completions", method="GET")["code"] == "method_not_allowed"
    assert s.call("/v1/models")[0] == 200, "the server still answers after errors"


def test_a_bearer_token_is_required_when_one_is_set(serve):
    s = serve(api_key="k3y-secret")
    for key in (None, "wrong"):
        status, headers, text = s.call("/v1/models", key=key)
        assert status == 401 and headers.get("www-authenticate") == "Bearer"
        err = json.loads(text)["error"]
        assert err["type"] == "authentication_error" and "k3y-secret" not in text
    assert s.call("/control/status", key="wrong")[0] == 401
    assert s.call("/v1/chat/completions", HELLO)[0] == 401
    assert s.call("/v1/models", key="k3y-secret")[0] == 200
    assert s.call("/v1/chat/completions", HELLO, key="k3y-secret")[0] == 200


# -- the control API -------------------------------------------------------------------------------
def test_an_update_on_groups_becomes_the_next_version_and_an_adapter_can_be_loaded(serve):
    s = serve()
    status = s.json("/control/status")[1]
    assert {k: status[k] for k in ("state", "version", "base_model", "backend", "device", "steps")} == \
        {"state": "idle", "version": "policy", "base_model": "qwen2-test", "backend": "transformers", "device": "cpu", "steps": 0}
    assert status["uptime_s"] >= 0
    assert s.json("/control/version")[1] == {"version": "policy", "adapter": None}
    assert s.json("/control/metrics")[1] == {"metrics": []}

    records = golden_records()
    code, err = s.json("/control/train", {"records": [records[0], {**records[1], "reward": "high"}]})
    assert code == 400 and "records[1]" in err["error"]["message"] and "reward" in err["error"]["message"]
    code, err = s.json("/control/train", {"records": records, "hyperparameters": {"lr": 1}})
    assert code == 400 and "lr" in err["error"]["message"]
    assert s.json("/control/train", {"records": []})[0] == 400

    code, trained = s.json("/control/train", {"records": records, "hyperparameters": {"max_steps": 2}})
    assert code == 200, trained
    assert trained["version"] == "policy-v1" and trained["adapter"] == "out/versions/policy-v1" and trained["updated"] is True
    assert trained["metrics"]["steps"] == 2 and "loss" in trained["metrics"]
    version_dir = s.bundle_dir / "out" / "versions" / "policy-v1"
    assert (version_dir / "adapter_config.json").exists() and (version_dir / "adapter_model.safetensors").exists()
    assert (version_dir / "base" / "config.json").exists(), "a version carries the model built from the config"
    assert s.json("/control/status")[1]["steps"] == 2 and s.json("/control/status")[1]["version"] == "policy-v1"
    assert s.json("/control/version")[1] == {"version": "policy-v1", "adapter": "out/versions/policy-v1"}
    metrics = s.json("/control/metrics")[1]["metrics"]
    assert [m["step"] for m in metrics] == [1, 2] and all(m["event"] == "metrics" for m in metrics)
    events = [json.loads(line) for line in (s.bundle_dir / "out" / "events.jsonl").read_text().splitlines()]
    assert {"event": "version", "version": "policy-v1", "adapter": "out/versions/policy-v1"} in events
    assert [m["id"] for m in s.json("/v1/models")[1]["data"]] == ["policy", "policy-v1"]
    for name in ("policy", "policy-v1"):
        code, out = s.json("/v1/chat/completions", {**HELLO, "model": name})
        assert code == 200 and out["model"] == "policy-v1"

    code, loaded = s.json("/control/load", {"adapter": "out/versions/policy-v1"})
    assert code == 200 and loaded == {"version": "policy-v2", "adapter": "out/versions/policy-v1"}
    assert s.json("/v1/chat/completions", {**HELLO, "model": "policy-v1"})[1]["error"]["code"] == "model_not_found", "an older version is no longer served"
    code, loaded = s.json("/control/load", {"adapter": str(s.bundle_dir / "out" / "versions" / "policy-v1"), "version": "again"})
    assert code == 200 and loaded["version"] == "again"
    assert s.json("/v1/chat/completions", {**HELLO, "model": "again"})[0] == 200
    assert s.json("/control/train", {"records": records})[1]["version"] == "policy-v3"
    assert s.json("/control/load", {"adapter": "out/nowhere"})[0] == 400
    assert s.json("/control/load", {"adapter": "data"})[1]["error"]["param"] == "adapter", "a folder that is not an adapter is refused"
    assert s.json("/control/load", {"adapter": "out/versions/policy-v1", "version": "policy"})[0] == 400


def test_an_update_without_signal_keeps_the_version(serve):
    s = serve()
    flat = [{**r, "group": "one", "reward": 1.0} for r in golden_records()[:4]]
    code, out = s.json("/control/train", {"records": flat})
    assert code == 200 and out["updated"] is False and out["version"] == "policy" and "no group" in out["note"]
    assert not (s.bundle_dir / "out" / "versions").exists()


def test_status_says_training_while_an_update_waits_and_a_second_one_is_refused(serve):
    s = serve()
    answers = []
    with s.policy.lock:  # a request in progress holds the model
        worker = threading.Thread(target=lambda: answers.append(s.json("/control/train", {"records": golden_records()})))
        worker.start()
        for _ in range(600):
            if s.json("/control/status")[1]["state"] == "training":
                break
            time.sleep(0.05)
        assert s.json("/control/status")[1]["state"] == "training"
        code, busy = s.json("/control/train", {"records": golden_records()})
        assert code == 409 and "already running" in busy["error"]["message"]
    worker.join(timeout=120)
    assert answers and answers[0][0] == 200 and answers[0][1]["version"] == "policy-v1"
    assert s.json("/control/status")[1]["state"] == "idle"


# -- the vLLM engine, against a stand-in for vLLM's server -------------------------------------------
class FakeVllm(BaseHTTPRequestHandler):
    """Answers like `vllm serve` would, and remembers what it was sent."""

    protocol_version = "HTTP/1.1"
    seen: list = []

    def log_message(self, *args):
        return

    def do_POST(self):  # noqa: N802
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        type(self).seen.append((self.path, self.headers.get("authorization"), body))
        if self.path.endswith("_lora_adapter"):
            return self._send(200, b"Success", "text/plain")
        if body.get("max_tokens", 1) < 0:
            return self._send(400, b'{"error": {"message": "max_tokens must be at least 1", "type": "BadRequestError", "code": 400}}')
        if body.get("stream"):
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.send_header("connection", "close")
            self.end_headers()
            for part in ("Hel", "lo"):
                self.wfile.write(b"data: " + json.dumps({"model": body["model"], "choices": [{"index": 0, "delta": {"content": part}}]}).encode() + b"\n\n")
                self.wfile.flush()
            self.wfile.write(b"data: [DONE]\n\n")
            self.close_connection = True
            return None
        return self._send(200, json.dumps({"object": "chat.completion", "model": body["model"], "choices": [{"index": 0, "message": {"role": "assistant", "content": "Hello"},
                                                                                                        "finish_reason": "stop", "token_ids": [1, 2]}]}).encode())

    def _send(self, status, data, ctype="application/json"):
        self.send_response(status)
        self.send_header("content-type", ctype)
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture
def behind_vllm(bundle):
    """The server with its vLLM engine answered by FakeVllm: (Served, spec)."""
    fake = ThreadingHTTPServer(("127.0.0.1", 0), FakeVllm)
    threading.Thread(target=fake.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    FakeVllm.seen = []
    spec = load_spec(str(bundle("serve", None, HP, ", servedName: policy")))
    engine = VllmEngine(["vllm", "serve", "unused"], fake.server_address[1], "policy", "inner-key")
    controller = Controller(spec, load_policy(spec), Emitter(spec.out), publish=engine.publish)
    httpd = open_server(App(controller, engine=engine), "127.0.0.1", 0)
    threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    try:
        yield Served(httpd.app, httpd, spec.bundle_dir), spec
    finally:
        httpd.shutdown()
        httpd.server_close()
        fake.shutdown()
        fake.server_close()


def test_with_vllm_the_chat_goes_through_and_new_versions_are_hot_loaded(behind_vllm):
    s, spec = behind_vllm
    code, out = s.json("/v1/chat/completions", HELLO)
    assert code == 200 and out["choices"][0]["token_ids"] == [1, 2], "vLLM's answer passes through"
    assert FakeVllm.seen[-1] == ("/v1/chat/completions", "Bearer inner-key", {**HELLO, "model": "policy"}), "before any update the served name is vLLM's base model"
    code, headers, text = s.call("/v1/chat/completions", {**HELLO, "stream": True})
    assert code == 200 and headers["content-type"] == "text/event-stream" and text.endswith("data: [DONE]\n\n") and text.count("data: ") == 3
    code, err = s.json("/v1/chat/completions", {**HELLO, "max_tokens": -1})
    assert code == 400 and err["error"]["message"] == "max_tokens must be at least 1", "vLLM's errors pass through too"
    before = len(FakeVllm.seen)
    assert s.json("/v1/chat/completions", {**HELLO, "model": "other"})[0] == 404 and len(FakeVllm.seen) == before

    code, trained = s.json("/control/train", {"records": golden_records()})
    assert code == 200 and trained["version"] == "policy-v1"
    target = str((spec.bundle_dir / "out" / "versions" / "policy-v1").resolve())
    assert FakeVllm.seen[-1] == ("/v1/load_lora_adapter", "Bearer inner-key", {"lora_name": "policy-v1", "lora_path": target})
    s.json("/v1/chat/completions", HELLO)
    assert FakeVllm.seen[-1][2]["model"] == "policy-v1", "the served name now means the newest adapter"

    code, loaded = s.json("/control/load", {"adapter": "out/versions/policy-v1"})
    assert code == 200 and loaded["version"] == "policy-v2"
    assert [(p, b["lora_name"]) for p, _, b in FakeVllm.seen[-2:]] == [("/v1/load_lora_adapter", "policy-v2"), ("/v1/unload_lora_adapter", "policy-v1")]
    assert s.json("/v1/chat/completions", {**HELLO, "model": "policy-v1"})[0] == 404
    s.json("/v1/chat/completions", {**HELLO, "model": "policy-v2"})
    assert FakeVllm.seen[-1][2]["model"] == "policy-v2"


def test_with_vllm_alternatives_and_formats_are_vllms_to_answer_but_not_a_format_with_logprobs(behind_vllm):
    s, _ = behind_vllm
    schema = {"type": "json_schema", "json_schema": {"name": "answer", "schema": {"type": "object"}}}
    for body in ({**HELLO, "logprobs": True, "top_logprobs": 5}, {**HELLO, "response_format": schema}, {**HELLO, "response_format": {"type": "json_object"}, "logprobs": False},
                 {**HELLO, "response_format": {"type": "text"}, "logprobs": True, "top_logprobs": 1}):
        assert s.json("/v1/chat/completions", body)[0] == 200
        assert FakeVllm.seen[-1][2] == {**body, "model": "policy"}, "passed to vLLM as sent"
    before = len(FakeVllm.seen)
    for fmt in (schema, {"type": "json_object"}):
        code, out = s.json("/v1/chat/completions", {**HELLO, "response_format": fmt, "logprobs": True, "top_logprobs": 1})
        assert code == 400 and out["error"]["param"] == "response_format" and "logprobs" in out["error"]["message"], out
        assert "read the JSON from the completion's text" in out["error"]["message"]
    assert len(FakeVllm.seen) == before, "refused before vLLM sees it"


STAND_IN = """
import http.server, os, sys
if os.environ.get("VLLM_ALLOW_RUNTIME_LORA_UPDATING") != "True" or os.environ.get("VLLM_API_KEY") != sys.argv[2]:
    sys.exit(3)
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200 if self.headers.get("authorization") == "Bearer " + sys.argv[2] else 401)
        self.send_header("content-length", "2")
        self.end_headers()
        self.wfile.write(b"{}")
    def log_message(self, *args):
        pass
http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
"""


def test_the_vllm_process_is_waited_for_and_stopped():
    from rollout_trainer.serving.vllm import free_port

    port = free_port()
    engine = VllmEngine([sys.executable, "-c", STAND_IN, str(port), "the-key"], port, "policy", "the-key")
    engine.start(timeout_s=120)
    try:
        assert engine.process.poll() is None
    finally:
        engine.stop()
    assert engine.process.poll() is not None
    dead = VllmEngine([sys.executable, "-c", "raise SystemExit(3)"], free_port(), "policy", "k")
    with pytest.raises(RuntimeError, match="exited with status 3"):
        dead.start(timeout_s=120)


# -- the job ---------------------------------------------------------------------------------------
def test_sigterm_stops_the_serve_job_cleanly(bundle, tmp_path):
    path = bundle("serve", None, HP, ", servedName: policy")
    env = {k: v for k, v in os.environ.items() if k != "ROLLOUT_TRAINER_API_KEY"}
    env.update(PYTHONPATH=str(ROOT), PYTHONUNBUFFERED="1")
    with open(tmp_path / "stdout.txt", "w") as out, open(tmp_path / "stderr.txt", "w") as err:
        proc = subprocess.Popen([sys.executable, "-m", "rollout_trainer", "serve", "--spec", "job.yaml"], cwd=path.parent, env=env, stdout=out, stderr=err)
    try:
        serving_file = path.parent / "out" / "serving.json"
        for _ in range(1200):
            if serving_file.exists() or proc.poll() is not None:
                break
            time.sleep(0.05)
        assert serving_file.exists(), (tmp_path / "stderr.txt").read_text()
        serving = json.loads(serving_file.read_text())
        assert serving["event"] == "serving" and serving["model"] == "policy" and serving["version"] == "policy"
        with urllib.request.urlopen(serving["url"].rsplit("/v1", 1)[0] + "/control/status", timeout=60) as res:
            assert json.loads(res.read())["state"] == "idle"
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=120) == 0, (tmp_path / "stderr.txt").read_text()
    finally:
        if proc.poll() is None:
            proc.kill()
    result = json.loads((path.parent / "out" / "result.json").read_text())
    assert result["status"] == "succeeded" and result["phase"] == "serve" and result["error"] is None and result["version"] == "policy"
    printed = [json.loads(line[len("@rollout-trainer "):]) for line in (tmp_path / "stdout.txt").read_text().splitlines() if line.startswith("@rollout-trainer ")]
    assert [e["event"] for e in printed] == ["start", "serving", "done"]
    assert printed[1] == serving and printed[2]["result"]["status"] == "succeeded"
