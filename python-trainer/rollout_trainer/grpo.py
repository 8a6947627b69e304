"""GRPO on exported rollout groups: group-normalised advantages, the clipped surrogate
against the behaviour policy's logprobs, and a k3 KL term to the reference policy."""

import math
import random
from collections import defaultdict
from typing import Any, Dict, List, Optional, Sequence, Tuple

import torch

from .backends import load_policy
from .chat import prompt_and_completion_ids
from .data import read_rl
from .errors import SpecError, TrainingError
from .events import Emitter, now
from .optim import make_optimizer, set_seed, step_optimizer


def group_advantages(rewards: Sequence[float], groups: Sequence[str], eps: float = 1e-6) -> Tuple[List[float], Dict[str, int]]:
    """(reward - group mean) / (group std + eps) per record; a group of one record, or whose
    rewards are all equal, carries no signal: its advantages are 0 and it is counted."""
    by: Dict[str, List[float]] = defaultdict(list)
    for r, g in zip(rewards, groups):
        by[g].append(float(r))
    stats = {}
    flat = {"groups": len(by), "singleton_groups": 0, "zero_variance_groups": 0}
    for g, rs in by.items():
        mean = sum(rs) / len(rs)
        std = math.sqrt(sum((x - mean) ** 2 for x in rs) / len(rs))
        if len(rs) < 2:
            flat["singleton_groups"] += 1
        elif std == 0:
            flat["zero_variance_groups"] += 1
        stats[g] = (mean, std, len(rs) >= 2 and std > 0)
    adv = []
    for r, g in zip(rewards, groups):
        mean, std, useful = stats[g]
        adv.append((float(r) - mean) / (std + eps) if useful else 0.0)
    return adv, flat


def grpo_loss(logp: List[torch.Tensor], old_logp: List[torch.Tensor], ref_logp: Optional[List[torch.Tensor]], advantages: Sequence[float],
              clip_eps: float, kl_coef: float, loss_agg: str = "seq-mean-token-mean") -> Tuple[torch.Tensor, Dict[str, float]]:
    """The loss over a batch of completions (lists of per-token logprobs) and its statistics."""
    per_seq, all_tokens = [], []
    clipped = tokens = 0
    kl_sum = ratio_sum = 0.0
    for i, lp in enumerate(logp):
        a = float(advantages[i])
        ratio = torch.exp(lp - old_logp[i].detach())
        surr = torch.min(ratio * a, torch.clamp(ratio, 1 - clip_eps, 1 + clip_eps) * a)
        loss_t = -surr
        if ref_logp is not None and kl_coef > 0:
            d = ref_logp[i].detach() - lp
            kl = torch.exp(d) - d - 1
            loss_t = loss_t + kl_coef * kl
            kl_sum += float(kl.detach().sum())
        per_seq.append(loss_t.mean())
        all_tokens.append(loss_t)
        clipped += int(((ratio - 1).abs() > clip_eps).sum())
        ratio_sum += float(ratio.detach().sum())
        tokens += lp.numel()
    if loss_agg == "token-mean":
        loss = torch.cat(all_tokens).mean()
    else:
        loss = torch.stack(per_seq).mean()
    n = max(tokens, 1)
    return loss, {"kl": kl_sum / n, "clip_frac": clipped / n, "ratio_mean": ratio_sum / n, "tokens": float(tokens)}


class Prepared:
    """A record as token ids, with its behaviour logprobs when the record carries usable ones."""

    def __init__(self, ids: List[int], start: int, old: Optional[List[float]], reward: float, group: str) -> None:
        self.ids, self.start, self.old, self.reward, self.group = ids, start, old, reward, group


def prepare(policy: Any, records: List[Dict[str, Any]], hp: Dict[str, Any]) -> Tuple[List[Prepared], int]:
    out, dropped = [], 0
    limit = policy.max_positions() if hasattr(policy, "max_positions") else None
    for rec in records:
        prompt, completion, sampled = prompt_and_completion_ids(policy.tokenizer, rec)
        prompt = prompt[-int(hp["max_prompt_length"]):]
        completion = completion[: int(hp["max_response_length"])]
        if not completion or (limit and len(prompt) + len(completion) > limit):
            dropped += 1
            continue
        lps = rec.get("logprobs")
        old = [float(x) for x in lps[: len(completion)]] if sampled and lps and len(lps) >= len(completion) else None
        out.append(Prepared(prompt + completion, len(prompt), old, float(rec["reward"]), str(rec["group"])))
    return out, dropped


def grpo_update(policy: Any, records: List[Dict[str, Any]], hp: Dict[str, Any], emitter: Emitter, step_offset: int = 0, on_step: Optional[Any] = None) -> Dict[str, Any]:
    """One update pass over the records (`epochs` passes of `batch_size` records per optimizer
    step, at most `max_steps` steps). The optimizer stays on the policy, so a server can call
    this again with the next batch of groups."""
    items, dropped = prepare(policy, records, hp)
    if not items:
        raise SpecError("no record fits max_prompt_length / max_response_length and the model's context — nothing to train on")
    adv, flat = group_advantages([p.reward for p in items], [p.group for p in items], float(hp["adv_eps"]))
    useful = [i for i, a in enumerate(adv) if a != 0.0]
    if not hasattr(policy, "_grpo_opt"):
        policy._grpo_opt = make_optimizer(policy.trainable_parameters(), float(hp["learning_rate"]))
    if float(hp["kl_coef"]) > 0:
        policy.freeze_reference()
    params = policy.trainable_parameters()
    bs, accum = int(hp["batch_size"]), int(hp["grad_accum"])
    rng = random.Random(int(hp["seed"]) + step_offset)
    # Behaviour logprobs missing: the policy before this update is the behaviour policy.
    # Only records with a signal take part, so only theirs are needed.
    with torch.no_grad():
        for i in useful:
            p = items[i]
            if p.old is None:
                p.old = policy.sequence_logprobs([p.ids], [p.start], reference=False)[0].detach().cpu().tolist()
    steps = 0
    last: Dict[str, Any] = {}
    max_steps = int(hp["max_steps"])
    policy.model.train()
    for epoch in range(max(1, int(hp["epochs"]))):
        order = rng.sample(useful, len(useful))
        while order and (max_steps <= 0 or steps < max_steps):
            stats_acc: Dict[str, float] = defaultdict(float)
            losses, rewards = [], []
            for _ in range(accum):
                chosen, order = order[:bs], order[bs:]
                if not chosen:
                    break
                batch = [items[i] for i in chosen]
                logp = policy.sequence_logprobs([b.ids for b in batch], [b.start for b in batch])
                old = [torch.tensor(b.old, device=policy.device) for b in batch]
                ref = policy.sequence_logprobs([b.ids for b in batch], [b.start for b in batch], reference=True) if float(hp["kl_coef"]) > 0 else None
                loss, st = grpo_loss(logp, old, ref, [adv[i] for i in chosen], float(hp["clip_eps"]), float(hp["kl_coef"]), str(hp["loss_agg"]))
                if not torch.isfinite(loss):
                    raise TrainingError(f"the GRPO loss is {float(loss)} — lower learning_rate")
                (loss / accum).backward()
                losses.append(float(loss))
                rewards += [b.reward for b in batch]
                for k, v in st.items():
                    stats_acc[k] += v / accum
            if not losses:
                break
            grad_norm = step_optimizer(policy._grpo_opt, params, float(hp["learning_rate"]))
            steps += 1
            mean_r = sum(rewards) / len(rewards)
            last = emitter.metrics(step_offset + steps, epoch=epoch, loss=sum(losses) / len(losses), reward_mean=mean_r,
                                   reward_std=math.sqrt(sum((r - mean_r) ** 2 for r in rewards) / len(rewards)),
                                   advantage_abs=sum(abs(adv[i]) for i in range(len(items))) / len(items),
                                   kl=stats_acc["kl"], clip_frac=stats_acc["clip_frac"], ratio_mean=stats_acc["ratio_mean"],
                                   lr=float(hp["learning_rate"]), grad_norm=grad_norm)
            if on_step:
                on_step(step_offset + steps)
        if max_steps > 0 and steps >= max_steps:
            break
    return {"steps": steps, "records": len(items), "dropped": dropped, "useful": len(useful), **flat,
            "metrics": {k: v for k, v in last.items() if k != "event"}}


def run_grpo(spec: Any, emitter: Emitter) -> Dict[str, Any]:
    hp = spec.hyperparameters
    set_seed(hp["seed"])
    records = read_rl(spec.path(spec.train))
    policy = load_policy(spec)
    groups = len({r["group"] for r in records})
    emitter.emit({"event": "start", "job": spec.id, "phase": "grpo", **policy.describe(), "examples": len(records), "groups": groups, "time": now()})
    small = [g for g, n in _group_sizes(records).items() if n < int(hp["group_size"])]
    if small:
        emitter.log(f"note: {len(small)} of {groups} groups have fewer than group_size {hp['group_size']} records")
    every = int(hp["save_steps"])

    def checkpoint(step: int) -> None:
        if every > 0 and step % every == 0:
            policy.save_adapter(spec.out / f"checkpoint-{step}")
            emitter.emit({"event": "checkpoint", "step": step, "path": f"{spec.output_dir}/checkpoint-{step}"})

    out = grpo_update(policy, records, hp, emitter, on_step=checkpoint)
    if out["useful"] == 0:
        raise SpecError(f"no group has two records with different rewards ({out['singleton_groups']} single-record groups, {out['zero_variance_groups']} with equal rewards) — GRPO has nothing to learn; gather more samples per task")
    policy.save_adapter(spec.out / "adapter")
    return {"adapter": f"{spec.output_dir}/adapter", "merged": None, "steps": out["steps"], "examples": out["records"], "metrics": out["metrics"], "groups": out["groups"],
            "singleton_groups": out["singleton_groups"], "zero_variance_groups": out["zero_variance_groups"], "backend": policy.backend}


def _group_sizes(records: List[Dict[str, Any]]) -> Dict[str, int]:
    sizes: Dict[str, int] = defaultdict(int)
    for r in records:
        sizes[r["group"]] += 1
    return sizes
