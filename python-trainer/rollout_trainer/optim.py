"""The optimiser and schedule both trainers use: AdamW on the trainable parameters, linear
warm-up then linear decay, gradients clipped to norm 1."""

from typing import Any, List

import torch


def make_optimizer(params: List[torch.nn.Parameter], lr: float) -> torch.optim.Optimizer:
    if not params:
        raise ValueError("the model has no trainable parameters")
    return torch.optim.AdamW(params, lr=lr, weight_decay=0.0)


def lr_at(step: int, total: int, warmup: int, base: float) -> float:
    if warmup > 0 and step < warmup:
        return base * (step + 1) / warmup
    if total <= warmup:
        return base
    return base * max(0.0, (total - step) / (total - warmup))


def step_optimizer(opt: torch.optim.Optimizer, params: List[torch.nn.Parameter], lr: float) -> float:
    for g in opt.param_groups:
        g["lr"] = lr
    norm = torch.nn.utils.clip_grad_norm_(params, 1.0)
    opt.step()
    opt.zero_grad(set_to_none=True)
    return float(norm)


def set_seed(seed: Any) -> None:
    import random

    random.seed(int(seed))
    torch.manual_seed(int(seed))
