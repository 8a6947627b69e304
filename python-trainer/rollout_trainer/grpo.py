"""GRPO on exported rollout groups: group-normalised advantages, the clipped surrogate
against the behaviour policy's logprobs, and a k3 KL term to the reference policy.

Records are model calls; `group` is the task, so the calls of the rollouts of one task
are compared with each other. A call's advantage is its reward minus its group's mean
over the group's standard deviation (sample standard deviation, as TRL and verl compute
it) plus adv_eps. A group of one record, or whose rewards are all equal, has no signal:
its records get advantage 0, take no part in the update, and are counted.

π_old is the behaviour policy: the logprobs the server returned when the record has
token_ids and logprobs of the same length (then those exact tokens are scored), else the
policy's own logprobs before this update (computed once, detached). The reference for
the KL term is the base model with the adapter switched off.

`grpo_update` is one update over a set of records and keeps its AdamW state on the policy
object, so serve.py's /control/train can call it again and again; `run_grpo` is the job."""

import math
import random
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import torch

from .chat import prompt_and_completion_ids
from .context import too_long_advice
from .data import check_rl_record, read_rl
from .errors import DataError, TrainingError
from .events import Emitter, now
from .hparams import GrpoParams
from .optim import make_optimizer, optimizer_step, set_seed
from .policy import Policy
from .spec import JobSpec

LOSS_AGGREGATIONS = ("seq-mean-token-mean", "token-mean")


# -- advantages (pure Python) ------------------------------------------------------------

def group_advantages(rewards_by_group: Mapping[str, Sequence[float]], eps: float = 1e-6) -> dict[str, list[float]]:
    """Per group, (r - mean) / (std + eps) for each reward, in order; all zeros for a
    group of one record or with equal rewards. std is the sample standard deviation."""
    out: dict[str, list[float]] = {}
    for group, rewards in rewards_by_group.items():
        rs = [float(r) for r in rewards]
        if len(rs) < 2 or max(rs) - min(rs) == 0:
            out[group] = [0.0] * len(rs)
            continue
        mean = sum(rs) / len(rs)
        std = math.sqrt(sum((r - mean) ** 2 for r in rs) / (len(rs) - 1))
        out[group] = [(r - mean) / (std + eps) for r in rs]
    return out


def signal_report(rewards_by_group: Mapping[str, Sequence[float]]) -> dict[str, int]:
    """How many groups there are, and how many carry no signal (one record, or equal rewards)."""
    singleton = sum(1 for rs in rewards_by_group.values() if len(rs) < 2)
    flat = sum(1 for rs in rewards_by_group.values() if len(rs) >= 2 and max(rs) - min(rs) == 0)
    return {"groups": len(rewards_by_group), "singleton_groups": singleton, "zero_variance_groups": flat,
            "useful_groups": len(rewards_by_group) - singleton - flat}


# -- the loss (pure torch) ---------------------------------------------------------------

def _masked_mean(x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    return torch.where(mask, x, torch.zeros_like(x)).sum() / mask.sum().clamp(min=1)


def grpo_loss(logp: torch.Tensor, old_logp: torch.Tensor, ref_logp: torch.Tensor | None, advantages: torch.Tensor | Sequence[float],
              mask: torch.Tensor, clip_eps: float, kl_coef: float, loss_agg: str = "seq-mean-token-mean") -> tuple[torch.Tensor, dict[str, float]]:
    """The GRPO loss of a batch of completions, padded to [B, T] with `mask` marking
    real tokens, and its statistics.

    Per token: -min(ρA, clip(ρ, 1-ε, 1+ε)A) with ρ = exp(logp - old_logp), plus kl_coef ×
    (exp(r) - r - 1) with r = ref_logp - logp (the k3 estimate of KL(π‖π_ref), ≥ 0 and 0
    where the policies agree). seq-mean-token-mean averages each completion's tokens,
    then the completions (every completion weighs the same); token-mean averages all
    tokens (every token weighs the same). clip_frac is the share of tokens whose
    gradient the clip switched off (ρ > 1+ε with A > 0, or ρ < 1-ε with A < 0).

    This is TRL's GRPOTrainer loss (loss_type "grpo" for seq-mean-token-mean, "bnpo" for
    token-mean, epsilon = clip_eps, beta = kl_coef) to 1e-5 in value and gradients
    (tests/test_grpo_trl.py), with use_bias_correction_kl=False: TRL 1.16 multiplies the
    KL term by ρ by default; here it is the GRPO paper's unweighted k3."""
    if loss_agg not in LOSS_AGGREGATIONS:
        raise ValueError(f"loss_agg must be one of {', '.join(LOSS_AGGREGATIONS)}, not {loss_agg!r}")
    mask = mask.bool()
    adv = torch.as_tensor(advantages, dtype=logp.dtype, device=logp.device).reshape(-1, 1)
    zero = torch.zeros_like(logp)
    # Padding positions are forced to logprob 0 so exp() there can never overflow into NaN.
    delta = torch.where(mask, logp - old_logp.detach(), zero)
    ratio = torch.exp(delta)
    per_token = -torch.min(ratio * adv, torch.clamp(ratio, 1 - clip_eps, 1 + clip_eps) * adv)
    kl = zero
    if ref_logp is not None and kl_coef:
        r = torch.where(mask, ref_logp.detach() - logp, zero)
        kl = torch.exp(r) - r - 1
        per_token = per_token + kl_coef * kl
    per_token = torch.where(mask, per_token, zero)
    counts = mask.sum(dim=1)
    if loss_agg == "token-mean":
        loss = per_token.sum() / counts.sum().clamp(min=1)
    else:
        has = counts > 0
        loss = (per_token.sum(dim=1)[has] / counts[has]).mean() if bool(has.any()) else per_token.sum()
    with torch.no_grad():
        clipped = ((ratio > 1 + clip_eps) & (adv > 0)) | ((ratio < 1 - clip_eps) & (adv < 0))
        stats = {
            "kl": float(_masked_mean(kl, mask)),
            "clip_frac": float(_masked_mean(clipped.to(logp.dtype), mask)),
            "ratio_mean": float(_masked_mean(ratio, mask)),
            "tokens": float(mask.sum()),
        }
    return loss, stats


def pad_rows(rows: Sequence[torch.Tensor], device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    """1-D tensors of different lengths as [B, T] (zeros after each row's end) and its mask;
    gradients flow through."""
    width = max(int(r.numel()) for r in rows)
    values = torch.nn.utils.rnn.pad_sequence([r.to(device) for r in rows], batch_first=True) if width else torch.zeros((len(rows), 0), device=device)
    mask = torch.zeros((len(rows), width), dtype=torch.bool, device=device)
    for i, r in enumerate(rows):
        mask[i, : int(r.numel())] = True
    return values, mask


# -- records as token ids ----------------------------------------------------------------

@dataclass
class Sample:
    """One record ready for the update."""

    ids: list[int]
    start: int
    reward: float
    group: str
    advantage: float
    old: torch.Tensor | None = None  # π_old per completion token
    ref: torch.Tensor | None = None  # π_ref per completion token
    behaviour: bool = False  # old came from the record (the sampling server)


def tokenized_records(policy: Policy, records: list[dict[str, Any]]) -> list[tuple[list[int], list[int], torch.Tensor | None]]:
    """(prompt ids, completion ids, behaviour logprobs or None) per record: the completion is
    the exact tokens the sampling server reported where it did (and they are in the vocabulary)."""
    tok = policy.tokenizer
    vocab = int(getattr(tok, "vocab_size", 0) or 0)
    out = []
    for rec in records:
        prompt, completion = prompt_and_completion_ids(tok, rec["messages"], rec.get("tools"), rec["completion"])
        old: torch.Tensor | None = None
        sampled = rec.get("token_ids")
        if sampled and (not vocab or all(0 <= t < vocab for t in sampled)):
            completion = list(sampled)  # the exact tokens the behaviour policy sampled
            lps = rec.get("logprobs")
            if lps and len(lps) == len(sampled):
                old = torch.tensor(lps, dtype=torch.float32)
        out.append((prompt, completion, old))
    return out


def prepare_samples(policy: Policy, records: list[dict[str, Any]], hp: GrpoParams) -> tuple[list[Sample], dict[str, int]]:
    """Samples of the records (advantages over every record of each group, so a record
    dropped for its length still counts in its group's statistics) and the counts of
    what was left out."""
    by_group: dict[str, list[float]] = defaultdict(list)
    for rec in records:
        by_group[rec["group"]].append(rec["reward"])
    adv_by_group = {g: iter(a) for g, a in group_advantages(by_group, hp.adv_eps).items()}
    limit = policy.max_positions()
    samples: list[Sample] = []
    counts = {"dropped_too_long": 0, "dropped_empty": 0, "behaviour_logprobs": 0}
    for rec, (prompt, completion, old) in zip(records, tokenized_records(policy, records)):
        advantage = next(adv_by_group[rec["group"]])
        if not completion:
            counts["dropped_empty"] += 1
            continue
        if len(prompt) > hp.max_prompt_length or len(completion) > hp.max_response_length or (limit and len(prompt) + len(completion) > limit):
            counts["dropped_too_long"] += 1
            continue
        counts["behaviour_logprobs"] += old is not None
        samples.append(Sample(prompt + completion, len(prompt), float(rec["reward"]), rec["group"], advantage, old, None, old is not None))
    return samples, counts


def sized_samples(policy: Policy, records: list[dict[str, Any]], hp: GrpoParams, emitter: Emitter, source: str) -> tuple[list[Sample], dict[str, int]]:
    """The samples a grpo job trains on: records too long for the length settings or the
    model's context are left out, counted, with the settings that would keep them
    (DataError when no signal is left)."""
    samples, counts = prepare_samples(policy, records, hp)
    useful = sum(1 for s in samples if s.advantage != 0.0)
    if counts["dropped_too_long"] or not useful:
        lengths = [(len(p), len(c)) for p, c, _ in tokenized_records(policy, records)]
        longest = max((p + c for p, c in lengths), default=0)
        caps = [("max_prompt_length", hp.max_prompt_length), ("max_response_length", hp.max_response_length)]
        if not useful:
            raise DataError(f"{source}: no record with a signal fits ({counts['dropped_too_long']} of {len(records)} too long, the longest "
                            f"{longest} tokens) — {too_long_advice(policy, caps, longest, name_all=True)}")
        stopped = [cap for cap, longest_of_kind in zip(caps, (max(p for p, _ in lengths), max(c for _, c in lengths))) if longest_of_kind > cap[1]]
        emitter.log(f"note: {counts['dropped_too_long']} of {len(records)} records left out as too long (the longest {longest} tokens) — "
                    f"{too_long_advice(policy, stopped, longest)}")
    return samples, counts


T = TypeVar("T")


def _chunks(items: Sequence[T], n: int) -> list[Sequence[T]]:
    return [items[i : i + n] for i in range(0, len(items), n)]


def planned_steps(useful: int, hp: GrpoParams) -> int:
    """Optimizer steps an update over `useful` records takes: epochs × ceil(ceil(useful / batch_size) / grad_accum), capped by max_steps > 0."""
    if useful == 0:
        return 0
    per_epoch = math.ceil(math.ceil(useful / hp.batch_size) / hp.grad_accum)
    total = per_epoch * max(1, hp.epochs)
    return min(total, hp.max_steps) if hp.max_steps > 0 else total


def _scored(rows: list[torch.Tensor | None]) -> list[torch.Tensor]:
    """A batch's π_old or π_ref logprobs, which _update scores for every sample it trains on
    before its first step."""
    scored = [r for r in rows if r is not None]
    if len(scored) != len(rows):
        raise RuntimeError("a sample reached the update without its logprobs scored")
    return scored


def _update(policy: Policy, samples: list[Sample], hp: GrpoParams, emitter: Emitter, step_offset: int,
            on_step: Callable[[int], None] | None) -> tuple[int, dict[str, Any]]:
    useful = [s for s in samples if s.advantage != 0.0]
    if not useful:
        return 0, {}
    bs, accum = hp.batch_size, hp.grad_accum
    kl_coef, clip_eps, lr = hp.kl_coef, hp.clip_eps, hp.learning_rate

    # π_old where the record did not bring it, and π_ref: once, before the first step.
    with policy.eval_mode(), torch.no_grad():
        missing = [s for s in useful if s.old is None]
        for chunk in _chunks(missing, bs):
            for s, lp in zip(chunk, policy.sequence_logprobs([s.ids for s in chunk], [s.start for s in chunk])):
                s.old = lp.detach().float().cpu()
        if kl_coef > 0:
            for chunk in _chunks(useful, bs):
                for s, lp in zip(chunk, policy.sequence_logprobs([s.ids for s in chunk], [s.start for s in chunk], reference=True)):
                    s.ref = lp.detach().float().cpu()

    params = policy.trainable_parameters()
    if policy.optimizer is None:
        policy.optimizer = make_optimizer(params, lr)
    rng = random.Random(hp.seed + step_offset)
    max_steps = hp.max_steps
    epochs = max(1, hp.epochs)
    steps = 0
    last: dict[str, Any] = {}
    policy.model.train()
    for epoch in range(epochs):
        order = rng.sample(range(len(useful)), len(useful))
        groups_of_micro = _chunks(_chunks(order, bs), accum)
        for k, micro in enumerate(groups_of_micro):
            if max_steps > 0 and steps >= max_steps:
                break
            sums: dict[str, float] = defaultdict(float)
            batch_all: list[Sample] = []
            for mb in micro:
                batch = [useful[i] for i in mb]
                batch_all += batch
                logp, mask = pad_rows(policy.sequence_logprobs([s.ids for s in batch], [s.start for s in batch]), policy.device)
                old, _ = pad_rows(_scored([s.old for s in batch]), policy.device)
                ref = pad_rows(_scored([s.ref for s in batch]), policy.device)[0] if kl_coef > 0 else None
                loss, st = grpo_loss(logp, old, ref, [s.advantage for s in batch], mask, clip_eps, kl_coef, hp.loss_agg)
                if not torch.isfinite(loss):
                    raise TrainingError(f"the GRPO loss is {float(loss)} at step {step_offset + steps + 1} — lower learning_rate")
                (loss / len(micro)).backward()
                sums["loss"] += float(loss) / len(micro)
                for key in ("kl", "clip_frac", "ratio_mean"):
                    sums[key] += st[key] / len(micro)
                sums["tokens"] += st["tokens"]
            grad_norm = optimizer_step(policy.optimizer, params, lr)
            steps += 1
            rewards = [s.reward for s in batch_all]
            mean_r = sum(rewards) / len(rewards)
            last = emitter.metrics(step_offset + steps, epoch=epoch + (k + 1) / len(groups_of_micro), loss=sums["loss"],
                                   reward_mean=mean_r, reward_std=math.sqrt(sum((r - mean_r) ** 2 for r in rewards) / len(rewards)),
                                   advantage_abs=sum(abs(s.advantage) for s in batch_all) / len(batch_all),
                                   kl=sums["kl"], clip_frac=sums["clip_frac"], ratio_mean=sums["ratio_mean"],
                                   lr=lr, grad_norm=grad_norm, tokens=int(sums["tokens"]))
            if on_step is not None:
                on_step(step_offset + steps)
        if max_steps > 0 and steps >= max_steps:
            break
    return steps, last


def _summary(samples: list[Sample], counts: dict[str, int], report: dict[str, int], steps: int, last: dict[str, Any]) -> dict[str, Any]:
    return {"steps": steps, "records": len(samples), "useful": sum(1 for s in samples if s.advantage != 0.0), **report, **counts,
            "metrics": {k: v for k, v in last.items() if k != "event"}}


def grpo_update(policy: Policy, records: list[dict[str, Any]], hp: GrpoParams, emitter: Emitter, step_offset: int = 0,
                on_step: Callable[[int], None] | None = None) -> dict[str, Any]:
    """One GRPO update over `records` (RL records as exported; checked here, DataError
    naming records[i] otherwise): `epochs` passes over the records with a signal, in
    optimizer steps of batch_size × grad_accum records, at most max_steps (> 0) steps,
    metrics events numbered from step_offset + 1. The caller holds policy.lock.

    Returns {steps, records, useful, groups, singleton_groups, zero_variance_groups,
    useful_groups, dropped_too_long, dropped_empty, behaviour_logprobs, metrics}; steps is
    0 when no group has a signal (nothing is changed then)."""
    checked = [check_rl_record(rec, f"records[{i}]") for i, rec in enumerate(records)]
    by_group: dict[str, list[float]] = defaultdict(list)
    for rec in checked:
        by_group[rec["group"]].append(rec["reward"])
    samples, counts = prepare_samples(policy, checked, hp)
    steps, last = _update(policy, samples, hp, emitter, step_offset, on_step)
    return _summary(samples, counts, signal_report(by_group), steps, last)


def run_grpo(spec: JobSpec, emitter: Emitter) -> dict[str, Any]:
    """The grpo job: returns the fields of a succeeded result.json."""
    from .backends import load_policy

    hp = spec.params(GrpoParams)
    set_seed(hp.seed)
    records = read_rl(spec.path(spec.train_data))
    by_group: dict[str, list[float]] = defaultdict(list)
    for rec in records:
        by_group[rec["group"]].append(rec["reward"])
    report = signal_report(by_group)
    if report["useful_groups"] == 0:
        raise DataError(f"{spec.train_data}: no group has two records with different rewards ({report['singleton_groups']} single-record groups, "
                        f"{report['zero_variance_groups']} with equal rewards) — GRPO has nothing to learn; sample more rollouts per task")
    policy = load_policy(spec, emitter=emitter)
    samples, counts = sized_samples(policy, records, hp, emitter, spec.train_data)
    useful = sum(1 for s in samples if s.advantage != 0.0)
    total = planned_steps(useful, hp)
    emitter.emit({"event": "start", "job": spec.id, "phase": "grpo", **policy.describe(), "examples": len(records), "steps": total,
                  "useful_records": useful, **report, **counts, "time": now()})
    sizes = [len(rs) for rs in by_group.values()]
    if any(n != hp.group_size for n in sizes):
        emitter.log(f"note: group sizes {min(sizes)}..{max(sizes)} records (group_size {hp.group_size}); advantages are normalised within each group as it is")
    every = hp.save_steps

    def checkpoint(step: int) -> None:
        if every > 0 and step % every == 0:
            policy.save_adapter(spec.out / f"checkpoint-{step}")
            emitter.checkpoint(step, f"{spec.output_dir}/checkpoint-{step}")

    steps, last = _update(policy, samples, hp, emitter, 0, checkpoint)
    policy.save_adapter(spec.out / "adapter")
    summary = _summary(samples, counts, report, steps, last)
    return {"adapter": f"{spec.output_dir}/adapter", "merged": None, "examples": len(records), **summary}
