"""The tiny backend's Policy: batching, the reference, sampling, adapters."""

import pytest
import torch
from conftest import TINY

from rollout_trainer.backends.tiny import ByteChatTokenizer, TinyPolicy, resolve_config
from rollout_trainer.errors import SpecError


def make_spec(config=TINY, adapter=None, bundle_dir=None):
    from pathlib import Path

    class Model:
        pass

    class Spec:
        model = Model()

        @staticmethod
        def path(rel):
            return Path(bundle_dir) / rel

    Spec.model.config, Spec.model.adapter, Spec.model.base = config, adapter, "tiny"
    return Spec


def test_the_byte_tokenizer_round_trips_text_and_keeps_special_tokens_whole():
    tok = ByteChatTokenizer()
    text = "<|im_start|>user\nnaïve café — ok<|im_end|>\n"
    ids, offsets = tok.encode_with_offsets(text)
    assert ids[0] == tok.special_ids["<|im_start|>"] and tok.eos_token_id in ids
    assert tok.decode(ids) == "user\nnaïve café — ok\n"
    assert len(offsets) == len(ids) and offsets[0] == (0, len("<|im_start|>")) and offsets[-1] == (len(text) - 1, len(text))
    assert tok.token_text(tok.eos_token_id) == "<|im_end|>"
    assert [tok.token_bytes(i) for i in tok.encode("é")] == [b"\xc3", b"\xa9"] and tok.token_bytes(tok.eos_token_id) == b"<|im_end|>"
    rendered = tok.render([{"role": "user", "content": "hi"}], tools=[{"type": "function", "function": {"name": "f"}}], add_generation_prompt=True)
    assert rendered == '<|im_start|>system\n# Tools\n<tools>\n{"name": "f"}\n</tools><|im_end|>\n<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n'


def test_batched_logprobs_equal_one_at_a_time_despite_left_padding():
    policy = TinyPolicy.from_spec(make_spec(), "cpu")
    seqs = [[1, 2, 3, 4, 5, 6, 7], [9, 8, 7], [5, 5, 5, 5, 5]]
    starts = [3, 1, 4]
    together = policy.sequence_logprobs(seqs, starts)
    for seq, start, got in zip(seqs, starts, together):
        alone = policy.sequence_logprobs([seq], [start])[0]
        assert got.shape == (len(seq) - start,) and got.requires_grad
        assert torch.allclose(got, alone, atol=1e-5)
        assert (got <= 0).all()
    ref = policy.sequence_logprobs(seqs, starts, reference=True)
    assert all(torch.allclose(a, b, atol=1e-6) for a, b in zip(ref, together)) and not ref[0].requires_grad
    with torch.no_grad():
        for p in policy.model.parameters():
            p.add_(0.05)
    moved = policy.sequence_logprobs(seqs, starts)
    assert not torch.allclose(moved[0], together[0]), "the reference stays frozen while the policy moves"
    with pytest.raises(ValueError, match="completion start"):
        policy.sequence_logprobs([[1, 2]], [0])


def test_generation_is_seeded_greedy_at_temperature_0_and_stops_at_the_end_of_turn():
    policy = TinyPolicy.from_spec(make_spec(), "cpu")
    prompt = policy.tokenizer.encode(policy.tokenizer.render([{"role": "user", "content": "Hi"}], add_generation_prompt=True))
    a = policy.generate(prompt, 12, 1.0, 0.9, seed=7)
    b = policy.generate(prompt, 12, 1.0, 0.9, seed=7)
    assert a == b and len(a[0]) == len(a[1]) <= 12 and all(lp <= 0 for lp in a[1])
    g1 = policy.generate(prompt, 6, 0.0, 1.0, seed=None)
    g2 = policy.generate(prompt, 6, 0.0, 1.0, seed=123)
    assert g1 == g2
    # the logprobs reported are the policy's (temperature 1), as sequence_logprobs scores them
    with torch.no_grad():
        scored = policy.sequence_logprobs([prompt + a[0]], [len(prompt)])[0]
    assert torch.allclose(scored, torch.tensor(a[1]), atol=1e-4)
    stop = policy.generate(prompt, 50, 1.0, 1.0, seed=1, stop_ids=set(range(policy.tokenizer.vocab_size)))
    assert len(stop[0]) == 1, "any token in stop_ids ends the completion and is kept"
    policy.model.train()
    policy.generate(prompt, 2, 1.0, 1.0, seed=1)
    assert policy.model.training, "generation runs in eval mode and restores the mode it found"


def test_generation_reports_the_most_likely_tokens_under_the_distribution_of_the_sampled_logprob():
    policy = TinyPolicy.from_spec(make_spec(), "cpu")
    prompt = policy.tokenizer.encode(policy.tokenizer.render([{"role": "user", "content": "Hi"}], add_generation_prompt=True))
    plain = policy.generate(prompt, 10, 1.0, 1.0, seed=4)
    assert plain.top == [[]] * len(plain.ids), "no alternatives unless asked for"
    sampled = policy.generate(prompt, 10, 1.0, 1.0, seed=4, top_logprobs=5)
    assert (sampled.ids, sampled.logprobs) == (plain.ids, plain.logprobs), "asking for alternatives does not change the completion"
    with torch.no_grad(), policy.eval_mode():
        x = torch.tensor([prompt + sampled.ids])
        logits = policy.forward_logits(x, torch.ones_like(x))[0, len(prompt) - 1 : -1]
    reference = torch.log_softmax(logits.float(), dim=-1)
    for n, (token, lp, top) in enumerate(zip(sampled.ids, sampled.logprobs, sampled.top)):
        ids, lps = [i for i, _ in top], [v for _, v in top]
        assert len(top) == 5 and len(set(ids)) == 5 and lps == sorted(lps, reverse=True) and all(v <= 0 for v in lps)
        assert lps == pytest.approx(torch.topk(reference[n], 5).values.tolist(), abs=1e-4), "the 5 largest logprobs of a softmax of the same logits"
        assert [v for v in lps] == pytest.approx(reference[n][ids].tolist(), abs=1e-4)
        if token in ids:
            assert lps[ids.index(token)] == lp, "the sampled token's logprob is the one reported for it"
        else:
            assert lp <= lps[-1]
    greedy = policy.generate(prompt, 6, 0.0, 1.0, seed=None, top_logprobs=1)
    assert [top[0][0] for top in greedy.top] == greedy.ids and [top[0][1] for top in greedy.top] == greedy.logprobs
    everything = policy.generate(prompt, 2, 1.0, 1.0, seed=4, top_logprobs=10_000)
    assert all(len(top) == policy.tokenizer.vocab_size for top in everything.top), "at most the whole vocabulary"


def test_adapters_round_trip_and_refuse_another_architecture(tmp_path):
    policy = TinyPolicy.from_spec(make_spec(), "cpu")
    with torch.no_grad():
        for p in policy.model.parameters():
            p.mul_(1.5)
    policy.optimizer = object()
    policy.save_adapter(tmp_path / "v1")
    assert {p.name for p in (tmp_path / "v1").iterdir()} == {"tiny_model.pt", "tiny_config.json"}
    other = TinyPolicy.from_spec(make_spec(), "cpu")
    other.optimizer = object()
    other.load_adapter(tmp_path / "v1", "v1")
    assert other.version == "v1" and other.optimizer is None
    assert all(torch.equal(a, b) for a, b in zip(policy.model.state_dict().values(), other.model.state_dict().values()))
    # model.config null: the adapter says which tiny model it is
    again = TinyPolicy.from_spec(make_spec(config=None, adapter="v1", bundle_dir=tmp_path), "cpu")
    assert again.version == "v1" and again.config["hidden_size"] == TINY["hidden_size"]
    bigger = TinyPolicy.from_spec(make_spec(config={**TINY, "hidden_size": 64}), "cpu")
    with pytest.raises(SpecError, match="another tiny model .*hidden_size"):
        bigger.load_adapter(tmp_path / "v1", "v1")
    with pytest.raises(SpecError, match="not a tiny-model adapter"):
        bigger.load_adapter(tmp_path, "x")


def test_the_tiny_config_is_checked():
    assert resolve_config(None)["hidden_size"] == 64
    with pytest.raises(SpecError, match="hidden_size 30 must be a multiple of num_heads 4"):
        resolve_config({"hidden_size": 30})
    with pytest.raises(SpecError, match="takes vocab, hidden_size"):
        resolve_config({"layers": 2})
    with pytest.raises(SpecError, match="vocabulary is 'bytes'"):
        resolve_config({"vocab": "bpe"})


def _long_prompt(policy, words=60):
    return policy.tokenizer.encode(policy.tokenizer.render([{"role": "user", "content": "tau and amyloid " * words}], add_generation_prompt=True))


def test_cached_decoding_equals_recomputing_the_whole_sequence_greedy_and_sampled():
    """The KV cache changes how fast a token comes, not which token or its logprob: the same
    seed gives the same completion, logprobs and alternatives as re-running the sequence."""
    policy = TinyPolicy.from_spec(make_spec(), "cpu")
    prompt = _long_prompt(policy)
    for temperature, top_p, seed in ((0.0, 1.0, None), (1.0, 1.0, 3), (0.7, 0.9, 11), (1.3, 0.95, 42)):
        policy.kv_cache = True
        cached = policy.generate(prompt, 24, temperature, top_p, seed=seed, top_logprobs=4)
        policy.kv_cache = False
        full = policy.generate(prompt, 24, temperature, top_p, seed=seed, top_logprobs=4)
        assert cached.ids == full.ids, f"T={temperature} seed={seed}"
        assert cached.logprobs == pytest.approx(full.logprobs, abs=1e-5)
        for a, b in zip(cached.top, full.top):
            assert [i for i, _ in a] == [i for i, _ in b] and [v for _, v in a] == pytest.approx([v for _, v in b], abs=1e-5)
        # and what GRPO scores the completion with afterwards
        with torch.no_grad():
            scored = policy.sequence_logprobs([prompt + cached.ids], [len(prompt)])[0]
        assert scored.tolist() == pytest.approx(cached.logprobs, abs=1e-4)


def test_the_cache_feeds_the_prompt_once_and_then_one_token_per_step():
    policy = TinyPolicy.from_spec(make_spec(), "cpu")
    prompt = _long_prompt(policy, 10)
    fed = []
    hook = policy.model.embed.register_forward_hook(lambda _m, args, _out: fed.append(int(args[0].shape[1])))
    try:
        out = policy.generate(prompt, 6, 0.0, 1.0, seed=None)
        n = len(out.ids)
        assert fed == [len(prompt)] + [1] * (n - 1), "one pass over the prompt, then the new token alone"
        fed.clear()
        policy.kv_cache = False
        policy.generate(prompt, 6, 0.0, 1.0, seed=None)
        assert fed == [len(prompt) + k for k in range(n)], "without the cache every token re-runs the sequence"
    finally:
        hook.remove()


def test_extending_the_cache_in_pieces_gives_the_logits_of_the_whole_sequence():
    policy = TinyPolicy.from_spec(make_spec(), "cpu")
    model = policy.model.eval()
    ids = torch.tensor([_long_prompt(policy, 5)])
    with torch.no_grad():
        whole = model(ids)
        first, cache = model.extend(ids[:, :20])
        rest, cache = model.extend(ids[:, 20:], cache)
        assert cache[0][0].shape[2] == ids.shape[1] and len(cache) == TINY["num_layers"]
        assert torch.allclose(torch.cat([first, rest], 1), whole, atol=1e-5)
        with pytest.raises(ValueError, match="longer than the model's max_positions"):
            model.extend(torch.zeros((1, TINY["max_positions"] - ids.shape[1] + 1), dtype=torch.long), cache)


def test_cached_generation_stops_at_the_context_like_the_recomputing_one():
    small = TinyPolicy.from_spec(make_spec(config={**TINY, "max_positions": 40}), "cpu")
    prompt = small.tokenizer.encode(small.tokenizer.render([{"role": "user", "content": "Hello there"}], add_generation_prompt=True))
    room = 40 - len(prompt)
    small.kv_cache = True
    cached = small.generate(prompt, 100, 1.0, 1.0, seed=5, stop_ids=set())
    small.kv_cache = False
    full = small.generate(prompt, 100, 1.0, 1.0, seed=5, stop_ids=set())
    assert cached.ids == full.ids and len(cached.ids) <= room
