"""Supervised fine-tuning on exported conversations, the loss on the assistant turns
only: the reference "SFT on success" phase.

The conversations are tokenised here (chat.assistant_labels), for every backend, so the
labels do not depend on a template carrying `{% generation %}` markers. With the
transformers backend and TRL installed, TRL's SFTTrainer runs the loop on those
pre-tokenised examples (its optimiser, schedule, mixed precision and checkpointing);
otherwise the package's own loop does.

Examples longer than max_length (or the model's context) are dropped and counted, not
truncated: a conversation cut in the middle teaches the model to stop mid-turn."""

import dataclasses
import importlib.util
import inspect
import math
import random
from collections.abc import Iterator
from typing import Any, TypeGuard

import torch

from .backends import load_policy
from .backends.common import left_pad
from .backends.hf import HfPolicy
from .chat import IGNORE, assistant_labels
from .context import too_long_advice
from .data import read_sft
from .errors import DataError, TrainingError
from .events import Emitter, now
from .hparams import SftParams
from .optim import lr_at, make_optimizer, optimizer_step, set_seed
from .policy import Policy
from .spec import JobSpec

Example = tuple[list[int], list[int]]


def fit_examples(tokenized: list[Example], max_length: int) -> tuple[list[Example], dict[str, int]]:
    """The tokenised examples of at most max_length tokens with an assistant token to learn,
    and how many were dropped and why."""
    out: list[Example] = []
    too_long = no_tokens = 0
    for ids, labels in tokenized:
        if len(ids) > max_length:
            too_long += 1
        elif all(label == IGNORE for label in labels[1:]):
            no_tokens += 1
        else:
            out.append((ids, labels))
    return out, {"dropped_too_long": too_long, "dropped_no_assistant_tokens": no_tokens}


def sized_examples(policy: Policy, examples: list[dict[str, Any]], hp: SftParams, emitter: Emitter, source: str) -> tuple[list[Example], dict[str, int]]:
    """The examples a job trains on: what does not fit max_length or the model's context is
    left out, counted, with the setting that would keep it (DataError when nothing is left)."""
    tokenized = [assistant_labels(policy.tokenizer, ex["messages"], ex.get("tools")) for ex in examples]
    caps = [("max_length", hp.max_length)]
    context = policy.max_positions()
    limit = caps[0][1] if not context else min(caps[0][1], int(context))
    data, dropped = fit_examples(tokenized, limit)
    longest = max((len(ids) for ids, _ in tokenized), default=0)
    if not data and not dropped["dropped_too_long"]:
        raise DataError(f"{source}: none of the {len(examples)} examples has an assistant token to learn — export conversations with assistant turns")
    if not data:
        raise DataError(f"{source}: none of the {len(examples)} examples fits {limit} tokens with an assistant token to learn "
                        f"({dropped['dropped_too_long']} too long, the longest {longest} tokens) — {too_long_advice(policy, caps, longest, name_all=True)}")
    if dropped["dropped_too_long"]:
        emitter.log(f"note: {dropped['dropped_too_long']} of {len(examples)} examples left out as longer than {limit} tokens "
                    f"(the longest {longest}) — {too_long_advice(policy, caps, longest)}")
    return data, dropped


def micro_batches(n: int, batch_size: int, seed: int) -> Iterator[tuple[int, list[int]]]:
    """(epoch, example indices) forever: every epoch a fresh seeded shuffle, cut into
    batches of batch_size (the last one of an epoch may be smaller)."""
    rng = random.Random(seed)
    epoch = 0
    while True:
        order = rng.sample(range(n), n)
        for i in range(0, n, batch_size):
            yield epoch, order[i : i + batch_size]
        epoch += 1


def plan_steps(n: int, hp: SftParams) -> tuple[int, int]:
    """(optimizer steps per epoch, total steps): max_steps when > 0, else epochs × per-epoch."""
    micro_per_epoch = math.ceil(n / hp.batch_size)
    per_epoch = max(1, math.ceil(micro_per_epoch / hp.grad_accum))
    total = hp.max_steps if hp.max_steps > 0 else per_epoch * hp.epochs
    return per_epoch, total


def batch_loss_sum(policy: Policy, batch: list[Example]) -> torch.Tensor:
    """Summed cross-entropy over the batch's assistant tokens (the caller divides by the
    step's token count, so every assistant token weighs the same across micro-batches).
    Only the labelled positions' logits are turned into float32 probabilities."""
    ids, mask = left_pad([b[0] for b in batch], policy.tokenizer.pad_token_id, policy.device)
    labels, _ = left_pad([b[1] for b in batch], IGNORE, policy.device)
    logits = policy.forward_logits(ids, mask)
    targets = labels[:, 1:]
    chosen = targets != IGNORE
    rows = logits[:, :-1][chosen].float()
    return torch.nn.functional.cross_entropy(rows, targets[chosen], reduction="sum")


def assistant_tokens(example: Example) -> int:
    return sum(1 for label in example[1][1:] if label != IGNORE)


def train_own_loop(spec: JobSpec, policy: Policy, data: list[Example], emitter: Emitter, per_epoch: int, total: int) -> tuple[int, dict[str, Any]]:
    hp = spec.params(SftParams)
    bs, accum = hp.batch_size, hp.grad_accum
    every_log, every_save = max(1, hp.logging_steps), hp.save_steps
    params = policy.trainable_parameters()
    opt = make_optimizer(params, hp.learning_rate)
    batches = micro_batches(len(data), bs, hp.seed)
    micro_per_epoch = math.ceil(len(data) / bs)
    micro_done = 0
    window_loss = window_tokens = 0.0
    last: dict[str, Any] = {}
    policy.model.train()
    for step in range(total):
        chosen = [next(batches)[1] for _ in range(accum)]
        micro_done += len(chosen)
        step_tokens = sum(assistant_tokens(data[i]) for mb in chosen for i in mb)
        step_loss = 0.0
        for mb in chosen:
            loss_sum = batch_loss_sum(policy, [data[i] for i in mb])
            if not torch.isfinite(loss_sum):
                raise TrainingError(f"the loss is {float(loss_sum)} at step {step + 1} — lower learning_rate")
            (loss_sum / step_tokens).backward()
            step_loss += float(loss_sum)
        lr = lr_at(step, total, hp.warmup_steps, hp.learning_rate)
        grad_norm = optimizer_step(opt, params, lr)
        window_loss += step_loss
        window_tokens += step_tokens
        done = step + 1
        if done % every_log == 0 or done == total:
            last = emitter.metrics(done, epoch=micro_done / micro_per_epoch, loss=window_loss / max(window_tokens, 1),
                                   lr=lr, grad_norm=grad_norm, tokens=int(window_tokens))
            window_loss = window_tokens = 0.0
        if every_save > 0 and done % every_save == 0:
            policy.save_adapter(spec.out / f"checkpoint-{done}")
            emitter.checkpoint(done, f"{spec.output_dir}/checkpoint-{done}")
    return total, last


def trl_usable(policy: Policy) -> TypeGuard[HfPolicy]:
    """TRL's SFTTrainer runs the transformers backend's loop where trl and datasets are installed."""
    return isinstance(policy, HfPolicy) and all(importlib.util.find_spec(m) is not None for m in ("trl", "datasets"))


def train_with_trl(spec: JobSpec, policy: HfPolicy, data: list[Example], emitter: Emitter, total: int) -> tuple[int, dict[str, Any]]:
    """TRL's SFTTrainer on the pre-tokenised examples (input_ids + labels, padded by our
    collator, so TRL's template handling and assistant-mask requirements never apply),
    with a callback that turns its logs and saves into our events."""
    from datasets import Dataset
    from transformers import TrainerCallback
    from trl.trainer.sft_config import SFTConfig
    from trl.trainer.sft_trainer import SFTTrainer

    hp = spec.params(SftParams)
    last: dict[str, Any] = {}

    class Events(TrainerCallback):
        def on_log(self, args: Any, state: Any, control: Any, logs: dict[str, Any] | None = None, **kwargs: Any) -> None:
            nonlocal last
            if logs and "loss" in logs:
                last = emitter.metrics(state.global_step, epoch=logs.get("epoch"), loss=logs["loss"], lr=logs.get("learning_rate"),
                                       grad_norm=logs.get("grad_norm"), tokens=logs.get("num_tokens"),
                                       mean_token_accuracy=logs.get("mean_token_accuracy"))

        def on_save(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            policy.carry_base(spec.out / f"checkpoint-{state.global_step}")
            emitter.checkpoint(state.global_step, f"{spec.output_dir}/checkpoint-{state.global_step}")

    pad = policy.tokenizer.pad_token_id

    def collate(rows: list[dict[str, Any]]) -> dict[str, torch.Tensor]:
        width = max(len(r["input_ids"]) for r in rows)
        ids = torch.full((len(rows), width), pad, dtype=torch.long)
        labels = torch.full((len(rows), width), IGNORE, dtype=torch.long)
        mask = torch.zeros((len(rows), width), dtype=torch.long)
        for i, r in enumerate(rows):
            n = len(r["input_ids"])
            ids[i, :n] = torch.tensor(r["input_ids"])
            labels[i, :n] = torch.tensor(r["labels"])
            mask[i, :n] = 1
        return {"input_ids": ids, "attention_mask": mask, "labels": labels}

    on_gpu = policy.device.type == "cuda"
    wanted: dict[str, Any] = {
        "output_dir": str(spec.out),
        "per_device_train_batch_size": hp.batch_size,
        "gradient_accumulation_steps": hp.grad_accum,
        "learning_rate": hp.learning_rate,
        "max_steps": hp.max_steps if hp.max_steps > 0 else -1,
        "num_train_epochs": float(hp.epochs),
        "warmup_steps": hp.warmup_steps,
        "lr_scheduler_type": "linear",
        "weight_decay": 0.0,
        "max_grad_norm": 1.0,
        "logging_steps": max(1, hp.logging_steps),
        "save_strategy": "steps" if hp.save_steps > 0 else "no",
        "save_steps": max(1, hp.save_steps),
        "save_only_model": True,
        "seed": hp.seed,
        "data_seed": hp.seed,
        "bf16": on_gpu and policy.dtype == torch.bfloat16,
        "fp16": on_gpu and policy.dtype == torch.float16,
        "gradient_checkpointing": False,  # the backend has set it up already (non-reentrant, with LoRA)
        "report_to": "none",
        "remove_unused_columns": False,
        "dataset_kwargs": {"skip_prepare_dataset": True},
        "packing": False,
        "disable_tqdm": True,
        "max_length": hp.max_length,
    }
    fields = {f.name for f in dataclasses.fields(SFTConfig)}
    if "max_length" not in fields:
        wanted["max_seq_length"] = wanted.pop("max_length")  # TRL before 0.20
    config = SFTConfig(**{k: v for k, v in wanted.items() if k in fields})
    dataset = Dataset.from_dict({"input_ids": [d[0] for d in data], "labels": [d[1] for d in data]})
    kwargs: dict[str, Any] = {"model": policy.model, "args": config, "train_dataset": dataset, "data_collator": collate, "callbacks": [Events()]}
    tokenizer_arg = "processing_class" if "processing_class" in inspect.signature(SFTTrainer.__init__).parameters else "tokenizer"
    kwargs[tokenizer_arg] = policy.tokenizer.tok
    trainer = SFTTrainer(**kwargs)
    trainer.train()
    return int(trainer.state.global_step), last


def run_sft(spec: JobSpec, emitter: Emitter) -> dict[str, Any]:
    """The sft job: returns the fields of a succeeded result.json."""
    hp = spec.params(SftParams)
    set_seed(hp.seed)
    examples = read_sft(spec.path(spec.train_data))
    policy = load_policy(spec, emitter=emitter)
    data, dropped = sized_examples(policy, examples, hp, emitter, spec.train_data)
    per_epoch, total = plan_steps(len(data), hp)
    use_trl = trl_usable(policy)
    emitter.emit({"event": "start", "job": spec.id, "phase": "sft", **policy.describe(), "examples": len(data), "steps": total,
                  "trainer": "trl" if use_trl else "rollout_trainer", **dropped, "time": now()})
    if use_trl:
        steps, last = train_with_trl(spec, policy, data, emitter, total)
    else:
        steps, last = train_own_loop(spec, policy, data, emitter, per_epoch, total)
    policy.save_adapter(spec.out / "adapter")
    merged = None
    if hp.merge:
        policy.merge_and_save(spec.out / "merged")
        merged = f"{spec.output_dir}/merged"
    return {"adapter": f"{spec.output_dir}/adapter", "merged": merged, "steps": steps, "examples": len(data), **dropped,
            "metrics": {k: v for k, v in last.items() if k != "event"}}
