import json
import subprocess
import sys

from conftest import ROOT


def run(bundle_file, kind):
    return subprocess.run([sys.executable, "-m", "rollout_trainer", kind, "--spec", "job.yaml"], cwd=bundle_file.parent, capture_output=True, text=True,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "PYTHONUNBUFFERED": "1"})


def events(out):
    return [json.loads(l[len("@rollout-trainer "):]) for l in out.splitlines() if l.startswith("@rollout-trainer ")]


def test_sft_on_the_tiny_model_learns_and_writes_its_adapter_and_result(bundle):
    path = bundle("sft", "sft.jsonl", {"max_steps": 12, "batch_size": 4, "grad_accum": 1, "learning_rate": 0.003, "save_steps": 6})
    r = run(path, "sft")
    assert r.returncode == 0, r.stderr
    evs = events(r.stdout)
    assert evs[0]["event"] == "start" and evs[0]["backend"] == "tiny" and evs[0]["steps"] == 12
    losses = [e["loss"] for e in evs if e["event"] == "metrics"]
    assert len(losses) == 12
    assert sum(losses[-3:]) / 3 < sum(losses[:3]) / 3, f"the loss goes down: {losses}"
    assert any(e["event"] == "checkpoint" and e["path"] == "out/checkpoint-6" for e in evs)
    out = path.parent / "out"
    result = json.loads((out / "result.json").read_text())
    assert result["status"] == "succeeded" and result["adapter"] == "out/adapter" and result["steps"] == 12
    assert (out / "adapter" / "tiny_model.pt").exists()
    assert [json.loads(l) for l in (out / "events.jsonl").read_text().splitlines()] == evs


def test_grpo_trains_on_groups_and_a_second_job_starts_from_its_adapter(bundle, tmp_path):
    path = bundle("grpo", "rl-equal.jsonl", {"max_steps": 2, "batch_size": 2, "learning_rate": 0.001})
    r = run(path, "grpo")
    assert r.returncode == 0, r.stderr
    evs = events(r.stdout)
    metrics = [e for e in evs if e["event"] == "metrics"]
    assert metrics and {"loss", "reward_mean", "kl", "clip_frac", "ratio_mean"} <= set(metrics[0])
    result = json.loads((path.parent / "out" / "result.json").read_text())
    assert result["status"] == "succeeded" and result["groups"] == 3
    (path.parent / "adapter").mkdir()
    for f in (path.parent / "out" / "adapter").iterdir():
        (path.parent / "adapter" / f.name).write_bytes(f.read_bytes())
    text = path.read_text().replace("max_positions: 1024}", "max_positions: 1024}, adapter: adapter")
    path.write_text(text)
    r2 = run(path, "grpo")
    assert r2.returncode == 0, r2.stderr
    assert events(r2.stdout)[0]["version"] == "adapter"


def test_a_group_set_without_signal_fails_clearly(bundle):
    path = bundle("grpo", "rl-equal.jsonl", {"max_steps": 1})
    data = path.parent / "data" / "rl-equal.jsonl"
    recs = [json.loads(l) for l in data.read_text().splitlines()]
    data.write_text("\n".join(json.dumps({**r, "reward": 0.5}) for r in recs) + "\n")
    r = run(path, "grpo")
    assert r.returncode == 2
    assert "nothing to learn" in r.stderr
