"""What both backends share: per-token logprobs of completions, sampling, the lock."""

import threading
from typing import Dict, List, Optional, Sequence, Set, Tuple

import torch


def pad_batch(seqs: Sequence[Sequence[int]], pad: int, device: torch.device) -> Tuple[torch.Tensor, torch.Tensor]:
    width = max(len(s) for s in seqs)
    ids = torch.full((len(seqs), width), pad, dtype=torch.long)
    mask = torch.zeros((len(seqs), width), dtype=torch.long)
    for i, s in enumerate(seqs):
        ids[i, : len(s)] = torch.tensor(list(s), dtype=torch.long)
        mask[i, : len(s)] = 1
    return ids.to(device), mask.to(device)


class PolicyBase:
    """Subclasses set model, tokenizer, device, backend, base_model, version and implement
    `_logits(ids, mask, reference)`, `save_adapter`, `load_adapter`, `merge_and_save`."""

    def __init__(self) -> None:
        self.lock = threading.RLock()

    def _logits(self, ids: torch.Tensor, mask: torch.Tensor, reference: bool) -> torch.Tensor:
        raise NotImplementedError

    def trainable_parameters(self) -> List[torch.nn.Parameter]:
        return [p for p in self.model.parameters() if p.requires_grad]

    def sequence_logprobs(self, input_ids: Sequence[Sequence[int]], completion_starts: Sequence[int], reference: bool = False, temperature: float = 1.0) -> List[torch.Tensor]:
        ids, mask = pad_batch(input_ids, self.tokenizer.pad_token_id, self.device)
        ctx = torch.no_grad() if reference else torch.enable_grad()
        with ctx:
            logits = self._logits(ids, mask, reference).float()
            if temperature and temperature != 1.0:
                logits = logits / temperature
            logp = torch.log_softmax(logits[:, :-1], dim=-1).gather(-1, ids[:, 1:].unsqueeze(-1)).squeeze(-1)
        out = []
        for i, (seq, start) in enumerate(zip(input_ids, completion_starts)):
            out.append(logp[i, start - 1 : len(seq) - 1])
        return out

    @torch.no_grad()
    def generate(self, prompt_ids: Sequence[int], max_new_tokens: int, temperature: float, top_p: float, seed: Optional[int], stop_ids: Optional[Set[int]] = None) -> Tuple[List[int], List[float]]:
        """Samples token by token (greedy at temperature 0); returns the ids and their logprobs under the policy."""
        gen = torch.Generator(device="cpu")
        gen.manual_seed(seed if seed is not None else torch.seed() % (2**31))
        stops = set(stop_ids or ()) | {self.tokenizer.eos_token_id}
        ids = list(prompt_ids)
        out: List[int] = []
        lps: List[float] = []
        limit = self.max_positions() if hasattr(self, "max_positions") else None
        for _ in range(max_new_tokens):
            window = ids[-limit:] if limit else ids
            x = torch.tensor([window], dtype=torch.long, device=self.device)
            logits = self._logits(x, torch.ones_like(x), False)[0, -1].float()
            logprobs = torch.log_softmax(logits, dim=-1)
            if temperature <= 0:
                nxt = int(torch.argmax(logprobs))
            else:
                probs = torch.softmax(logits / temperature, dim=-1).cpu()
                if 0 < top_p < 1:
                    sorted_p, order = torch.sort(probs, descending=True)
                    keep = torch.cumsum(sorted_p, dim=0) - sorted_p < top_p
                    probs = torch.zeros_like(probs).scatter(0, order[keep], sorted_p[keep])
                    probs = probs / probs.sum()
                nxt = int(torch.multinomial(probs, 1, generator=gen))
            out.append(nxt)
            lps.append(float(logprobs[nxt]))
            ids.append(nxt)
            if nxt in stops:
                break
        return out, lps

    def freeze_reference(self) -> None:
        """Snapshot the reference policy before the first update, where the backend needs one."""

    def describe(self) -> Dict[str, str]:
        return {"backend": self.backend, "device": str(self.device), "base_model": self.base_model, "version": self.version}
