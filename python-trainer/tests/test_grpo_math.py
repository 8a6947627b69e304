import math

import torch

from rollout_trainer.grpo import group_advantages, grpo_loss


def test_advantages_are_normalised_within_each_group_and_flat_groups_carry_nothing():
    adv, flat = group_advantages([1.0, 0.0, 0.5, 0.5, 0.9], ["a", "a", "b", "b", "c"], eps=0.0)
    assert adv[:2] == [1.0, -1.0]
    assert adv[2:] == [0.0, 0.0, 0.0]
    assert flat == {"groups": 3, "singleton_groups": 1, "zero_variance_groups": 1}
    adv, _ = group_advantages([0.2, 0.4, 0.9], ["g", "g", "g"], eps=1e-6)
    mean, std = 0.5, math.sqrt(((0.3) ** 2 + (0.1) ** 2 + (0.4) ** 2) / 3)
    assert [round(a, 5) for a in adv] == [round((r - mean) / (std + 1e-6), 5) for r in (0.2, 0.4, 0.9)]


def test_the_ratio_is_clipped_only_where_it_would_gain_from_leaving_the_trust_region():
    old = [torch.zeros(3)]
    lp = [torch.log(torch.tensor([1.5, 1.0, 0.5]))]  # ratios 1.5, 1.0, 0.5
    loss, st = grpo_loss(lp, old, None, [1.0], clip_eps=0.2, kl_coef=0.0)
    # positive advantage: min(r*A, clip(r)*A) = 1.2, 1.0, 0.5
    assert abs(float(loss) - (-(1.2 + 1.0 + 0.5) / 3)) < 1e-6
    assert st["clip_frac"] == 2 / 3
    loss, _ = grpo_loss(lp, old, None, [-1.0], clip_eps=0.2, kl_coef=0.0)
    # negative advantage: min(-r, -clip(r)) = -1.5, -1.0, -0.8
    assert abs(float(loss) - ((1.5 + 1.0 + 0.8) / 3)) < 1e-6


def test_kl_is_zero_at_the_reference_and_positive_away_from_it():
    lp = [torch.tensor([-1.0, -2.0])]
    _, st = grpo_loss(lp, [lp[0].clone()], [lp[0].clone()], [0.0], 0.2, 0.1)
    assert st["kl"] == 0.0
    _, st = grpo_loss(lp, [lp[0].clone()], [torch.tensor([-1.5, -1.0])], [0.0], 0.2, 0.1)
    assert st["kl"] > 0


def test_the_gradient_raises_the_logprob_of_a_positive_advantage_completion():
    w = torch.zeros(4, requires_grad=True)
    logp = [torch.log_softmax(w, 0)[:2]]
    loss, _ = grpo_loss(logp, [logp[0].detach()], None, [1.0], 0.2, 0.0)
    loss.backward()
    assert (w.grad[:2] < 0).all(), "descending the loss raises the sampled tokens' logits"
    assert (w.grad[2:] > 0).all()


def test_token_mean_weighs_every_token_equally():
    lp = [torch.zeros(1), torch.zeros(3)]
    loss_seq, _ = grpo_loss(lp, [torch.zeros(1), torch.zeros(3)], None, [1.0, -1.0], 0.2, 0.0, "seq-mean-token-mean")
    loss_tok, _ = grpo_loss(lp, [torch.zeros(1), torch.zeros(3)], None, [1.0, -1.0], 0.2, 0.0, "token-mean")
    assert abs(float(loss_seq)) < 1e-6
    assert abs(float(loss_tok) - 0.5) < 1e-6
