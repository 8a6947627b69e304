"""The Policy interface: what sft.py, grpo.py, context.py and the serve parts use of the
model a job trains or serves. The transformers backend (backends/hf.py) implements it on
top of backends/common.PolicyBase; anything with these members will do."""

import threading
from collections.abc import Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import NamedTuple, Protocol

import torch
from torch.optim import Optimizer

from .tokenizer import Tokenizer


class Sampled(NamedTuple):
    """A completion as generate samples it: the ids, each one's logprob, and per position
    the `top_logprobs` most likely (id, logprob) pairs, most likely first (empty lists when
    none were asked for), all under the same temperature-1 distribution."""

    ids: list[int]
    logprobs: list[float]
    top: list[list[tuple[int, float]]]


class Policy(Protocol):
    """A model under training or serving, with its tokenizer.

    `lock` is held around every use of the weights (serve's requests and updates share the
    policy); `optimizer` is kept here so repeated GRPO updates in a server continue one
    AdamW state (None after an adapter load); `kv_cache` False decodes by recomputing the
    whole sequence per token (the serve job's `kv_cache` hyper-parameter); `version` is the
    adapter's name, or "base"."""

    lock: threading.RLock
    optimizer: Optimizer | None
    version: str
    kv_cache: bool

    @property
    def tokenizer(self) -> Tokenizer: ...

    @property
    def model(self) -> torch.nn.Module: ...

    @property
    def device(self) -> torch.device: ...

    @property
    def backend(self) -> str: ...  # 'transformers'

    @property
    def base_model(self) -> str: ...

    def describe(self) -> dict[str, str]: ...

    def eval_mode(self) -> AbstractContextManager[None]: ...

    def forward_logits(self, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor: ...

    def sequence_logprobs(self, input_ids: Sequence[Sequence[int]], completion_starts: Sequence[int], reference: bool = False,
                          temperature: float = 1.0) -> list[torch.Tensor]: ...

    def generate(self, prompt_ids: Sequence[int], max_new_tokens: int, temperature: float, top_p: float, seed: int | None,
                 stop_ids: set[int] | None = None, top_logprobs: int = 0) -> Sampled: ...

    def max_positions(self) -> int | None: ...

    def context_setting(self) -> str | None: ...

    def trainable_parameters(self) -> list[torch.nn.Parameter]: ...

    def save_adapter(self, directory: Path | str) -> None: ...

    def carry_base(self, directory: Path | str) -> None: ...

    def load_adapter(self, directory: Path | str, version: str) -> None: ...

    def merge_and_save(self, directory: Path | str) -> None: ...
