"""The transformers + peft backend on a tiny Qwen2 model built from a config, with a
byte-level BPE tokenizer trained here on the golden data and a ChatML template with
tools: nothing is downloaded. Skipped (with the reason) where transformers, peft or
tokenizers are not installed, as on the Debian test machines."""

import json
import os
import shutil

import pytest
import torch
from conftest import GOLDEN, events_of, golden, run_cli

transformers = pytest.importorskip("transformers", reason="transformers is not installed: the transformers backend is not tested here")
peft = pytest.importorskip("peft", reason="peft is not installed: the transformers backend is not tested here")
tokenizers = pytest.importorskip("tokenizers", reason="tokenizers is not installed: no tokenizer can be built for the tiny HF model")

CHATML_WITH_TOOLS = (
    "{%- if tools %}"
    "{{ '<|im_start|>system\\n' }}{%- if messages and messages[0].role == 'system' %}{{ messages[0].content + '\\n\\n' }}{%- endif %}"
    "{{ '# Tools\\n<tools>\\n' }}{%- for t in tools %}{{ (t | tojson) + '\\n' }}{%- endfor %}{{ '</tools><|im_end|>\\n' }}"
    "{%- elif messages and messages[0].role == 'system' %}{{ '<|im_start|>system\\n' + messages[0].content + '<|im_end|>\\n' }}"
    "{%- endif %}"
    "{%- for m in messages %}"
    "{%- if m.role == 'system' and loop.first %}"
    "{%- elif m.role == 'assistant' %}{{ '<|im_start|>assistant\\n' + (m.content or '') }}"
    "{%- for tc in (m.tool_calls or []) %}"
    "{{ '<tool_call>{\"name\": \"' + tc.function.name + '\", \"arguments\": ' + (tc.function.arguments | tojson) + '}</tool_call>' }}"
    "{%- endfor %}{{ '<|im_end|>\\n' }}"
    "{%- else %}{{ '<|im_start|>' + m.role + '\\n' + (m.content or '') + '<|im_end|>\\n' }}"
    "{%- endif %}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{%- endif %}"
)
SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]


def build_tokenizer(directory):
    """A byte-level BPE trained on the fixtures, as a transformers fast tokenizer with the template."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    try:
        from transformers import PreTrainedTokenizerFast
    except ImportError:  # transformers 5 may only export the unified class
        from transformers import TokenizersBackend as PreTrainedTokenizerFast

    texts = [line for name in ("sft.jsonl", "rl-equal.jsonl") for line in (GOLDEN / name).read_text().splitlines()]
    tk = Tokenizer(models.BPE())
    tk.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tk.decoder = decoders.ByteLevel()
    tk.train_from_iterator(texts, trainers.BpeTrainer(vocab_size=600, special_tokens=SPECIALS, initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    tok = PreTrainedTokenizerFast(tokenizer_object=tk, eos_token="<|im_end|>", pad_token="<|endoftext|>")
    tok.chat_template = CHATML_WITH_TOOLS
    tok.save_pretrained(str(directory))
    return tok


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
    policy.save_adapter(tmp_path / "v1")
    fresh = load_policy(load_spec(str(path)), "cpu")
    fresh.load_adapter(tmp_path / "v1", "v1")
    assert fresh.version == "v1"
    assert torch.allclose(fresh.sequence_logprobs(seqs, starts)[0], moved[0], atol=1e-5)
