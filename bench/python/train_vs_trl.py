"""Throughput of python-trainer's training beside TRL's, on the same tiny Qwen2 (built from a
config with a fixed seed), the same LoRA, data and hyper-parameters. Run by
bench/trainSft.bench.ts and bench/trainGrpo.bench.ts with the trainer's venv; prints one
line `@bench-result {JSON}` with both figures and the runs they come from.

  sft   tokens/s of the lab's sft job (`python -m rollout_trainer sft --spec job.yaml` in a
        bundle, as a job runs) and of TRL's SFTTrainer run directly (its own tokenisation of
        the same conversations, its own collator, peft_config), each in its own process.
        Tokens are TRL's `num_tokens` in both: the non-pad tokens (prompt and completion) of
        the sequences trained on (both runs see the same batches: `same_batches`). The first
        WARMUP_STEPS steps are left out; each later step counts with its median duration over
        the alternating runs of its side. TRL's config leaves `use_cpu` unset, as the lab's
        does (on this CPU, use_cpu=True made its steps about twice as slow).
  grpo  seconds of one GRPO optimizer step: the lab's grpo_update on a batch of rollout
        records (with the sampling server's token_ids and logprobs, as a served policy
        returns them) against GRPOTrainer on the same batch — its reference logprobs (adapter
        off), `_compute_loss`, backward, gradient clipping and its optimizer's step. Median of
        STEPS steps each, alternating, after warm-up steps.

On a CPU the runs are single-threaded unless OMP_NUM_THREADS is set (see main). Nothing is
downloaded: the tokenizer is a byte-level BPE trained here on the golden export."""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
TRAINER = ROOT / "python-trainer"
GOLDEN = ROOT / "test" / "fixtures" / "train" / "golden"
sys.path.insert(0, str(TRAINER))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

PREFIX = "@rollout-trainer "
RESULT = "@bench-result "  # the line of the figures; the jobs' own output goes around it
WARMUP_STEPS = 3
SEED = 0
LORA = {"lora_r": 16, "lora_alpha": 16, "lora_dropout": 0.05, "target_modules": ["q_proj", "k_proj", "v_proj", "o_proj"]}
def device_and_dtype() -> tuple[str, str]:
    import torch

    if torch.cuda.is_available():
        return "cuda", "bfloat16" if torch.cuda.is_bf16_supported() else "float32"
    return "cpu", "float32"


def build_tokenizer(directory: Path) -> Any:
    """The package's offline tokenizer (a byte-level BPE with its ChatML template) trained on the golden export, saved to directory."""
    from rollout_trainer.backends.hf_build import corpus_of, train_tokenizer

    records = [json.loads(line) for f in sorted(GOLDEN.glob("*.jsonl")) for line in f.read_text(encoding="utf-8").splitlines() if line.strip()]
    return train_tokenizer(corpus_of(records), 1000, directory)


def model_config(vocab: int, hidden: int, layers: int) -> dict[str, Any]:
    return {"model_type": "qwen2", "vocab_size": vocab, "hidden_size": hidden, "intermediate_size": 2 * hidden, "num_hidden_layers": layers,
            "num_attention_heads": 4, "num_key_value_heads": 2, "max_position_embeddings": 4096, "tie_word_embeddings": False}


def build_model(config: dict[str, Any], dtype: str, device: str) -> Any:
    """The model the transformers backend builds from model.config (hf_build.build_model: same seed, same weights)."""
    import torch

    from rollout_trainer.backends.hf_build import build_model as build

    return build(config, int(config["vocab_size"]), SEED).to(device=device, dtype=getattr(torch, dtype))


def lora_config(model: Any) -> Any:
    """The lab's adapter on a model built from a config: LoRA on LORA's targets, the input
    embeddings and output head trained in full (peft's modules_to_save)."""
    from peft import LoraConfig

    from rollout_trainer.backends.hf_build import embedding_modules

    return LoraConfig(r=LORA["lora_r"], lora_alpha=LORA["lora_alpha"], lora_dropout=LORA["lora_dropout"], target_modules=LORA["target_modules"],
                      task_type="CAUSAL_LM", modules_to_save=embedding_modules(model))


def write_bundle(bundle: Path, kind: str, config: dict[str, Any], dtype: str, hp: dict[str, Any], data: str, lines: list[str]) -> Path:
    (bundle / "data").mkdir(parents=True, exist_ok=True)
    (bundle / "data" / data).write_text("\n".join(lines) + "\n", encoding="utf-8")
    spec = {
        "apiVersion": "rollout-lab/v1", "kind": "TrainingJob", "id": f"bench-{kind}", "phase": {"name": "bench", "kind": kind},
        "model": {"base": "base", "backend": "transformers", "config": config, "adapter": None, "dtype": dtype},
        "hyperparameters": {**LORA, **hp}, "data": {"train": f"data/{data}"}, "output": {"dir": "out"}, "resources": {"gpus": 0},
        "command": ["python3", "-m", "rollout_trainer", kind, "--spec", "job.yaml"],
    }
    (bundle / "job.yaml").write_text(json.dumps(spec), encoding="utf-8")  # JSON is YAML
    return bundle / "job.yaml"


def intervals(points: list[tuple[float, float]]) -> list[float]:
    return [round(b[0] - a[0], 4) for a, b in zip(points, points[1:])]


def step_tokens(points: list[tuple[float, float]]) -> list[float]:
    return [b[1] - a[1] for a, b in zip(points, points[1:])]


def steady_rate(runs: list[dict[str, Any]]) -> float:
    """tokens/s of runs over the same batches: each step after the warm-up takes its median
    duration over the runs (a busy spell of a shared machine hits one run's steps, not the
    median), and the rate is their tokens over the sum of those durations."""
    tokens = runs[0]["step_tokens"]
    if any(r["step_tokens"] != tokens for r in runs):
        raise RuntimeError("the runs trained on different batches (their steps' token counts differ)")
    steps = range(WARMUP_STEPS - 1, len(tokens))
    return sum(tokens[k] for k in steps) / sum(statistics.median(r["step_s"][k] for r in runs) for k in steps)


def rate(points: list[tuple[float, float]]) -> float:
    """tokens/s between the end of step WARMUP_STEPS and the last step, from (time, cumulative tokens) per step."""
    if len(points) <= WARMUP_STEPS + 1:
        raise RuntimeError(f"only {len(points)} steps logged; need more than {WARMUP_STEPS + 1}")
    (t0, n0), (t1, n1) = points[WARMUP_STEPS - 1], points[-1]
    return (n1 - n0) / (t1 - t0)


# -- sft ---------------------------------------------------------------------------------

SFT_HP = {"learning_rate": 2e-4, "batch_size": 4, "grad_accum": 1, "max_steps": 15, "warmup_steps": 0, "save_steps": 0, "logging_steps": 1,
          "max_length": 4096, "gradient_checkpointing": False, "seed": SEED}


def sft_examples() -> list[str]:
    return [line for line in (GOLDEN / "sft.jsonl").read_text(encoding="utf-8").splitlines() if line.strip()]


def sft_lab(work: Path, config: dict[str, Any], dtype: str) -> dict[str, Any]:
    """The lab's sft job in a bundle, timed from its metrics events as they arrive."""
    bundle = work / "lab"
    build_tokenizer(bundle / "base")
    write_bundle(bundle, "sft", config, dtype, SFT_HP, "sft.jsonl", sft_examples())
    env = {**os.environ, "PYTHONPATH": str(TRAINER), "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen([sys.executable, "-m", "rollout_trainer", "sft", "--spec", "job.yaml"], cwd=bundle, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    points: list[tuple[float, float]] = []
    start: dict[str, Any] = {}
    assert proc.stdout is not None
    for line in proc.stdout:
        if not line.startswith(PREFIX):
            continue
        ev = json.loads(line[len(PREFIX):])
        if ev["event"] == "start":
            start = ev
        elif ev["event"] == "metrics":
            points.append((time.perf_counter(), float(ev["tokens"])))
    err = proc.stderr.read() if proc.stderr else ""
    if proc.wait() != 0:
        raise RuntimeError(f"the lab's sft job failed ({proc.returncode}): {err[-3000:]}")
    if start.get("trainer") != "trl":
        raise RuntimeError(f"the lab's sft job did not run through TRL (start event {start})")
    return {"tokens_per_s": rate(points), "steps": len(points), "tokens": points[-1][1] - points[WARMUP_STEPS - 1][1], "step_s": intervals(points),
            "step_tokens": step_tokens(points)}


def sft_trl(work: Path, config: dict[str, Any], dtype: str, device: str) -> dict[str, Any]:
    """TRL's SFTTrainer directly: the conversations as a messages dataset, its own tokenisation and collator, LoRA by peft_config."""
    from datasets import Dataset
    from transformers import TrainerCallback
    from trl import SFTConfig, SFTTrainer

    tok = build_tokenizer(work / "trl-base")
    rows = [json.loads(line) for line in sft_examples()]
    for r in rows:  # the template wants tool-call arguments as objects, as the lab's HfTokenizer passes them
        for m in r["messages"]:
            for tc in m.get("tool_calls") or []:
                args = tc["function"].get("arguments")
                tc["function"]["arguments"] = json.loads(args) if isinstance(args, str) and args.strip() else (args or {})
            m["content"] = m.get("content") or ""
    dataset = Dataset.from_list([{"messages": r["messages"], "tools": json.dumps(r.get("tools") or [])} for r in rows])
    dataset = dataset.map(lambda ex: {"tools": json.loads(ex["tools"]) or None})
    points: list[tuple[float, float]] = []

    class Clock(TrainerCallback):
        def on_log(self, args: Any, state: Any, control: Any, logs: dict[str, Any] | None = None, **kwargs: Any) -> None:
            if logs and "loss" in logs:
                points.append((time.perf_counter(), float(logs["num_tokens"])))

    on_gpu = device == "cuda"
    args = SFTConfig(output_dir=str(work / "trl-out"), per_device_train_batch_size=SFT_HP["batch_size"], gradient_accumulation_steps=SFT_HP["grad_accum"],
                     learning_rate=SFT_HP["learning_rate"], max_steps=SFT_HP["max_steps"], warmup_steps=0, lr_scheduler_type="linear", weight_decay=0.0,
                     max_grad_norm=1.0, logging_steps=1, save_strategy="no", seed=SEED, data_seed=SEED, bf16=on_gpu and dtype == "bfloat16",
                     fp16=False, gradient_checkpointing=False, report_to="none", disable_tqdm=True, max_length=SFT_HP["max_length"],
                     packing=False)
    model = build_model(config, dtype, device)
    trainer = SFTTrainer(model=model, args=args, train_dataset=dataset, processing_class=tok, peft_config=lora_config(model), callbacks=[Clock()])
    trainer.train()
    return {"tokens_per_s": rate(points), "steps": len(points), "tokens": points[-1][1] - points[WARMUP_STEPS - 1][1], "step_s": intervals(points),
            "step_tokens": step_tokens(points)}


def run_sft(args: argparse.Namespace) -> dict[str, Any]:
    device, dtype = device_and_dtype()
    with tempfile.TemporaryDirectory(prefix="rollout-lab-bench-sft-") as tmp:
        vocab = len(build_tokenizer(Path(tmp) / "probe"))
        config = model_config(vocab, args.hidden, args.layers)
        lab: list[dict[str, Any]] = []
        trl: list[dict[str, Any]] = []
        for i in range(args.repeats):  # alternate, so a busy spell of the machine hits both
            lab.append(sft_lab(Path(tmp) / f"lab-{i}", config, dtype))
            trl.append(run_subprocess("sft-trl", args))
    return {"figure": "train.sft.tokens_per_s", "unit": "tokens/s", "device": device, "dtype": dtype, "threads": os.environ.get("OMP_NUM_THREADS"), "model": config,
            "lab": steady_rate(lab), "trl": steady_rate(trl), "same_batches": lab[0]["step_tokens"] == trl[0]["step_tokens"],
            "lab_runs": lab, "trl_runs": trl, "warmup_steps": WARMUP_STEPS, "hyperparameters": {**SFT_HP, **LORA}}


def run_subprocess(mode: str, args: argparse.Namespace) -> dict[str, Any]:
    """One TRL run in its own process, as the lab's job runs in its own."""
    r = subprocess.run([sys.executable, __file__, mode, "--hidden", str(args.hidden), "--layers", str(args.layers)], capture_output=True, text=True,
                       env={**os.environ, "PYTHONUNBUFFERED": "1"})
    if r.returncode != 0:
        raise RuntimeError(f"{mode} failed ({r.returncode}): {r.stderr[-3000:]}")
    return json.loads(next(line for line in reversed(r.stdout.splitlines()) if line.startswith(RESULT))[len(RESULT):])


# -- grpo --------------------------------------------------------------------------------

GRPO_HP = {"learning_rate": 1e-6, "kl_coef": 0.001, "clip_eps": 0.2, "batch_size": 8, "grad_accum": 1, "epochs": 1, "max_steps": 1,
           "gradient_checkpointing": False, "loss_agg": "seq-mean-token-mean", "group_size": 4, "seed": SEED}


def rollout_records(policy: Any, new_tokens: int) -> list[dict[str, Any]]:
    """Two groups of four sampled completions of golden prompts, with the token_ids and logprobs a
    served policy returns, and rewards that differ within each group."""
    from rollout_trainer.chat import prompt_and_completion_ids

    golden = [json.loads(line) for line in (GOLDEN / "rl-equal.jsonl").read_text(encoding="utf-8").splitlines() if line.strip()]
    prompts = [golden[0], golden[5]]
    records = []
    for g, rec in enumerate(prompts):
        ids, _ = prompt_and_completion_ids(policy.tokenizer, rec["messages"], rec.get("tools"), {"text": "", "tool_calls": []})
        for k in range(4):
            sampled = policy.generate(ids, new_tokens, 1.0, 1.0, seed=10 * g + k, stop_ids=set())
            records.append({"group": f"t{g}", "messages": rec["messages"], "tools": rec.get("tools"),
                            "completion": {"text": policy.tokenizer.decode(sampled.ids), "tool_calls": []},
                            "reward": float((k * 7 + g) % 4) / 3, "token_ids": sampled.ids, "logprobs": sampled.logprobs})
    return records


def run_grpo(args: argparse.Namespace) -> dict[str, Any]:
    import torch
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    from rollout_trainer.backends import load_policy
    from rollout_trainer.events import Emitter
    from rollout_trainer.grpo import grpo_update, prepare_samples
    from rollout_trainer.hparams import GrpoParams
    from rollout_trainer.spec import load_spec

    device, dtype = device_and_dtype()
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    with tempfile.TemporaryDirectory(prefix="rollout-lab-bench-grpo-") as tmp:
        bundle = Path(tmp) / "lab"
        tok = build_tokenizer(bundle / "base")
        config = model_config(len(tok), args.hidden, args.layers)
        spec = load_spec(str(write_bundle(bundle, "grpo", config, dtype, GRPO_HP, "rl.jsonl", ["{}"])))
        policy = load_policy(spec, device)
        records = rollout_records(policy, args.new_tokens)
        hp = spec.params(GrpoParams)
        emitter = Emitter(bundle / "out")
        samples, _ = prepare_samples(policy, records, hp)

        # TRL: the same model and LoRA built its way, the same batch as its generation step hands it to the loss.
        on_gpu = device == "cuda"
        targs = GRPOConfig(output_dir=str(Path(tmp) / "trl"), report_to=[], bf16=on_gpu and dtype == "bfloat16", beta=hp.kl_coef,
                           epsilon=hp.clip_eps, loss_type="grpo", learning_rate=hp.learning_rate, weight_decay=0.0, max_grad_norm=1.0,
                           num_generations=4, per_device_train_batch_size=8, gradient_accumulation_steps=1, gradient_checkpointing=False,
                           use_bias_correction_kl=False, max_completion_length=args.new_tokens, disable_tqdm=True, seed=SEED)
        model = build_model(config, dtype, device)
        trainer = GRPOTrainer(model=model, reward_funcs=lambda completions, **kw: [0.0] * len(completions), args=targs,
                              train_dataset=Dataset.from_dict({"prompt": ["x"] * 8}), processing_class=tok, peft_config=lora_config(model))
        trainer.current_gradient_accumulation_steps = 1  # set by Trainer's loop, which does not run here
        model = trainer.model
        trainer.create_optimizer()
        opt = trainer.optimizer
        params = [p for p in model.parameters() if p.requires_grad]
        pad = policy.tokenizer.pad_token_id
        plen = max(s.start for s in samples)
        clen = max(len(s.ids) - s.start for s in samples)
        prompt_ids = torch.full((len(samples), plen), pad, dtype=torch.long)
        prompt_mask = torch.zeros((len(samples), plen), dtype=torch.long)
        completion_ids = torch.full((len(samples), clen), pad, dtype=torch.long)
        completion_mask = torch.zeros((len(samples), clen), dtype=torch.long)
        old = torch.zeros((len(samples), clen))
        for i, s in enumerate(samples):
            p, c = s.ids[: s.start], s.ids[s.start :]
            prompt_ids[i, plen - len(p) :] = torch.tensor(p)
            prompt_mask[i, plen - len(p) :] = 1
            completion_ids[i, : len(c)] = torch.tensor(c)
            completion_mask[i, : len(c)] = 1
            assert s.old is not None
            old[i, : len(c)] = s.old
        inputs = {"prompt_ids": prompt_ids.to(device), "prompt_mask": prompt_mask.to(device), "completion_ids": completion_ids.to(device),
                  "completion_mask": completion_mask.to(device), "advantages": torch.tensor([s.advantage for s in samples], device=device),
                  "old_per_token_logps": old.to(device)}
        input_ids = torch.cat([inputs["prompt_ids"], inputs["completion_ids"]], dim=1)
        attention = torch.cat([inputs["prompt_mask"], inputs["completion_mask"]], dim=1)

        def trl_step() -> float:
            sync()
            t = time.perf_counter()
            model.train()
            with torch.no_grad(), model.disable_adapter():  # TRL's reference for a fresh adapter: the base model
                ref, _, _ = trainer._get_per_token_logps_and_entropies(model, input_ids, attention, clen)
            loss = trainer._compute_loss(model, {**inputs, "ref_per_token_logps": ref})
            loss.backward()
            trainer.accelerator.clip_grad_norm_(params, targs.max_grad_norm)
            opt.step()
            opt.zero_grad(set_to_none=True)
            sync()
            return time.perf_counter() - t

        def lab_step(n: int) -> float:
            sync()
            t = time.perf_counter()
            with policy.lock:
                out = grpo_update(policy, records, hp, emitter, step_offset=n)
            sync()
            if out["steps"] != 1 or out["behaviour_logprobs"] != len(records):
                raise RuntimeError(f"the lab's update did not take one step on the records' own logprobs: {out}")
            return time.perf_counter() - t

        lab: list[float] = []
        trl: list[float] = []
        for n in range(args.warmup + args.steps):
            a, b = lab_step(n), trl_step()
            if n >= args.warmup:
                lab.append(a)
                trl.append(b)
        tokens = int(completion_mask.sum()) + int(prompt_mask.sum())
    return {"figure": "train.grpo.step_s", "unit": "s", "device": device, "dtype": dtype, "threads": torch.get_num_threads(), "model": config, "records": len(records),
            "tokens": tokens, "completion_tokens": int(completion_mask.sum()), "lab": statistics.median(lab), "trl": statistics.median(trl),
            "lab_steps": lab, "trl_steps": trl, "hyperparameters": {**GRPO_HP, **LORA}}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("mode", choices=["sft", "grpo", "sft-trl"])
    ap.add_argument("--hidden", type=int, default=256)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=2, help="sft: alternating runs of each")
    ap.add_argument("--steps", type=int, default=7, help="grpo: timed steps of each")
    ap.add_argument("--warmup", type=int, default=2, help="grpo: steps of each before timing")
    ap.add_argument("--new-tokens", type=int, default=64, help="grpo: tokens sampled per completion")
    args = ap.parse_args()
    import torch

    if not torch.cuda.is_available() and "OMP_NUM_THREADS" not in os.environ:
        # On a CPU shared with other work, two or more threads wait on each other whenever one
        # is descheduled, and step times swing tenfold from run to run; one thread (for this
        # process and the jobs it starts) keeps the lab-vs-TRL ratio steady. Set OMP_NUM_THREADS to override.
        os.environ["OMP_NUM_THREADS"] = "1"
        torch.set_num_threads(1)
    if args.mode == "sft":
        out = run_sft(args)
    elif args.mode == "sft-trl":
        device, dtype = device_and_dtype()
        with tempfile.TemporaryDirectory(prefix="rollout-lab-bench-sft-trl-") as tmp:
            vocab = len(build_tokenizer(Path(tmp) / "probe"))
            out = sft_trl(Path(tmp), model_config(vocab, args.hidden, args.layers), dtype, device)
    else:
        out = run_grpo(args)
    print(RESULT + json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
