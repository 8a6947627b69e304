"""The backend-independent half of a policy: per-token logprobs of completions, sampling,
the lock. The Policy interface (policy.py) is all that serve.py, sft.py and grpo.py use.

Subclasses provide `_forward(ids, mask, keep, reference)` (the logits of the last `keep`
positions of a left-padded batch) and replace `_gen_start`/`_gen_next` with decoding that
keeps each layer's keys and values (a KV cache), so a new token costs one position, not the
whole sequence again. `kv_cache = False` (the serve job's `kv_cache` hyper-parameter)
decodes by recomputing the whole sequence per token instead: the same tokens and logprobs,
to float rounding, far slower on a long prompt; it is the baseline the cache is measured
against."""

import contextlib
import random
import threading
from collections.abc import Generator, Sequence
from pathlib import Path
from typing import Any, Generic, TypeVar

import torch
from torch.optim import Optimizer

from ..chat import end_of_turn_ids
from ..policy import Sampled
from ..tokenizer import Tokenizer

__all__ = ["PolicyBase", "Sampled", "left_pad", "positions", "sample_token"]


def left_pad(seqs: Sequence[Sequence[int]], pad: int, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    """(ids, attention mask) of a batch padded on the left, so every sequence ends at the
    last position: the completions then line up at the end, and a model that can compute
    only its last positions' logits need not compute the prompts' (which are most of
    the tokens, and, over a 150k vocabulary, most of the memory)."""
    width = max(len(s) for s in seqs)
    ids = torch.full((len(seqs), width), int(pad), dtype=torch.long)
    mask = torch.zeros((len(seqs), width), dtype=torch.long)
    for i, s in enumerate(seqs):
        if len(s):
            ids[i, width - len(s):] = torch.tensor(list(s), dtype=torch.long)
            mask[i, width - len(s):] = 1
    return ids.to(device), mask.to(device)


def positions(mask: torch.Tensor) -> torch.Tensor:
    """Position ids that start at 0 on each sequence's first real token (left padding)."""
    return (mask.long().cumsum(-1) - 1).clamp(min=0)


def sample_token(logits: torch.Tensor, temperature: float, top_p: float, gen: torch.Generator) -> int:
    """Greedy at temperature <= 0; otherwise a draw from softmax(logits / T) cut to the
    smallest set of tokens whose probability reaches top_p (nucleus sampling)."""
    if temperature <= 0:
        return int(torch.argmax(logits))
    probs = torch.softmax(logits.float().cpu() / temperature, dim=-1)
    if 0 < top_p < 1:
        sorted_p, order = torch.sort(probs, descending=True)
        keep = (torch.cumsum(sorted_p, dim=0) - sorted_p) < top_p
        probs = torch.zeros_like(probs).scatter(0, order[keep], sorted_p[keep])
    return int(torch.multinomial(probs / probs.sum(), 1, generator=gen))


TokenizerT = TypeVar("TokenizerT", bound=Tokenizer)
ModelT = TypeVar("ModelT", bound=torch.nn.Module)


class PolicyBase(Generic[TokenizerT, ModelT]):
    """The shared half of a Policy (policy.py); a backend sets tokenizer, model, device
    and base_model, and provides the methods below that raise NotImplementedError."""

    backend = "base"
    tokenizer: TokenizerT
    model: ModelT
    device: torch.device
    base_model: str
    optimizer: Optimizer | None

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.optimizer = None
        self.version = "base"
        self.kv_cache = True

    # -- what subclasses provide -------------------------------------------------------

    def _forward(self, ids: torch.Tensor, mask: torch.Tensor, keep: int, reference: bool) -> torch.Tensor:
        """Logits [B, keep, V] of the last `keep` positions of a left-padded batch."""
        raise NotImplementedError

    def max_positions(self) -> int | None:
        """The longest sequence the model takes, where it has a limit."""
        return None

    def context_setting(self) -> str | None:
        """The setting that sizes the model's context, where one does (a model built from a config)."""
        return None

    def save_adapter(self, directory: Path | str) -> None:
        raise NotImplementedError

    def load_adapter(self, directory: Path | str, version: str) -> None:
        raise NotImplementedError

    def merge_and_save(self, directory: Path | str) -> None:
        raise NotImplementedError

    # -- shared ----------------------------------------------------------------------

    def _drop_optimizer(self) -> None:
        """Adam's moments belong to the weights they were built on: new weights start a new one.
        (Set here, where `optimizer` is declared, so each backend's type stays the Policy's.)"""
        self.optimizer = None

    def forward_logits(self, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """Logits [B, T, V] of a left-padded batch under the policy, with the graph."""
        return self._forward(ids, mask, ids.shape[1], False)

    def trainable_parameters(self) -> list[torch.nn.Parameter]:
        return [p for p in self.model.parameters() if p.requires_grad]

    def describe(self) -> dict[str, str]:
        return {"backend": self.backend, "device": str(self.device), "base_model": self.base_model, "version": self.version}

    @contextlib.contextmanager
    def eval_mode(self) -> Generator[None, None, None]:
        """Dropout off (and, for transformers, the KV cache usable) for a while."""
        was = self.model.training
        self.model.eval()
        try:
            yield
        finally:
            self.model.train(was)

    def sequence_logprobs(self, input_ids: Sequence[Sequence[int]], completion_starts: Sequence[int], reference: bool = False,
                          temperature: float = 1.0) -> list[torch.Tensor]:
        """Per sequence, the logprob of each completion token (ids[start:]) given what
        precedes it: a 1-D float32 tensor of len(ids) - start values. With the graph
        (for the loss) unless reference=True, which scores the reference policy (the
        adapter switched off) without one."""
        if not input_ids:
            return []
        if len(input_ids) != len(completion_starts):
            raise ValueError(f"{len(input_ids)} sequences but {len(completion_starts)} completion starts")
        comp = []
        for seq, start in zip(input_ids, completion_starts):
            if not 1 <= start <= len(seq):
                raise ValueError(f"completion start {start} outside 1..{len(seq)}: a completion needs a token before it")
            comp.append(len(seq) - start)
        ids, mask = left_pad(input_ids, self.tokenizer.pad_token_id, self.device)
        width = ids.shape[1]
        keep = min(width, max(comp) + 1)
        ctx = torch.no_grad() if reference else contextlib.nullcontext()
        out: list[torch.Tensor] = []
        with ctx:
            logits = self._forward(ids, mask, keep, reference)
            for i, c in enumerate(comp):
                if c == 0:
                    out.append(torch.zeros(0, device=self.device))
                    continue
                rows = logits[i, keep - c - 1 : keep - 1].float()
                if temperature and temperature != 1.0:
                    rows = rows / temperature
                targets = ids[i, width - c:]
                out.append(torch.log_softmax(rows, dim=-1).gather(-1, targets.unsqueeze(-1)).squeeze(-1))
        return out

    def _recompute_start(self, prompt_ids: list[int]) -> tuple[torch.Tensor, Any]:
        """(next-token logits, state) after the prompt, the state being the ids so far."""
        x = torch.tensor([prompt_ids], dtype=torch.long, device=self.device)
        return self._forward(x, torch.ones_like(x), 1, False)[0, -1], list(prompt_ids)

    def _recompute_next(self, state: Any, token: int) -> tuple[torch.Tensor, Any]:
        """(next-token logits, state) after one more token, running the whole sequence again."""
        state = state + [token]
        x = torch.tensor([state], dtype=torch.long, device=self.device)
        return self._forward(x, torch.ones_like(x), 1, False)[0, -1], state

    # (next-token logits, state) after the prompt, and after one more token: the transformers
    # backend replaces these with KV-cache decoding.
    _gen_start = _recompute_start
    _gen_next = _recompute_next

    @torch.no_grad()
    def generate(self, prompt_ids: Sequence[int], max_new_tokens: int, temperature: float, top_p: float, seed: int | None,
                 stop_ids: set[int] | None = None, top_logprobs: int = 0) -> Sampled:
        """Samples up to max_new_tokens after the prompt, stopping after an end-of-turn
        token or one of stop_ids (which is kept, as vLLM keeps the EOS in token_ids).
        Returns the ids and their logprobs under the policy at temperature 1 (the raw
        distribution, as vLLM reports by default and as GRPO's ratio expects), and the
        `top_logprobs` most likely tokens at each position under that same distribution.
        The same seed gives the same completion, whatever top_logprobs is."""
        if not prompt_ids:
            raise ValueError("an empty prompt: render the conversation with add_generation_prompt=True first")
        limit = self.max_positions()
        if limit is not None:
            room = limit - len(prompt_ids)
            if room <= 0:
                raise ValueError(f"the prompt has {len(prompt_ids)} tokens; the model takes at most {limit}")
            max_new_tokens = min(max_new_tokens, room)
        gen = torch.Generator()
        gen.manual_seed(int(seed) if seed is not None else random.SystemRandom().randrange(2**63))
        stops = set(stop_ids or ()) | end_of_turn_ids(self.tokenizer)
        k = min(int(top_logprobs), int(self.tokenizer.vocab_size))
        out = Sampled([], [], [])
        with self.eval_mode():
            if max_new_tokens <= 0:
                return out
            start, step = (self._gen_start, self._gen_next) if self.kv_cache else (self._recompute_start, self._recompute_next)
            logits, state = start(list(prompt_ids))
            for n in range(max_new_tokens):
                logits = logits.float()
                token = sample_token(logits, float(temperature), float(top_p), gen)
                logp = torch.log_softmax(logits, dim=-1)
                out.ids.append(token)
                out.logprobs.append(float(logp[token]))
                if k > 0:
                    values, ids = torch.topk(logp, k)
                    out.top.append(list(zip(ids.tolist(), values.tolist())))
                else:
                    out.top.append([])
                if token in stops or n == max_new_tokens - 1:
                    break
                logits, state = step(state, token)
        return out
