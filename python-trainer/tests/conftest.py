"""Shared test helpers: a job bundle like the one Rollout Lab writes (job.yaml plus a
copy of the golden export fixtures), and running the CLI in it."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
GOLDEN = ROOT.parent / "test" / "fixtures" / "train" / "golden"
sys.path.insert(0, str(ROOT))

# A one-layer Qwen2 built from this config, its tokenizer a byte-level BPE trained on the job's data: nothing is downloaded.
QWEN2 = {"model_type": "qwen2", "vocab_size": 512, "hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 1,
         "num_attention_heads": 2, "num_key_value_heads": 1, "max_position_embeddings": 1024, "tie_word_embeddings": True}
MODEL = "{base: qwen2-test, backend: transformers, config: " + json.dumps(QWEN2) + "}"
PREFIX = "@rollout-trainer "


def write_bundle(tmp: Path, kind: str, data: str | None = None, hp: dict[str, Any] | None = None, extra: str = "") -> Path:
    """job.yaml for a job on a one-layer Qwen2 built from a config (QWEN2; the reference
    LoRA settings, with the embeddings trained in full) in tmp, with `data` (a golden
    fixture) copied to data/; `extra` is appended inside the model mapping (e.g.
    ", adapter: adapters/v1")."""
    (tmp / "data").mkdir(parents=True, exist_ok=True)
    train = "null"
    if data:
        shutil.copy(GOLDEN / data, tmp / "data" / data)
        train = f"data/{data}"
    hp_text = ", ".join(f"{k}: {json.dumps(v) if isinstance(v, (str, list)) else v}" for k, v in (hp or {}).items())
    hp_text = hp_text.replace(": True", ": true").replace(": False", ": false")
    (tmp / "job.yaml").write_text(
        f"""apiVersion: rollout-lab/v1
kind: TrainingJob
id: test-{kind}
phase: {{name: test, kind: {kind}}}
model: {MODEL[:-1]}{extra}}}
hyperparameters: {{{hp_text}}}
data: {{train: {train}}}
output: {{dir: out}}
resources: {{gpus: 0}}
serve: {{host: 127.0.0.1, port: 0}}
command: [python3, -m, rollout_trainer, {kind}, --spec, job.yaml]
""",
        encoding="utf-8",
    )
    return tmp / "job.yaml"


def set_adapter(job_yaml: Path, rel: str) -> None:
    """Makes the bundle's model continue from the adapter at `rel` (relative to the bundle)."""
    text = job_yaml.read_text(encoding="utf-8")
    end = json.dumps(QWEN2)[-30:]
    assert end in text
    job_yaml.write_text(text.replace(end, f"{end}, adapter: {rel}"), encoding="utf-8")


def built_policy(tmp: Path, kind: str = "grpo", data: str | None = "rl-equal.jsonl", hp: dict[str, Any] | None = None) -> Any:
    """The policy of a bundle's job, in this process on the CPU: the built Qwen2 with a fresh
    LoRA adapter, its tokenizer trained on `data`."""
    from rollout_trainer.backends import load_policy
    from rollout_trainer.spec import load_spec

    return load_policy(load_spec(str(write_bundle(tmp, kind, data, hp))), "cpu")


@pytest.fixture
def bundle(tmp_path):
    return lambda kind, data=None, hp=None, extra="": write_bundle(tmp_path, kind, data, hp, extra)


def run_cli(cwd: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """python -m rollout_trainer ARGS in cwd, with only this package on the path."""
    base = {"PYTHONPATH": str(ROOT), "PATH": os.environ.get("PATH", "/usr/bin:/bin"), "PYTHONUNBUFFERED": "1", "PYTHONDONTWRITEBYTECODE": "1",
            "OMP_NUM_THREADS": "1"}
    return subprocess.run([sys.executable, "-m", "rollout_trainer", *args], cwd=cwd, capture_output=True, text=True, env={**base, **(env or {})}, timeout=600)


def events_of(stdout: str) -> list[dict[str, Any]]:
    return [json.loads(line[len(PREFIX):]) for line in stdout.splitlines() if line.startswith(PREFIX)]


def golden(name: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (GOLDEN / name).read_text(encoding="utf-8").splitlines() if line.strip()]
