import shutil
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
GOLDEN = ROOT.parent / "test" / "fixtures" / "train" / "golden"
sys.path.insert(0, str(ROOT))

TINY = {"hidden_size": 32, "num_layers": 1, "num_heads": 2, "max_positions": 1024}


def write_bundle(tmp: Path, kind: str, data: str = None, hp: dict = None, extra: str = "") -> Path:
    """A job bundle like the one Rollout Lab writes: job.yaml and the data."""
    (tmp / "data").mkdir(parents=True, exist_ok=True)
    train = "null"
    if data:
        shutil.copy(GOLDEN / data, tmp / "data" / data)
        train = f"data/{data}"
    hp_text = ", ".join(f"{k}: {v}" for k, v in (hp or {}).items())
    (tmp / "job.yaml").write_text(
        f"""apiVersion: rollout-lab/v1
kind: TrainingJob
id: test-{kind}
phase: {{name: test, kind: {kind}}}
model: {{base: tiny, backend: tiny, config: {{hidden_size: 32, num_layers: 1, num_heads: 2, max_positions: 1024}}{extra}}}
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


@pytest.fixture
def bundle(tmp_path):
    return lambda kind, data=None, hp=None, extra="": write_bundle(tmp_path, kind, data, hp, extra)
