"""LoRA supervised fine-tuning on exported conversations, the loss on assistant turns only:
the reference "SFT on success" phase of the junior researchers."""

import math
import random
from typing import Any, Dict, List, Tuple

import torch

from .backends import load_policy
from .chat import IGNORE, assistant_labels
from .data import read_sft
from .errors import SpecError, TrainingError
from .events import Emitter, now
from .optim import lr_at, make_optimizer, set_seed, step_optimizer


def tokenize_examples(tok: Any, examples: List[Dict[str, Any]], max_length: int) -> Tuple[List[Tuple[List[int], List[int]]], int]:
    """Token ids and labels per example; examples longer than max_length are dropped (counted), not cut mid-turn."""
    out = []
    dropped = 0
    for ex in examples:
        ids, labels = assistant_labels(tok, ex["messages"], ex.get("tools"))
        if len(ids) > max_length or all(l == IGNORE for l in labels):
            dropped += 1
            continue
        out.append((ids, labels))
    return out, dropped


def batch_loss(policy: Any, batch: List[Tuple[List[int], List[int]]]) -> Tuple[torch.Tensor, int]:
    """Mean cross-entropy over the assistant tokens of the batch."""
    from .backends.common import pad_batch

    ids, mask = pad_batch([b[0] for b in batch], policy.tokenizer.pad_token_id, policy.device)
    labels, _ = pad_batch([b[1] for b in batch], IGNORE, policy.device)
    logits = policy._logits(ids, mask, False).float()
    loss = torch.nn.functional.cross_entropy(logits[:, :-1].reshape(-1, logits.shape[-1]), labels[:, 1:].reshape(-1), ignore_index=IGNORE)
    return loss, int((labels[:, 1:] != IGNORE).sum())


def run_sft(spec: Any, emitter: Emitter) -> Dict[str, Any]:
    hp = spec.hyperparameters
    set_seed(hp["seed"])
    examples = read_sft(spec.path(spec.train))
    policy = load_policy(spec)
    data, dropped = tokenize_examples(policy.tokenizer, examples, int(hp["max_length"]))
    if not data:
        raise SpecError(f"{spec.train}: every example is longer than max_length {hp['max_length']} or has no assistant tokens")
    bs, accum = int(hp["batch_size"]), int(hp["grad_accum"])
    per_epoch = max(1, math.ceil(len(data) / (bs * accum)))
    total = int(hp["max_steps"]) if int(hp["max_steps"]) > 0 else per_epoch * int(hp["epochs"])
    emitter.emit({"event": "start", "job": spec.id, "phase": "sft", **policy.describe(), "examples": len(data), "dropped": dropped, "steps": total, "time": now()})
    params = policy.trainable_parameters()
    opt = make_optimizer(params, float(hp["learning_rate"]))
    rng = random.Random(int(hp["seed"]))
    order: List[int] = []
    step = 0
    last: Dict[str, Any] = {}
    policy.model.train()
    while step < total:
        losses, tokens = [], 0
        for _ in range(accum):
            if len(order) < bs:
                order += rng.sample(range(len(data)), len(data))
            batch = [data[order.pop(0)] for _ in range(min(bs, len(data)))]
            loss, n = batch_loss(policy, batch)
            if not torch.isfinite(loss):
                raise TrainingError(f"the loss is {float(loss)} at step {step + 1} — lower learning_rate")
            (loss / accum).backward()
            losses.append(float(loss))
            tokens += n
        lr = lr_at(step, total, int(hp["warmup_steps"]), float(hp["learning_rate"]))
        grad_norm = step_optimizer(opt, params, lr)
        step += 1
        if step % max(1, int(hp["logging_steps"])) == 0 or step == total:
            last = emitter.metrics(step, epoch=step / per_epoch, loss=sum(losses) / len(losses), lr=lr, grad_norm=grad_norm, tokens=tokens)
        if int(hp["save_steps"]) > 0 and step % int(hp["save_steps"]) == 0 and step < total:
            ckpt = spec.out / f"checkpoint-{step}"
            policy.save_adapter(ckpt)
            emitter.emit({"event": "checkpoint", "step": step, "path": f"{spec.output_dir}/checkpoint-{step}"})
    policy.save_adapter(spec.out / "adapter")
    merged = None
    if hp["merge"]:
        policy.merge_and_save(spec.out / "merged")
        merged = f"{spec.output_dir}/merged"
    return {"adapter": f"{spec.output_dir}/adapter", "merged": merged, "steps": step, "examples": len(data), "metrics": {k: v for k, v in last.items() if k not in ("event",)}, "backend": policy.backend}
