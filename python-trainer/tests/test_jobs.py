"""The sft and grpo jobs end to end on a one-layer Qwen2 built from a config (the
transformers backend, nothing downloaded), through the CLI, in bundles built from the
golden export fixtures."""

import json
import os
import shutil

from conftest import events_of, golden, run_cli, set_adapter


def read_events_file(out):
    return [json.loads(line) for line in (out / "events.jsonl").read_text().splitlines()]


def test_sft_learns_the_assistant_turns_and_writes_events_checkpoints_adapter_and_result(bundle):
    path = bundle("sft", "sft.jsonl", {"max_steps": 12, "batch_size": 4, "grad_accum": 1, "learning_rate": 0.01, "save_steps": 6, "merge": True})
    r = run_cli(path.parent, "sft", "--spec", "job.yaml")
    assert r.returncode == 0, r.stderr
    evs = events_of(r.stdout)
    start = evs[0]
    assert start["event"] == "start" and start["phase"] == "sft" and start["backend"] == "transformers" and start["device"] == "cpu"
    assert start["steps"] == 12 and start["examples"] == 13 and start["dropped_too_long"] == 0 and start["version"] == "base"
    metrics = [e for e in evs if e["event"] == "metrics"]
    assert [m["step"] for m in metrics] == list(range(1, 13))
    assert all({"loss", "lr", "grad_norm", "tokens", "epoch"} <= set(m) for m in metrics)
    losses = [m["loss"] for m in metrics]
    assert sum(losses[-3:]) / 3 < 0.8 * sum(losses[:3]) / 3, f"the loss goes down on repeated data: {losses}"
    assert metrics[-1]["lr"] < metrics[0]["lr"], "linear decay"
    assert [e["path"] for e in evs if e["event"] == "checkpoint"] == ["out/checkpoint-6", "out/checkpoint-12"]
    assert evs[-1]["event"] == "done"
    out = path.parent / "out"
    result = json.loads((out / "result.json").read_text())
    assert result == evs[-1]["result"]
    assert result["status"] == "succeeded" and result["error"] is None and result["job"] == "test-sft" and result["phase"] == "sft"
    assert result["adapter"] == "out/adapter" and result["merged"] == "out/merged" and result["steps"] == 12 and result["examples"] == 13
    assert result["metrics"]["loss"] == losses[-1] and result["ended_at"] >= result["started_at"]
    for d in ("adapter", "checkpoint-6"):
        assert (out / d / "adapter_config.json").is_file() and (out / d / "adapter_model.safetensors").is_file()
    # The adapter and every checkpoint carry the model they were trained on, built from the config, with its tokenizer.
    for d in ("adapter", "checkpoint-6", "checkpoint-12"):
        assert (out / d / "base" / "config.json").is_file() and (out / d / "base" / "tokenizer.json").is_file(), d
    assert (out / "merged" / "config.json").is_file() and (out / "merged" / "tokenizer.json").is_file()
    assert read_events_file(out) == evs


def test_sft_is_deterministic_on_cpu(bundle, tmp_path):
    hp = {"max_steps": 2, "batch_size": 1, "grad_accum": 2, "learning_rate": 0.003, "save_steps": 0}
    path = bundle("sft", "sft.jsonl", hp)
    first = [e["loss"] for e in events_of(run_cli(path.parent, "sft").stdout) if e["event"] == "metrics"]
    shutil.rmtree(path.parent / "out")
    second = [e["loss"] for e in events_of(run_cli(path.parent, "sft").stdout) if e["event"] == "metrics"]
    assert first == second and len(first) == 2


def test_grpo_trains_on_the_groups_with_a_signal_and_a_second_job_starts_from_its_adapter(bundle):
    path = bundle("grpo", "rl-equal.jsonl", {"max_steps": 3, "batch_size": 2, "learning_rate": 0.001, "save_steps": 2})
    r = run_cli(path.parent, "grpo", "--spec", "job.yaml")
    assert r.returncode == 0, r.stderr
    evs = events_of(r.stdout)
    start = evs[0]
    # t1 has 10 calls with rewards 0.4..0.9; t2 and t3 have equal rewards: no signal.
    assert (start["groups"], start["singleton_groups"], start["zero_variance_groups"], start["useful_groups"]) == (3, 0, 2, 1)
    # the one record with token_ids and logprobs of the same length (ids within the vocabulary) brings its behaviour logprobs
    assert start["examples"] == 14 and start["useful_records"] == 10 and start["behaviour_logprobs"] == 1
    assert start["steps"] == 3, "min(max_steps, epochs × ceil(10 / 2))"
    metrics = [e for e in evs if e["event"] == "metrics"]
    assert [m["step"] for m in metrics] == [1, 2, 3]
    assert {"loss", "reward_mean", "reward_std", "advantage_abs", "kl", "clip_frac", "ratio_mean", "lr", "grad_norm"} <= set(metrics[0])
    assert metrics[0]["kl"] < 1e-6, "a fresh adapter is the reference (the base model, the adapter switched off) to begin with"
    assert [e["path"] for e in evs if e["event"] == "checkpoint"] == ["out/checkpoint-2"]
    result = json.loads((path.parent / "out" / "result.json").read_text())
    assert result["status"] == "succeeded" and result["steps"] == 3 and result["adapter"] == "out/adapter" and result["merged"] is None
    assert (result["groups"], result["zero_variance_groups"], result["useful"]) == (3, 2, 10)

    # The next phase starts from this adapter: model.adapter names it, the start event shows its version.
    shutil.copytree(path.parent / "out" / "adapter", path.parent / "adapters" / "grpo-v1")
    shutil.rmtree(path.parent / "out")
    set_adapter(path, "adapters/grpo-v1")
    path.write_text(path.read_text().replace("max_steps: 3", "max_steps: 1"))
    r2 = run_cli(path.parent, "grpo", "--spec", "job.yaml")
    assert r2.returncode == 0, r2.stderr
    evs2 = events_of(r2.stdout)
    assert evs2[0]["version"] == "grpo-v1"
    first = [e for e in evs2 if e["event"] == "metrics"][0]
    assert first["kl"] > 1e-4, "the reference of a job that starts from an adapter is still the base model, which the adapter has moved from"


def test_a_set_of_groups_without_signal_fails_before_loading_a_model(bundle):
    path = bundle("grpo", "rl-equal.jsonl", {"max_steps": 1})
    data = path.parent / "data" / "rl-equal.jsonl"
    data.write_text("\n".join(json.dumps({**r, "reward": 0.5}) for r in golden("rl-equal.jsonl")) + "\n")
    r = run_cli(path.parent, "grpo")
    assert r.returncode == 2
    assert "no group has two records with different rewards (0 single-record groups, 3 with equal rewards)" in r.stderr
    assert json.loads((path.parent / "out" / "result.json").read_text())["status"] == "failed"


def test_a_diverging_run_exits_1_with_the_reason_in_result_json(bundle):
    # GRPO's loop is the package's own (an sft job on this backend runs TRL's where TRL is installed).
    path = bundle("grpo", "rl-equal.jsonl", {"max_steps": 3, "learning_rate": 1e30, "batch_size": 2})
    r = run_cli(path.parent, "grpo")
    assert r.returncode == 1
    result = json.loads((path.parent / "out" / "result.json").read_text())
    assert result["status"] == "failed" and "lower learning_rate" in result["error"]
    assert events_of(r.stdout)[-1] == {"event": "error", "message": result["error"]}


def test_the_transformers_backend_without_peft_says_how_to_install_it(bundle, tmp_path):
    from conftest import ROOT

    # A peft that does not import, first on the path: this python, as one without peft.
    (tmp_path / "no-peft" / "peft").mkdir(parents=True)
    (tmp_path / "no-peft" / "peft" / "__init__.py").write_text("raise ImportError(\"No module named 'peft'\")\n")
    path = bundle("sft", "sft.jsonl", {"max_steps": 1})
    r = run_cli(path.parent, "sft", "--spec", "job.yaml", env={"PYTHONPATH": f"{tmp_path / 'no-peft'}{os.pathsep}{ROOT}"})
    assert r.returncode == 2
    error = json.loads((path.parent / "out" / "result.json").read_text())["error"]
    assert "model.backend: transformers needs peft in this python" in error and "pip install -r python-trainer/requirements.txt" in error
    import torch

    if not torch.cuda.is_available():
        assert "no CUDA GPU" in error
