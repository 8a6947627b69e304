import json
import subprocess
import sys

import pytest

from conftest import ROOT
from rollout_trainer.errors import SpecError
from rollout_trainer.hparams import resolve_hparams
from rollout_trainer.spec import load_spec


def run(cwd, *args):
    return subprocess.run([sys.executable, "-m", "rollout_trainer", *args], cwd=cwd, capture_output=True, text=True, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})


def test_a_valid_spec_loads_with_the_reference_defaults(bundle):
    spec = load_spec(str(bundle("grpo", "rl-equal.jsonl")))
    assert spec.kind == "grpo" and spec.model.backend == "tiny"
    assert spec.hyperparameters["learning_rate"] == 1e-6
    assert spec.hyperparameters["group_size"] == 8
    assert spec.hyperparameters["kl_coef"] == 0.001
    assert spec.path("data/rl-equal.jsonl").exists()


def test_the_schema_rejects_what_rollout_lab_would_never_write(bundle, tmp_path):
    path = bundle("sft", "sft.jsonl")
    text = path.read_text()
    path.write_text(text.replace("id: test-sft", "id: Test_SFT"))
    with pytest.raises(SpecError, match=r"job.yaml: id: 'Test_SFT' does not match"):
        load_spec(str(path))
    path.write_text(text.replace("train: data/sft.jsonl", "train: ../../etc/passwd"))
    with pytest.raises(SpecError, match="inside the job bundle"):
        load_spec(str(path))


def test_hyperparameters_unknown_names_and_wrong_types_are_errors():
    with pytest.raises(SpecError, match="unknown sft setting"):
        resolve_hparams("sft", {"lora_rank": 8})
    with pytest.raises(SpecError, match="lora_r: 'x' is not int"):
        resolve_hparams("sft", {"lora_r": "x"})
    assert resolve_hparams("sft", {"target_modules": "q_proj, v_proj"})["target_modules"] == ["q_proj", "v_proj"]
    with pytest.raises(SpecError, match="nothing would be trained"):
        resolve_hparams("grpo", {"max_steps": 0, "epochs": 0})


def test_the_cli_exits_2_with_one_clear_line_for_a_bad_spec(bundle):
    path = bundle("sft", "sft.jsonl", {"lora_rank": 8})
    r = run(path.parent, "sft", "--spec", "job.yaml")
    assert r.returncode == 2
    assert "unknown sft setting(s) lora_rank" in r.stderr
    r = run(path.parent, "grpo", "--spec", "job.yaml")
    assert r.returncode == 2


def test_broken_data_is_reported_by_file_and_line(bundle):
    path = bundle("sft", "sft.jsonl")
    data = path.parent / "data" / "sft.jsonl"
    lines = data.read_text().splitlines()
    lines[2] = '{"messages": [{"role": "robot", "content": "x"}]}'
    data.write_text("\n".join(lines) + "\n")
    r = run(path.parent, "sft", "--spec", "job.yaml")
    assert r.returncode == 2
    assert "sft.jsonl:3: messages[0].role must be one of" in r.stderr
    result = json.loads((path.parent / "out" / "result.json").read_text())
    assert result["status"] == "failed"
