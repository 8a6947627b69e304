"""The job spec and hyper-parameter checks, in process and through the CLI (exit 2)."""

import json

import pytest
from conftest import events_of, run_cli

from rollout_trainer.errors import DataError, SpecError
from rollout_trainer.hparams import reference_defaults, resolve_hparams, target_modules
from rollout_trainer.spec import load_spec


def test_a_valid_spec_loads_as_a_tree_with_the_reference_defaults(bundle):
    path = bundle("grpo", "rl-equal.jsonl")
    spec = load_spec(str(path))
    assert spec.kind == spec.phase.kind == "grpo" and spec.phase.name == "test"
    assert spec.model.backend == "transformers" and spec.model.config["model_type"] == "qwen2" and spec.model.adapter is None and spec.model.dtype == "auto"
    assert spec.data.train == spec.train == "data/rl-equal.jsonl" and spec.data.manifest is None
    assert spec.output.dir == spec.output_dir == "out" and spec.out == path.parent.resolve() / "out"
    assert spec.resources.gpus == 0 and spec.resources.gpuType is None
    assert spec.serve.host == "127.0.0.1" and spec.serve.port == 0
    assert spec.served_name == "test-grpo" and spec.env == []
    assert spec.bundle_dir == path.parent.resolve()
    assert spec.path("data/rl-equal.jsonl").is_file()
    hp = spec.hyperparameters
    assert (hp.learning_rate, hp.group_size, hp.kl_coef, hp.clip_eps, hp.loss_agg) == (1e-6, 8, 0.001, 0.2, "seq-mean-token-mean")
    assert hp.target_modules == ["q_proj", "k_proj", "v_proj", "o_proj"]


def test_exponent_floats_written_by_the_javascript_yaml_package_are_numbers(bundle):
    path = bundle("grpo", "rl-equal.jsonl")
    path.write_text(path.read_text().replace("hyperparameters: {}", "hyperparameters: {learning_rate: 5e-7, kl_coef: 1e-3}"))
    hp = load_spec(str(path)).hyperparameters
    assert hp.learning_rate == 5e-7 and hp.kl_coef == 1e-3


@pytest.mark.parametrize("edit, message", [
    (("command: [python3, -m, rollout_trainer, sft, --spec, job.yaml]\n", ""), "job.yaml: (top level): 'command' is a required property"),
    (("model: {base: qwen2-test, ", "model: {"), "job.yaml: model: 'base' is a required property"),
    (("resources: {gpus: 0}", "resources: {gpus: two}"), "job.yaml: resources.gpus: 'two' is not of type 'integer'"),
    (("id: test-sft", "id: Test_SFT"), "job.yaml: id: 'Test_SFT' does not match"),
    (("kind: sft}", "kind: dpo}"), "job.yaml: phase.kind: 'dpo' is not one of"),
    (("output: {dir: out}", "output: {dir: out, extra: 1}"), "job.yaml: output: Additional properties are not allowed ('extra' was unexpected)"),
    (("backend: transformers", "backend: tiny"), "job.yaml: model.backend: the tiny backend was removed — use backend transformers with model.config"),
    (("backend: transformers", "backend: torch"), "job.yaml: model.backend: 'torch' is not one of ['transformers']"),
])
def test_the_schema_names_the_field_that_is_wrong(bundle, edit, message):
    path = bundle("sft", "sft.jsonl")
    text = path.read_text()
    assert edit[0] in text
    path.write_text(text.replace(edit[0], edit[1]))
    with pytest.raises(SpecError) as err:
        load_spec(str(path))
    assert str(err.value).startswith(message), str(err.value)


def test_hyperparameters_are_type_checked_after_the_schema(bundle):
    path = bundle("sft", "sft.jsonl", {"lora_r": "x"})
    with pytest.raises(SpecError, match=r"^job.yaml: hyperparameters.lora_r: 'x' is not of type 'integer' \(default 16\)"):
        load_spec(str(path))


@pytest.mark.parametrize("field, value", [("train: data/sft.jsonl", "train: ../../etc/passwd"), ("train: data/sft.jsonl", "train: /etc/passwd"),
                                          ("dir: out", "dir: ../out"), ("backend: transformers", "backend: transformers, adapter: a/../../b")])
def test_paths_must_stay_inside_the_bundle(bundle, field, value):
    path = bundle("sft", "sft.jsonl")
    path.write_text(path.read_text().replace(field, value))
    with pytest.raises(SpecError, match="must be a path inside the job bundle"):
        load_spec(str(path))
    spec_path = bundle("sft", "sft.jsonl")
    spec = load_spec(str(spec_path))
    for bad in ("../x", "/etc/passwd", "a/../../b"):
        with pytest.raises(SpecError, match="inside the job bundle"):
            spec.path(bad)


def test_a_training_job_needs_data_and_broken_yaml_is_reported_by_line(bundle):
    path = bundle("sft", None)
    with pytest.raises(SpecError, match="data.train: a sft job needs training data"):
        load_spec(str(path))
    path.write_text("apiVersion: rollout-lab/v1\nkind: [unclosed\n")
    with pytest.raises(SpecError, match=r"^job.yaml:\d+: not valid YAML"):
        load_spec(str(path))
    with pytest.raises(SpecError, match="no such job spec"):
        load_spec(str(path.parent / "missing.yaml"))


def test_unknown_names_wrong_types_and_bad_values_are_rejected():
    with pytest.raises(SpecError, match=r"unknown sft setting\(s\) lora_rank — known: learning_rate, max_steps"):
        resolve_hparams("sft", {"lora_rank": 8})
    with pytest.raises(SpecError, match="hyperparameters.merge: 'yes' is not of type 'boolean'"):
        resolve_hparams("sft", {"merge": "yes"})
    with pytest.raises(SpecError, match="hyperparameters.loss_agg: 'sum' is not one of"):
        resolve_hparams("grpo", {"loss_agg": "sum"})
    with pytest.raises(SpecError, match="batch_size: must be greater than 0"):
        resolve_hparams("grpo", {"batch_size": 0})
    with pytest.raises(SpecError, match="would train nothing"):
        resolve_hparams("grpo", {"max_steps": 0, "epochs": 0})
    hp = resolve_hparams("sft", {"target_modules": "q_proj, v_proj", "lora_r": 8.0, "learning_rate": 1})
    assert hp.target_modules == ["q_proj", "v_proj"] and hp.lora_r == 8 and isinstance(hp.learning_rate, float)
    assert target_modules(resolve_hparams("sft", {"target_modules": "all-linear"})) == "all-linear"
    serve = resolve_hparams("serve", {"max_new_tokens": 64})
    assert serve.engine == "auto" and serve.kl_coef == reference_defaults("grpo")["kl_coef"]


def test_the_cli_exits_2_with_one_line_naming_the_problem(bundle):
    path = bundle("sft", "sft.jsonl", {"lora_rank": 8})
    r = run_cli(path.parent, "sft", "--spec", "job.yaml")
    assert r.returncode == 2
    assert r.stderr.strip().count("\n") == 0 and "hyperparameters: unknown sft setting(s) lora_rank" in r.stderr
    path = bundle("sft", "sft.jsonl")
    r = run_cli(path.parent, "grpo", "--spec", "job.yaml")
    assert r.returncode == 2 and "phase.kind is sft, but the command is grpo" in r.stderr
    r = run_cli(path.parent, "validate", "--spec", "job.yaml")
    assert r.returncode == 0 and "a valid sft job test-sft" in r.stdout and "13 examples" in r.stdout


def test_broken_data_is_reported_by_file_and_line_before_any_model_loads(bundle):
    path = bundle("sft", "sft.jsonl")
    data = path.parent / "data" / "sft.jsonl"
    lines = data.read_text().splitlines()
    lines[2] = '{"messages": [{"role": "robot", "content": "x"}]}'
    data.write_text("\n".join(lines) + "\n")
    r = run_cli(path.parent, "sft", "--spec", "job.yaml")
    assert r.returncode == 2
    assert "sft.jsonl:3: messages[0].role must be one of system, user, assistant, tool (got 'robot')" in r.stderr
    result = json.loads((path.parent / "out" / "result.json").read_text())
    assert result["status"] == "failed" and "sft.jsonl:3" in result["error"] and result["adapter"] is None
    assert events_of(r.stdout)[-1]["event"] == "error"
    assert run_cli(path.parent, "validate").returncode == 2


@pytest.mark.parametrize("line, message", [
    ('{"messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": null, "tool_calls": [{"type": "function", "function": {"name": "f", "arguments": "{oops"}}]}]}',
     "messages[1].tool_calls[0].function.arguments: '{oops' is not a JSON object"),
    ('{"messages": [{"role": "user", "content": "q"}, {"role": "tool", "content": "r"}]}', "messages[1]: a tool result must follow the assistant message that called the tool"),
    ('{"messages": [{"role": "user", "content": "q"}]}', "no assistant message"),
    ('[1, 2]', "expected one JSON object per line"),
    ('{"messages": [', "not valid JSON"),
])
def test_the_shapes_chat_templates_need_are_checked(tmp_path, line, message):
    from rollout_trainer.data import read_sft

    f = tmp_path / "sft.jsonl"
    f.write_text('{"messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}]}\n' + line + "\n")
    with pytest.raises(DataError, match="^sft.jsonl:2: "):
        read_sft(f)
    with pytest.raises(DataError) as err:
        read_sft(f)
    assert message in str(err.value)


def test_rl_records_are_checked_and_normalised(tmp_path):
    from rollout_trainer.data import check_rl_record

    rec = {"group": "t1", "messages": [{"role": "user", "content": "q"}], "completion": {"text": None, "tool_calls": None}, "reward": 1,
           "token_ids": [1.0, 2.0], "logprobs": [-0.5, 0]}
    out = check_rl_record(rec, "x:1")
    assert out["completion"] == {"text": "", "tool_calls": []} and out["reward"] == 1.0 and out["token_ids"] == [1, 2]
    with pytest.raises(DataError, match="x:1: reward must be a finite number"):
        check_rl_record({**rec, "reward": "high"}, "x:1")
    with pytest.raises(DataError, match="x:1: logprobs must be finite log-probabilities"):
        check_rl_record({**rec, "logprobs": [0.7]}, "x:1")
    with pytest.raises(DataError, match="x:1: group must be the task id"):
        check_rl_record({**rec, "group": None}, "x:1")


def test_rows_say_where_their_reward_came_from_and_a_penalty_says_why(tmp_path):
    from rollout_trainer.data import check_rl_record, read_sft

    rec = {"group": "t1", "messages": [{"role": "user", "content": "q"}], "completion": {"text": "a", "tool_calls": []}, "reward": 0}
    penalised = {**rec, "reward_source": "penalty", "penalty": {"kind": "custom_reward_failed", "reason": "the scorer threw"}}
    assert check_rl_record(penalised, "x:1")["penalty"] == {"kind": "custom_reward_failed", "reason": "the scorer threw"}
    assert check_rl_record({**rec, "reward_source": "no_output", "penalty": None}, "x:1")["reward_source"] == "no_output"
    assert "reward_source" not in check_rl_record(rec, "x:1"), "rows exported before the field still load"
    with pytest.raises(DataError, match="x:1: reward_source must be one of scored, no_output, penalty"):
        check_rl_record({**rec, "reward_source": "judge"}, "x:1")
    with pytest.raises(DataError, match="x:1: a row whose reward_source is penalty needs penalty"):
        check_rl_record({**rec, "reward_source": "penalty", "penalty": None}, "x:1")
    with pytest.raises(DataError, match="x:1: penalty must be null unless reward_source is penalty"):
        check_rl_record({**rec, "reward_source": "scored", "penalty": {"kind": "judge_failed", "reason": "r"}}, "x:1")

    f = tmp_path / "sft.jsonl"
    row = {"messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}],
           "metadata": {"reward": 0.1, "reward_source": "penalty", "penalty": {"kind": "judge_failed", "reason": "no JSON"}}}
    f.write_text(json.dumps(row) + "\n")
    assert read_sft(f)[0]["metadata"]["penalty"]["kind"] == "judge_failed"
    row["metadata"]["reward_source"] = "made-up"
    f.write_text(json.dumps(row) + "\n")
    with pytest.raises(DataError, match="^sft.jsonl:1: metadata: reward_source must be one of"):
        read_sft(f)
