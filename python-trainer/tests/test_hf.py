"""The transformers + peft backend on a tiny Qwen2 model built from a config, with a
byte-level BPE tokenizer trained here on the golden data and a ChatML template with
tools: nothing is downloaded. python-trainer/requirements.txt pins the libraries; the
suite runs in .venv-trainer (scripts/setupTrainerVenv.sh), never skipping them."""

import json
import os
import shutil

import torch
from conftest import GOLDEN, events_of, golden, run_cli


def build_tokenizer(directory):
    """The package's own offline tokenizer (hf_build.train_tokenizer), trained on the fixtures."""
    from rollout_trainer.backends.hf_build import corpus_of, train_tokenizer

    records = [json.loads(line) for name in ("sft.jsonl", "rl-equal.jsonl") for line in (GOLDEN / name).read_text().splitlines() if line.strip()]
    return train_tokenizer(corpus_of(records), 600, directory)


def hf_bundle(tmp_path, kind, data, hp, adapter=None):
    tok = build_tokenizer(tmp_path / "base")
    (tmp_path / "data").mkdir(exist_ok=True)
    (tmp_path / "data" / data).write_text((GOLDEN / data).read_text())
    config = {"model_type": "qwen2", "vocab_size": len(tok), "hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2,
              "num_attention_heads": 4, "num_key_value_heads": 2, "max_position_embeddings": 2048, "tie_word_embeddings": False}
    spec = {
        "apiVersion": "rollout-lab/v1", "kind": "TrainingJob", "id": f"hf-{kind}", "phase": {"name": "test", "kind": kind},
        "model": {"base": "base", "backend": "transformers", "config": config, "adapter": adapter, "dtype": "float32"},
        "hyperparameters": {"target_modules": ["q_proj", "v_proj"], "lora_r": 4, "lora_alpha": 8, "gradient_checkpointing": False, **hp},
        "data": {"train": f"data/{data}"}, "output": {"dir": "out"}, "resources": {"gpus": 0},
        "command": ["python3", "-m", "rollout_trainer", kind, "--spec", "job.yaml"],
    }
    (tmp_path / "job.yaml").write_text(json.dumps(spec))  # JSON is YAML
    return tmp_path / "job.yaml"


OFFLINE = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HOME": os.environ.get("HOME", "/tmp"), "CUDA_VISIBLE_DEVICES": ""}


def test_the_chat_template_masks_only_the_assistant_turns(tmp_path):
    from rollout_trainer.backends.hf import HfTokenizer
    from rollout_trainer.chat import IGNORE, assistant_labels

    tok = HfTokenizer(build_tokenizer(tmp_path))
    assert hasattr(tok, "encode_with_offsets")
    rec = next(r for r in golden("sft.jsonl") if any(m["role"] == "tool" for m in r["messages"]))
    ids, labels = assistant_labels(tok, rec["messages"], rec["tools"])
    assert ids == tok.encode(tok.render(rec["messages"], rec["tools"]))
    learnt = tok.tok.decode([i for i, label in zip(ids, labels) if label != IGNORE])
    assert learnt.startswith('<tool_call>{"name": "pubmed_search", "arguments": {') and learnt.endswith("<|im_end|>")
    assert learnt.count("<|im_end|>") == 2 and "<|im_start|>" not in learnt and "# Tools" not in learnt


def test_sft_then_grpo_from_its_adapter_on_a_tiny_qwen2(tmp_path):
    sft_dir = tmp_path / "sft"
    sft_dir.mkdir()
    path = hf_bundle(sft_dir, "sft", "sft.jsonl", {"max_steps": 8, "batch_size": 4, "grad_accum": 1, "learning_rate": 0.01, "save_steps": 4, "merge": True,
                                                          "target_modules": "all-linear"})
    r = run_cli(path.parent, "sft", env=OFFLINE)
    assert r.returncode == 0, r.stderr
    evs = events_of(r.stdout)
    assert evs[0]["backend"] == "transformers" and evs[0]["device"] == "cpu"
    losses = [e["loss"] for e in evs if e["event"] == "metrics"]
    assert losses and losses[-1] < losses[0], losses
    out = path.parent / "out"
    assert (out / "adapter" / "adapter_config.json").is_file() and (out / "merged" / "config.json").is_file()
    assert json.loads((out / "result.json").read_text())["status"] == "succeeded"

    grpo_dir = tmp_path / "grpo"
    grpo_dir.mkdir()
    shutil.copytree(out / "adapter", grpo_dir / "adapters" / "sft-v1")
    path = hf_bundle(grpo_dir, "grpo", "rl-equal.jsonl", {"max_steps": 2, "batch_size": 2, "learning_rate": 0.001}, adapter="adapters/sft-v1")
    r = run_cli(path.parent, "grpo", env=OFFLINE)
    assert r.returncode == 0, r.stderr
    evs = events_of(r.stdout)
    assert evs[0]["version"] == "sft-v1" and evs[0]["useful_records"] == 10
    metrics = [e for e in evs if e["event"] == "metrics"]
    assert len(metrics) == 2 and all(m["kl"] >= 0 for m in metrics)
    assert (grpo_dir / "out" / "adapter" / "adapter_model.safetensors").is_file() or (grpo_dir / "out" / "adapter" / "adapter_model.bin").is_file()


def test_the_reference_is_the_base_model_and_adapters_load_in_place(tmp_path, monkeypatch):
    from rollout_trainer.backends import load_policy
    from rollout_trainer.spec import load_spec

    path = hf_bundle(tmp_path, "grpo", "rl-equal.jsonl", {})
    for k, v in OFFLINE.items():
        monkeypatch.setenv(k, v)
    policy = load_policy(load_spec(str(path)), "cpu")
    tok = policy.tokenizer
    prompt = tok.encode(tok.render([{"role": "user", "content": "Hi"}], add_generation_prompt=True))
    ids, lps, _ = policy.generate(prompt, 5, 1.0, 1.0, seed=3)
    assert (ids, lps, [[]] * len(ids)) == policy.generate(prompt, 5, 1.0, 1.0, seed=3)
    # The KV cache decodes what recomputing the whole sequence per token decodes.
    policy.kv_cache = False
    uncached = policy.generate(prompt, 5, 1.0, 1.0, seed=3)
    policy.kv_cache = True
    assert uncached.ids == ids and all(abs(a - b) < 1e-4 for a, b in zip(uncached.logprobs, lps))
    alts = policy.generate(prompt, 5, 1.0, 1.0, seed=3, top_logprobs=3)
    assert alts.ids == ids and all(len(top) == 3 and [v for _, v in top] == sorted((v for _, v in top), reverse=True) for top in alts.top)
    seqs = [prompt + ids, prompt[3:] + ids]
    starts = [len(prompt), len(prompt) - 3]
    pol = policy.sequence_logprobs(seqs, starts)
    ref = policy.sequence_logprobs(seqs, starts, reference=True)
    # LoRA's B starts at zero: the fresh adapter is the base model.
    assert all(torch.allclose(a, b, atol=1e-5) for a, b in zip(pol, ref))
    assert torch.allclose(pol[0], torch.tensor(lps), atol=1e-4), "generate reports the logprobs sequence_logprobs computes"
    for p in policy.trainable_parameters():
        torch.nn.init.normal_(p, std=0.5)
    moved = policy.sequence_logprobs(seqs, starts)
    assert not torch.allclose(moved[0], ref[0], atol=1e-4)
    with policy.eval_mode():  # LoRA's dropout off: the same weights give the same numbers
        moved = policy.sequence_logprobs(seqs, starts)
    policy.save_adapter(tmp_path / "v1")
    fresh = load_policy(load_spec(str(path)), "cpu")
    fresh.load_adapter(tmp_path / "v1", "v1")
    assert fresh.version == "v1"
    with fresh.eval_mode():
        assert torch.allclose(fresh.sequence_logprobs(seqs, starts)[0], moved[0], atol=1e-5)


def test_the_built_tokenizer_has_the_chat_turns_and_tool_call_tokens_and_round_trips_a_call(tmp_path):
    from rollout_trainer.backends.hf import HfTokenizer
    from rollout_trainer.serving.toolcalls import parse_tool_calls

    tok = HfTokenizer(build_tokenizer(tmp_path / "tok"))
    for marker in ("<|im_start|>", "<|im_end|>", "<tool_call>", "</tool_call>"):
        assert len(tok.encode(marker)) == 1, marker
    call = {"id": "c1", "type": "function", "function": {"name": "lookup", "arguments": '{"q": "x y"}'}}
    text = tok.render([{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "", "tool_calls": [call]}])
    assert '<tool_call>{"name": "lookup", "arguments": {"q": "x y"}}</tool_call><|im_end|>' in text
    completion = text.split("<|im_start|>assistant\n", 1)[1]
    decoded = tok.decode(tok.encode(completion))  # the turn token is special and goes; the call markers stay
    content, calls = parse_tool_calls(decoded)
    assert content is None and [c["function"] for c in calls] == [{"name": "lookup", "arguments": '{"q": "x y"}'}]
    # The same texts give the same tokenizer (every phase of a lab can rebuild it).
    assert build_tokenizer(tmp_path / "again").get_vocab() == tok.tok.get_vocab()


def test_a_saved_adapter_carries_the_built_model_and_loads_back_with_peft(tmp_path, monkeypatch):
    from peft import PeftModel
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from rollout_trainer.backends import load_policy
    from rollout_trainer.spec import load_spec

    for k, v in OFFLINE.items():
        monkeypatch.setenv(k, v)
    path = hf_bundle(tmp_path, "grpo", "rl-equal.jsonl", {})
    shutil.rmtree(tmp_path / "base")  # no tokenizer beside the spec: the job trains one on its data
    policy = load_policy(load_spec(str(path)), "cpu")
    for p in policy.trainable_parameters():
        torch.nn.init.normal_(p, std=0.3)
    policy.save_adapter(tmp_path / "v1")
    saved = tmp_path / "v1"
    assert (saved / "adapter_model.safetensors").is_file() and (saved / "base" / "model.safetensors").is_file()
    tok = AutoTokenizer.from_pretrained(str(saved / "base"))
    assert tok.get_vocab() == policy.tokenizer.tok.get_vocab()
    base = AutoModelForCausalLM.from_pretrained(str(saved / "base"))
    loaded = PeftModel.from_pretrained(base, str(saved)).eval()
    ids = torch.tensor([tok.encode("<|im_start|>user\nWhere is my order?<|im_end|>\n<|im_start|>assistant\n")])
    with torch.no_grad(), policy.eval_mode():
        assert torch.allclose(loaded(input_ids=ids).logits, policy.model(input_ids=ids).logits, atol=1e-5)
    # A job that starts from the adapter trains on the model it carries, whatever model.config says now.
    spec = json.loads(path.read_text())
    spec["model"]["adapter"] = "v1"
    spec["model"]["config"]["hidden_size"] = 48
    path.write_text(json.dumps(spec))
    again = load_policy(load_spec(str(path)), "cpu")
    with torch.no_grad(), again.eval_mode():
        assert torch.allclose(again.model(input_ids=ids).logits, loaded(input_ids=ids).logits, atol=1e-5)
