"""A job never truncates: what does not fit its length settings or the model's context is
left out, counted, and the message names the settings that would keep it: for the model a
job builds from a config, its max_position_embeddings too; for one that continues from an
adapter, whose context its weights fix, only the job's own settings."""

import json
import random
import shutil

from conftest import QWEN2, events_of, golden, run_cli, set_adapter

from rollout_trainer.backends.hf import HfTokenizer
from rollout_trainer.backends.hf_build import corpus_of, train_tokenizer
from rollout_trainer.chat import prompt_and_completion_ids

SETTING = "model.config.max_position_embeddings (training.trainer.modelConfig.max_position_embeddings in lab.json)"
# The bundle's model takes 1024 positions; varied words (no BPE merges them all) make this conversation ~1,500 tokens.
_rng = random.Random(0)
_WORDS = ["alpha", "beta", "gamma", "delta", "zeta", "theta", "kappa", "lambda", "sigma", "omega", "tau", "rho", "phi", "chi", "psi"]
LONG = {"messages": [{"role": "user", "content": "Tell me about the protocol. " + " ".join(f"{_rng.choice(_WORDS)}{_rng.randrange(1000)}" for _ in range(600))},
                     {"role": "assistant", "content": "It has three steps. " + "step " * 10}]}
SHORT = {"messages": [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello there."}]}
HP = {"max_steps": 1, "batch_size": 2, "grad_accum": 1}


def write_data(job_yaml, rows):
    (job_yaml.parent / "data" / "sft.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def continue_from_adapter(job_yaml):
    """Turns the bundle into one whose model continues from the adapter its last run wrote."""
    shutil.copytree(job_yaml.parent / "out" / "adapter", job_yaml.parent / "adapters" / "v1")
    shutil.rmtree(job_yaml.parent / "out")
    set_adapter(job_yaml, "adapters/v1")


def note_of(stdout):
    return next(line for line in stdout.splitlines() if "left out" in line)


def test_a_model_built_from_a_config_leaves_out_what_its_context_cannot_hold_and_names_the_config(bundle):
    path = bundle("sft", "sft.jsonl", HP)
    write_data(path, [LONG, SHORT, SHORT])
    r = run_cli(path.parent, "sft", "--spec", "job.yaml")
    assert r.returncode == 0, r.stdout + r.stderr
    start = events_of(r.stdout)[0]
    assert start["examples"] == 2 and start["dropped_too_long"] == 1
    note = note_of(r.stdout)
    assert note.startswith("note: 1 of 3 examples left out as longer than 1024 tokens")
    assert f"raise {SETTING} (now 1024), or export shorter ones" in note
    assert "max_length" not in note, "max_length (4096) lets the example in"


def test_max_length_below_the_context_is_named_with_it(bundle):
    path = bundle("sft", "sft.jsonl", {**HP, "max_length": 512})
    write_data(path, [LONG, SHORT, SHORT])
    r = run_cli(path.parent, "sft", "--spec", "job.yaml")
    assert r.returncode == 0, r.stdout + r.stderr
    assert events_of(r.stdout)[0]["dropped_too_long"] == 1
    note = note_of(r.stdout)
    assert "1 of 3 examples left out as longer than 512 tokens" in note
    assert f"raise hyperparameters.max_length (now 512) or {SETTING} (now 1024)" in note


def test_a_model_continuing_from_an_adapter_keeps_its_context_and_says_so(bundle):
    path = bundle("sft", "sft.jsonl", HP)
    write_data(path, [SHORT, SHORT])
    assert run_cli(path.parent, "sft", "--spec", "job.yaml").returncode == 0
    continue_from_adapter(path)
    write_data(path, [LONG, SHORT, SHORT])
    r = run_cli(path.parent, "sft", "--spec", "job.yaml")
    assert r.returncode == 0, r.stdout + r.stderr
    assert events_of(r.stdout)[0]["dropped_too_long"] == 1
    note = note_of(r.stdout)
    assert "1 of 3 examples left out as longer than 1024 tokens" in note
    # The adapter's weights fix the context: the config's setting is not one to raise (the carried tokenizer never saw LONG's words,
    # so LONG is longer than max_length too).
    assert "(the model takes at most 1024 tokens), or export shorter ones" in note and "max_position_embeddings" not in note


def test_nothing_fitting_is_an_error_naming_every_setting(bundle):
    path = bundle("sft", "sft.jsonl", HP)
    write_data(path, [LONG, LONG])
    r = run_cli(path.parent, "sft", "--spec", "job.yaml")
    assert r.returncode != 0
    result = json.loads((path.parent / "out" / "result.json").read_text())
    assert result["status"] == "failed"
    assert "none of the 2 examples fits 1024 tokens" in result["error"]
    assert f"raise hyperparameters.max_length (now 4096) or {SETTING} (now 1024)" in result["error"]


def rl_last_lengths():
    """(prompt, completion) token counts of rl-last under the tokenizer its job trains."""
    records = golden("rl-last.jsonl")
    tok = HfTokenizer(train_tokenizer(corpus_of(records), QWEN2["vocab_size"]))
    return [tuple(map(len, prompt_and_completion_ids(tok, r["messages"], r.get("tools"), r["completion"]))) for r in records]


def test_grpo_leaves_out_records_over_a_length_setting_and_names_only_that_setting(bundle):
    lengths = rl_last_lengths()
    longest_prompt = max(p for p, _ in lengths)
    over = sum(1 for p, _ in lengths if p == longest_prompt)
    path = bundle("grpo", "rl-last.jsonl", {"max_steps": 1, "batch_size": 2, "kl_coef": 0.0, "max_prompt_length": longest_prompt - 1})
    r = run_cli(path.parent, "grpo", "--spec", "job.yaml")
    assert r.returncode == 0, r.stdout + r.stderr
    assert events_of(r.stdout)[0]["dropped_too_long"] == over
    note = note_of(r.stdout)
    assert note.startswith(f"note: {over} of 14 records left out as too long (the longest {max(p + c for p, c in lengths)} tokens) — "
                           f"raise hyperparameters.max_prompt_length (now {longest_prompt - 1})")
    assert "max_response_length" not in note and "max_position_embeddings" not in note


def test_grpo_leaves_out_records_longer_than_the_context_and_names_the_config(bundle):
    path = bundle("grpo", "rl-last.jsonl", {"max_steps": 1, "batch_size": 2, "kl_coef": 0.0})
    data = path.parent / "data" / "rl-last.jsonl"
    rows = golden("rl-last.jsonl")
    rows[0]["messages"][-1]["content"] += " " + LONG["messages"][0]["content"]  # one record of group t1 over the context
    data.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    r = run_cli(path.parent, "grpo", "--spec", "job.yaml")
    assert r.returncode == 0, r.stdout + r.stderr
    assert events_of(r.stdout)[0]["dropped_too_long"] == 1
    note = note_of(r.stdout)
    assert note.startswith("note: 1 of 14 records left out as too long") and f"raise {SETTING} (now 1024)" in note
    assert "max_prompt_length" not in note, "max_prompt_length (4096) lets the record in"


def test_a_job_loading_a_checkpoint_on_a_machine_without_cuda_is_told_how_to_build_a_small_model():
    import torch

    from rollout_trainer.backends import cpu_only_note

    note = cpu_only_note()
    if torch.cuda.is_available():
        assert note is None
    else:
        assert note.startswith("note: no CUDA GPU on this machine: the transformers model runs on the CPU, slowly")
        assert "training.trainer.modelConfig" in note and '"model_type": "qwen2"' in note and ".rollout-lab/lab.json" in note
        assert "tiny" not in note
