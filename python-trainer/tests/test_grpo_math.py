"""GRPO's arithmetic: group advantages, the clipped surrogate, the k3 KL term, and the
direction of the gradient on a real model (a one-layer Qwen2 built from a config, with LoRA)."""

import math

import pytest
import torch
from conftest import built_policy

from rollout_trainer.grpo import group_advantages, grpo_loss, pad_rows, signal_report


def test_advantages_are_normalised_within_each_group_and_flat_groups_carry_nothing():
    adv = group_advantages({"a": [1.0, 0.0], "b": [0.5, 0.5], "c": [0.9], "g": [0.2, 0.4, 0.9]}, eps=0.0)
    # a: mean 0.5, sample std sqrt(0.5)
    assert adv["a"] == pytest.approx([1 / math.sqrt(2), -1 / math.sqrt(2)])
    assert adv["b"] == [0.0, 0.0] and adv["c"] == [0.0]
    # g: mean 0.5, deviations -0.3 -0.1 0.4, sample variance 0.26 / 2 = 0.13
    assert adv["g"] == pytest.approx([-0.3 / math.sqrt(0.13), -0.1 / math.sqrt(0.13), 0.4 / math.sqrt(0.13)])
    assert adv["g"] == pytest.approx([-0.832050, -0.277350, 1.109400], abs=1e-6)
    with_eps = group_advantages({"a": [1.0, 0.0]}, eps=0.5)["a"]
    assert with_eps == pytest.approx([0.5 / (math.sqrt(0.5) + 0.5), -0.5 / (math.sqrt(0.5) + 0.5)])
    assert signal_report({"a": [1.0, 0.0], "b": [0.5, 0.5], "c": [0.9]}) == {"groups": 3, "singleton_groups": 1, "zero_variance_groups": 1, "useful_groups": 1}


def test_the_ratio_is_clipped_only_where_leaving_the_trust_region_would_gain():
    old = torch.zeros(1, 3)
    mask = torch.ones(1, 3, dtype=torch.bool)
    logp = torch.log(torch.tensor([[1.5, 1.0, 0.5]])).requires_grad_()  # ratios 1.5, 1.0, 0.5
    loss, st = grpo_loss(logp, old, None, [1.0], mask, clip_eps=0.2, kl_coef=0.0)
    # A = +1: -min(ρ, clip(ρ)) = -1.2, -1.0, -0.5
    assert float(loss) == pytest.approx(-(1.2 + 1.0 + 0.5) / 3)
    assert st["clip_frac"] == pytest.approx(1 / 3) and st["ratio_mean"] == pytest.approx(1.0)
    loss.backward()
    assert logp.grad[0, 0] == 0, "clip active: the first token gets no gradient"
    assert logp.grad[0, 1] < 0 and logp.grad[0, 2] < 0, "clip inactive: descending raises those logprobs"
    loss, st = grpo_loss(logp.detach(), old, None, [-1.0], mask, clip_eps=0.2, kl_coef=0.0)
    # A = -1: -min(-ρ, -clip(ρ)) = 1.5, 1.0, 0.8
    assert float(loss) == pytest.approx((1.5 + 1.0 + 0.8) / 3)
    assert st["clip_frac"] == pytest.approx(1 / 3)


def test_kl_is_zero_where_the_policy_is_the_reference_and_positive_elsewhere():
    lp = torch.tensor([[-1.0, -2.0]])
    mask = torch.ones(1, 2, dtype=torch.bool)
    loss, st = grpo_loss(lp, lp.clone(), lp.clone(), [0.0], mask, 0.2, 0.1)
    assert st["kl"] == 0.0 and float(loss) == 0.0
    _, st = grpo_loss(lp, lp.clone(), torch.tensor([[-1.5, -1.0]]), [0.0], mask, 0.2, 0.1)
    r = torch.tensor([-0.5, 1.0])
    assert st["kl"] == pytest.approx(float((torch.exp(r) - r - 1).mean()))


def test_aggregation_and_padding():
    lp = torch.tensor([[0.0, 0.0, 0.0], [0.0, 55.0, -70.0]])  # garbage after row 2's single token
    mask = torch.tensor([[True, True, True], [True, False, False]])
    seq, _ = grpo_loss(lp, torch.zeros(2, 3), torch.zeros(2, 3), [1.0, -1.0], mask, 0.2, 0.5, "seq-mean-token-mean")
    tok, st = grpo_loss(lp, torch.zeros(2, 3), torch.zeros(2, 3), [1.0, -1.0], mask, 0.2, 0.5, "token-mean")
    assert float(seq) == pytest.approx((-1.0 + 1.0) / 2), "each completion weighs the same"
    assert float(tok) == pytest.approx((-3.0 + 1.0) / 4), "each token weighs the same"
    assert st["tokens"] == 4 and math.isfinite(float(tok)) and st["kl"] == 0.0
    with pytest.raises(ValueError, match="loss_agg"):
        grpo_loss(lp, lp, None, [1.0, 1.0], mask, 0.2, 0.0, "sum")


def test_descending_the_loss_raises_a_positive_advantage_completion_and_lowers_a_negative_one(tmp_path):
    # The same bundle builds the same model, tokenizer and LoRA initialisation each time.
    policy = built_policy(tmp_path / "before")
    tok = policy.tokenizer
    prompt = tok.encode(tok.render([{"role": "user", "content": "Say yes."}], add_generation_prompt=True))
    completion = tok.encode("yes<|im_end|>")
    ids, start = prompt + completion, len(prompt)
    with torch.no_grad():
        before = policy.sequence_logprobs([ids], [start])[0]
    for advantage, direction in ((1.0, 1), (-1.0, -1)):
        policy = built_policy(tmp_path / f"advantage{advantage}")
        opt = torch.optim.SGD(policy.trainable_parameters(), lr=0.05)
        logp, mask = pad_rows(policy.sequence_logprobs([ids], [start]), policy.device)
        ref = pad_rows(policy.sequence_logprobs([ids], [start], reference=True), policy.device)[0]
        loss, st = grpo_loss(logp, logp.detach(), ref, [advantage], mask, 0.2, 0.001)
        assert st["kl"] == pytest.approx(0.0, abs=1e-7), "the reference is the starting policy"
        assert st["ratio_mean"] == pytest.approx(1.0)
        loss.backward()
        opt.step()
        with torch.no_grad():
            after = policy.sequence_logprobs([ids], [start])[0]
        assert direction * float(after.sum() - before.sum()) > 0
