"""The optimiser and schedule both trainers use, and seeding.

AdamW without weight decay (a LoRA adapter trains from a sensible starting point; decay
only pulls it back), gradients clipped to norm 1 (one outlier
batch must not wreck an adapter), linear warm-up then linear decay to zero (SFT) or a
constant rate (GRPO, whose updates are small and repeated)."""

import random

import torch
from torch.nn.utils.clip_grad import clip_grad_norm_

MAX_GRAD_NORM = 1.0


def set_seed(seed: int) -> None:
    """Python, numpy (where installed) and torch (CPU and GPUs) from one seed."""
    seed = int(seed)
    random.seed(seed)
    try:
        import numpy

        numpy.random.seed(seed % (2**32))
    except ImportError:
        pass
    torch.manual_seed(seed)


def make_optimizer(params: list[torch.nn.Parameter], lr: float) -> torch.optim.Optimizer:
    if not params:
        raise ValueError("the model has no trainable parameters (is the adapter loaded for training?)")
    return torch.optim.AdamW(params, lr=lr, weight_decay=0.0)


def lr_at(step: int, total: int, warmup: int, base: float) -> float:
    """The learning rate of update `step` (0-based) of `total`: the first update of a
    warm-up already moves (base / warmup), and the last one before zero is base / (total - warmup)."""
    if warmup > 0 and step < warmup:
        return base * (step + 1) / warmup
    if total <= warmup:
        return base
    return base * max(0.0, (total - step) / (total - warmup))


def optimizer_step(opt: torch.optim.Optimizer, params: list[torch.nn.Parameter], lr: float) -> float:
    """Clip, step at `lr`, clear the gradients; returns the gradient norm before clipping."""
    for group in opt.param_groups:
        group["lr"] = lr
    norm = clip_grad_norm_(params, MAX_GRAD_NORM)
    opt.step()
    opt.zero_grad(set_to_none=True)
    return float(norm)
