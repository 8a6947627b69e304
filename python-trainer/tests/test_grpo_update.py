"""grpo_update as serve's /control/train calls it: repeatedly, on one policy object."""

import io
import json
from contextlib import redirect_stdout
from dataclasses import replace

import pytest
import torch
from conftest import built_policy, golden

from rollout_trainer.errors import DataError
from rollout_trainer.events import Emitter
from rollout_trainer.grpo import grpo_update, prepare_samples
from rollout_trainer.hparams import resolve_hparams


def quiet(fn, *args, **kwargs):
    with redirect_stdout(io.StringIO()):
        return fn(*args, **kwargs)


def test_repeated_updates_continue_one_optimizer_and_number_their_steps(tmp_path):
    policy = built_policy(tmp_path / "bundle")
    hp = resolve_hparams("serve", {"max_steps": 2, "batch_size": 4, "learning_rate": 0.001, "epochs": 1})
    emitter = Emitter(tmp_path)
    records = golden("rl-equal.jsonl")
    first = quiet(grpo_update, policy, records, hp, emitter)
    assert first["steps"] == 2 and first["useful"] == 10 and first["zero_variance_groups"] == 2 and first["metrics"]["step"] == 2
    opt = policy.optimizer
    assert opt is not None
    second = quiet(grpo_update, policy, records, hp, emitter, step_offset=first["steps"])
    assert policy.optimizer is opt and second["metrics"]["step"] == 4
    steps = [json.loads(line)["step"] for line in (tmp_path / "events.jsonl").read_text().splitlines()]
    assert steps == [1, 2, 3, 4]
    flat = [{**r, "reward": 1.0} for r in records]
    nothing = quiet(grpo_update, policy, flat, hp, emitter, step_offset=4)
    assert nothing["steps"] == 0 and nothing["useful"] == 0 and nothing["metrics"] == {}
    with pytest.raises(DataError, match=r"records\[1\]: reward must be a finite number"):
        grpo_update(policy, [records[0], {**records[1], "reward": None}], hp, emitter)


def test_behaviour_logprobs_are_the_ratio_denominator_when_the_record_brings_them(tmp_path):
    policy = built_policy(tmp_path / "bundle")
    hp = resolve_hparams("grpo", {"max_steps": 1, "batch_size": 2, "kl_coef": 0.0})
    tok = policy.tokenizer
    base = golden("rl-equal.jsonl")[2]
    sampled = tok.encode('{"ok": true}<|im_end|>')
    prompt = tok.encode(tok.render(base["messages"], base["tools"], add_generation_prompt=True))
    with torch.no_grad():
        own = policy.sequence_logprobs([prompt + sampled], [len(prompt)])[0].tolist()
    # Behaviour logprobs 0.5 nats below the policy's own: the first ratio is e^0.5 on every token.
    recs = [{**base, "group": "g", "reward": 1.0, "token_ids": sampled, "logprobs": [x - 0.5 for x in own]},
            {**base, "group": "g", "reward": 0.0, "token_ids": sampled, "logprobs": [x - 0.5 for x in own]}]
    samples, counts = prepare_samples(policy, recs, hp)
    assert counts["behaviour_logprobs"] == 2 and samples[0].behaviour and samples[0].ids == prompt + sampled
    out = quiet(grpo_update, policy, recs, hp, Emitter(tmp_path))
    assert out["metrics"]["ratio_mean"] == pytest.approx(2.718281828 ** 0.5, rel=1e-4)
    # Logprobs of another length than token_ids are not the behaviour policy's: the policy's own are used.
    recs[0]["logprobs"] = recs[0]["logprobs"][:-1]
    samples, counts = prepare_samples(policy, recs, hp)
    assert counts["behaviour_logprobs"] == 1 and not samples[0].behaviour and samples[0].ids == prompt + sampled
    # Ids beyond the vocabulary are another model's: its completion is re-tokenised, its logprobs not used.
    foreign = [{**r, "token_ids": [tok.vocab_size + 1] * len(sampled)} for r in recs]
    samples, counts = prepare_samples(policy, foreign, hp)
    assert counts["behaviour_logprobs"] == 0 and not samples[0].behaviour and samples[0].ids[len(prompt):] != foreign[0]["token_ids"]
    # Too long for max_response_length: dropped and counted, its reward still in its group's statistics.
    samples, counts = prepare_samples(policy, recs, replace(hp, max_response_length=3))
    assert counts["dropped_too_long"] == 2 and samples == []
