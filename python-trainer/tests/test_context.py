"""Jobs size a tiny model's context from their data: a model built from scratch grows to
the longest example its length settings let in; one that continues from an adapter keeps
its context and leaves out, counted, what does not fit, naming the setting to change."""

import json
import shutil

from conftest import events_of, run_cli

# The bundle's model has max_positions 1024; these conversations are ~1,500 byte tokens.
LONG = {"messages": [{"role": "user", "content": "Tell me about the protocol. " + "word " * 290},
                     {"role": "assistant", "content": "It has three steps. " + "step " * 10}]}
SHORT = {"messages": [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello there."}]}
HP = {"max_steps": 1, "batch_size": 2, "grad_accum": 1}


def write_data(job_yaml, rows):
    (job_yaml.parent / "data" / "sft.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def continue_from_adapter(job_yaml):
    """Turns the bundle into one whose model continues from the adapter its last run wrote."""
    shutil.copytree(job_yaml.parent / "out" / "adapter", job_yaml.parent / "adapters" / "v1")
    shutil.rmtree(job_yaml.parent / "out")
    job_yaml.write_text(job_yaml.read_text().replace("max_positions: 1024}", "max_positions: 1024}, adapter: adapters/v1"))


def test_a_model_built_from_scratch_grows_its_context_to_the_longest_example(bundle):
    path = bundle("sft", "sft.jsonl", HP)
    write_data(path, [LONG, LONG, SHORT])
    r = run_cli(path.parent, "sft", "--spec", "job.yaml")
    assert r.returncode == 0, r.stdout + r.stderr
    start = events_of(r.stdout)[0]
    assert start["examples"] == 3 and start["dropped_too_long"] == 0
    saved = json.loads((path.parent / "out" / "adapter" / "tiny_config.json").read_text())
    assert saved["max_positions"] > 1024 and saved["max_positions"] % 256 == 0
    assert f"model.config.max_positions (training.trainer.modelConfig.max_positions in lab.json) 1024 -> {saved['max_positions']}" in r.stdout


def test_max_length_still_caps_what_a_growing_model_keeps(bundle):
    path = bundle("sft", "sft.jsonl", {**HP, "max_length": 1200})
    write_data(path, [LONG, SHORT, SHORT])
    r = run_cli(path.parent, "sft", "--spec", "job.yaml")
    assert r.returncode == 0, r.stdout + r.stderr
    assert events_of(r.stdout)[0]["dropped_too_long"] == 1
    assert "1 of 3 examples left out as longer than 1024 tokens" in r.stdout
    assert "raise hyperparameters.max_length (now 1200)" in r.stdout


def test_a_model_continuing_from_an_adapter_leaves_out_what_does_not_fit_and_says_what_to_raise(bundle):
    path = bundle("sft", "sft.jsonl", HP)
    write_data(path, [SHORT, SHORT])
    assert run_cli(path.parent, "sft", "--spec", "job.yaml").returncode == 0
    continue_from_adapter(path)
    write_data(path, [LONG, SHORT, SHORT])
    r = run_cli(path.parent, "sft", "--spec", "job.yaml")
    assert r.returncode == 0, r.stdout + r.stderr
    assert events_of(r.stdout)[0]["dropped_too_long"] == 1
    assert "1 of 3 examples left out as longer than 1024 tokens" in r.stdout
    assert "raise model.config.max_positions (training.trainer.modelConfig.max_positions in lab.json) (now 1024, fixed by the adapter" in r.stdout


def test_nothing_fitting_is_an_error_naming_every_setting(bundle):
    path = bundle("sft", "sft.jsonl", HP)
    write_data(path, [SHORT, SHORT])
    assert run_cli(path.parent, "sft", "--spec", "job.yaml").returncode == 0
    continue_from_adapter(path)
    write_data(path, [LONG, LONG])
    r = run_cli(path.parent, "sft", "--spec", "job.yaml")
    assert r.returncode != 0
    result = json.loads((path.parent / "out" / "result.json").read_text())
    assert result["status"] == "failed"
    assert "none of the 2 examples fits 1024 tokens" in result["error"]
    assert "hyperparameters.max_length (now 4096)" in result["error"]
    assert "model.config.max_positions (training.trainer.modelConfig.max_positions in lab.json) (now 1024" in result["error"]


def test_grpo_grows_the_context_of_a_model_built_from_scratch(bundle):
    path = bundle("grpo", "rl-last.jsonl", {"max_steps": 1, "batch_size": 2, "kl_coef": 0.0})
    rows = [json.loads(line) for line in (path.parent / "data" / "rl-last.jsonl").read_text().splitlines() if line.strip()]
    for row in rows:
        row["messages"][-1]["content"] += " more" * 250
    (path.parent / "data" / "rl-last.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    r = run_cli(path.parent, "grpo", "--spec", "job.yaml")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "1024 -> " in r.stdout and events_of(r.stdout)[0]["dropped_too_long"] == 0


def test_grpo_leaves_out_records_over_a_length_setting_and_names_only_that_setting(bundle):
    # rl-last's prompts are 198..779 tokens: one is over 700.
    path = bundle("grpo", "rl-last.jsonl", {"max_steps": 1, "batch_size": 2, "kl_coef": 0.0, "max_prompt_length": 700})
    r = run_cli(path.parent, "grpo", "--spec", "job.yaml")
    assert r.returncode == 0, r.stdout + r.stderr
    assert events_of(r.stdout)[0]["dropped_too_long"] == 1
    note = next(line for line in r.stdout.splitlines() if "records left out" in line)
    assert note.startswith("note: 1 of 14 records left out as too long (the longest 857 tokens) — raise hyperparameters.max_prompt_length (now 700)")
    assert "max_response_length" not in note and "max_positions" not in note


def test_a_transformers_job_on_a_machine_without_cuda_is_told_about_the_tiny_backend():
    import torch

    from rollout_trainer.backends import cpu_only_note

    assert cpu_only_note("tiny") is None
    note = cpu_only_note("transformers")
    if torch.cuda.is_available():
        assert note is None
    else:
        assert note.startswith("note: no CUDA GPU on this machine: the transformers model runs on the CPU, slowly")
        assert 'set training.trainer.backend: "tiny"' in note and ".rollout-lab/lab.json" in note
