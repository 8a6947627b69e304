"""The project's GRPO loss against TRL's on the same batch: a tiny Qwen2 with the project's
LoRA adapter (loaded from a job spec, as a job loads it), prompts and completions of a
few rollout groups with their group advantages, behaviour logprobs perturbed from the
policy's own (so the clip is active on some tokens) and reference logprobs from the base
model. TRL's number comes from GRPOTrainer's own loss code (`_compute_loss`) on the same
model; ours from grpo_loss on the policy's sequence_logprobs. The losses and the gradients
(LoRA's, and those of the embeddings and head, which a model built from a config trains too)
must agree to 1e-5 for each pair of matching aggregations, with and without
the KL term:

  seq-mean-token-mean  ~ loss_type "grpo" (each completion's token mean, then the mean)
  token-mean           ~ loss_type "bnpo" (all the micro-batch's tokens) and "dapo"
                         (all the tokens of the accumulation window: the same with one
                         micro-batch)

TRL's clip is the same one-sided PPO clip at epsilon_low = epsilon_high = clip_eps
(its `delta`, the extra upper bound of two-sided clipping, stays off), and its KL term is
the same k3 estimate exp(ref - logp) - (ref - logp) - 1. One deliberate difference: TRL
1.16 multiplies that term by the importance ratio π/π_old by default
(`use_bias_correction_kl`, after DeepSeek-V3.2); the project keeps the GRPO paper's
unweighted k3 (as verl's low_var_kl), which is TRL with use_bias_correction_kl=False, and
the last test shows the default is a different loss. Runs TRL's float32 path (its
configs default to bf16 autocast, also on a CPU). Nothing is downloaded: the tokenizer is
the package's own (hf_build.train_tokenizer)."""

import json

import pytest
import torch

CLIP_EPS = 0.2
TOL = 1e-5
PAIRS = [("seq-mean-token-mean", "grpo"), ("token-mean", "bnpo"), ("token-mean", "dapo")]


@pytest.fixture
def policy(tmp_path, monkeypatch):
    """The transformers backend's policy of a grpo job on a tiny Qwen2, its LoRA moved off zero."""
    from rollout_trainer.backends import load_policy
    from rollout_trainer.backends.hf_build import train_tokenizer
    from rollout_trainer.spec import load_spec

    for k, v in {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}.items():
        monkeypatch.setenv(k, v)
    vocab = len(train_tokenizer(["the package's own offline tokenizer"], 0, tmp_path / "base"))  # bytes and the chat tokens
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "rl.jsonl").write_text("")
    config = {"model_type": "qwen2", "vocab_size": vocab, "hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2,
              "num_attention_heads": 4, "num_key_value_heads": 2, "max_position_embeddings": 256, "tie_word_embeddings": False}
    spec = {
        "apiVersion": "rollout-lab/v1", "kind": "TrainingJob", "id": "trl-grpo", "phase": {"name": "test", "kind": "grpo"},
        "model": {"base": "base", "backend": "transformers", "config": config, "dtype": "float32"},
        # No LoRA dropout: both losses run the model in training mode and must see the same function.
        "hyperparameters": {"target_modules": ["q_proj", "v_proj"], "lora_r": 4, "lora_alpha": 8, "lora_dropout": 0.0,
                            "gradient_checkpointing": False, "clip_eps": CLIP_EPS, "seed": 3},
        "data": {"train": "data/rl.jsonl"}, "output": {"dir": "out"}, "resources": {"gpus": 0},
        "command": ["python3", "-m", "rollout_trainer", "grpo", "--spec", "job.yaml"],
    }
    (tmp_path / "job.yaml").write_text(json.dumps(spec))
    pol = load_policy(load_spec(str(tmp_path / "job.yaml")), "cpu")
    gen = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for name, p in pol.model.named_parameters():
            if "lora_" in name:  # LoRA's B starts at 0: move the policy off the reference
                p.copy_(torch.randn(p.shape, generator=gen) * 0.3)
    pol.model.train()
    return pol


def rollout_batch(policy):
    """Two groups of three completions of different lengths after same-length prompts (TRL
    left-pads prompts and right-pads completions; the project left-pads whole sequences:
    with equal prompts both give every token the same position), with their advantages,
    perturbed behaviour logprobs and the reference's."""
    from rollout_trainer.grpo import group_advantages

    gen = torch.Generator().manual_seed(1)
    vocab = policy.tokenizer.vocab_size
    prompt_len, lengths = 6, [5, 9, 3, 7, 9, 4]
    prompts = [torch.randint(3, vocab, (prompt_len,), generator=gen).tolist() for _ in (0, 1) for _ in range(3)]
    completions = [torch.randint(3, vocab, (n,), generator=gen).tolist() for n in lengths]
    rewards = {"a": [1.0, 0.0, 0.5], "b": [0.2, 0.9, 0.0]}
    advantages = group_advantages(rewards)["a"] + group_advantages(rewards)["b"]
    ids = [p + c for p, c in zip(prompts, completions)]
    starts = [prompt_len] * len(ids)
    with torch.no_grad():
        current = policy.sequence_logprobs(ids, starts)
        ref = policy.sequence_logprobs(ids, starts, reference=True)
    old = [lp.detach() + 0.3 * torch.randn(lp.shape, generator=gen) for lp in current]
    return prompts, completions, ids, starts, advantages, old, ref


def lora_grads(policy):
    grads = {n: p.grad.detach().clone() for n, p in policy.model.named_parameters() if p.requires_grad and p.grad is not None}
    policy.model.zero_grad(set_to_none=True)
    return grads


def project_loss(policy, batch, loss_agg, beta):
    from rollout_trainer.grpo import grpo_loss, pad_rows

    _, _, ids, starts, advantages, old, ref = batch
    logp, mask = pad_rows(policy.sequence_logprobs(ids, starts), policy.device)
    old_t, _ = pad_rows(old, policy.device)
    ref_t, _ = pad_rows(ref, policy.device)
    loss, stats = grpo_loss(logp, old_t, ref_t if beta else None, advantages, mask, CLIP_EPS, beta, loss_agg)
    loss.backward()
    return float(loss), stats, lora_grads(policy)


def trl_trainer(policy, tmp_path, loss_type, beta, bias_correction_kl=False):
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    args = GRPOConfig(output_dir=str(tmp_path / f"trl-{loss_type}-{beta}"), report_to=[], use_cpu=True, beta=beta, epsilon=CLIP_EPS,
                      loss_type=loss_type, num_generations=2, per_device_train_batch_size=2, gradient_accumulation_steps=1,
                      gradient_checkpointing=False, bf16=False, use_bias_correction_kl=bias_correction_kl,
                      max_completion_length=16, temperature=1.0, disable_tqdm=True, seed=0)
    trainer = GRPOTrainer(model=policy.model, reward_funcs=lambda completions, **kw: [0.0] * len(completions), args=args,
                          train_dataset=Dataset.from_dict({"prompt": ["w1 w2"] * 4}), processing_class=policy.tokenizer.tok)
    trainer.current_gradient_accumulation_steps = 1  # set by Trainer's loop, which does not run here
    # With beta > 0 TRL copies the adapter as its reference ("ref"); the reference logprobs come
    # with the batch here, and the next trainer on this model would find the name taken.
    if "ref" in policy.model.peft_config:
        policy.model.delete_adapter("ref")
    return trainer


def trl_inputs(policy, batch):
    """The batch as GRPOTrainer's _generate_and_score_completions hands it to the loss."""
    prompts, completions, _, _, advantages, old, ref = batch
    pad = policy.tokenizer.pad_token_id
    width = max(len(c) for c in completions)
    completion_ids = torch.full((len(completions), width), pad, dtype=torch.long)
    completion_mask = torch.zeros((len(completions), width), dtype=torch.long)
    old_t = torch.zeros((len(completions), width))
    ref_t = torch.zeros((len(completions), width))
    for i, c in enumerate(completions):
        completion_ids[i, : len(c)] = torch.tensor(c)
        completion_mask[i, : len(c)] = 1
        old_t[i, : len(c)] = old[i]
        ref_t[i, : len(c)] = ref[i]
    return {"prompt_ids": torch.tensor(prompts), "prompt_mask": torch.ones((len(prompts), len(prompts[0])), dtype=torch.long),
            "completion_ids": completion_ids, "completion_mask": completion_mask, "advantages": torch.tensor(advantages),
            "old_per_token_logps": old_t, "ref_per_token_logps": ref_t, "num_items_in_batch": completion_mask.sum()}


@pytest.mark.parametrize("beta", [0.0, 0.04])
def test_the_grpo_loss_and_its_gradients_match_trls(policy, tmp_path, beta):
    batch = rollout_batch(policy)
    ours = {agg: project_loss(policy, batch, agg, beta) for agg in ("seq-mean-token-mean", "token-mean")}
    stats = ours["token-mean"][1]
    assert 0.05 < stats["clip_frac"] < 0.6, f"the batch should clip some tokens, not all: {stats}"
    if beta:
        assert stats["kl"] > 1e-3, "the policy should differ from the reference"

    inputs = trl_inputs(policy, batch)
    for agg, loss_type in PAIRS:
        trainer = trl_trainer(policy, tmp_path, loss_type, beta)
        trainer.model.train()
        theirs = trainer._compute_loss(trainer.model, inputs)
        theirs.backward()
        their_grads = lora_grads(policy)
        loss, _, grads = ours[agg]
        assert abs(loss - float(theirs)) <= TOL, f"{agg} vs TRL {loss_type} (beta {beta}): {loss} != {float(theirs)}"
        if beta:
            their_kl = trainer._metrics["train"]["kl"][-1]
            assert abs(stats["kl"] - their_kl) <= TOL, f"kl {stats['kl']} != TRL's {their_kl}"
        their_clip = trainer._metrics["train"]["clip_ratio/region_mean"][-1]
        assert abs(stats["clip_frac"] - their_clip) <= TOL, f"clip_frac {stats['clip_frac']} != TRL's {their_clip}"
        assert grads.keys() == their_grads.keys() and sum("lora_" in n for n in grads) == 8  # q_proj and v_proj's A and B in 2 layers
        worst = max(float((grads[n] - their_grads[n]).abs().max()) for n in grads)
        assert worst <= TOL, f"{agg} vs TRL {loss_type} (beta {beta}): LoRA gradients differ by up to {worst}"
        assert max(float(g.abs().max()) for g in grads.values()) > 1e-3, "the gradients should not be trivially zero"


def test_the_comparison_sees_a_different_loss(policy, tmp_path):
    """The check is not vacuous: TRL's dr_grpo (a sum over max_completion_length per
    completion) is another aggregation, and TRL's default ratio-weighted KL another KL term."""
    batch = rollout_batch(policy)
    inputs = trl_inputs(policy, batch)
    with torch.no_grad():
        dr_grpo = float(trl_trainer(policy, tmp_path, "dr_grpo", 0.0)._compute_loss(policy.model, inputs))
        weighted = float(trl_trainer(policy, tmp_path, "grpo", 0.04, bias_correction_kl=True)._compute_loss(policy.model, inputs))
    for agg in ("seq-mean-token-mean", "token-mean"):
        assert abs(project_loss(policy, batch, agg, 0.0)[0] - dr_grpo) > 1e-3
    assert abs(project_loss(policy, batch, "seq-mean-token-mean", 0.04)[0] - weighted) > TOL

