"""The trainer's own small causal language model in plain torch, with a byte-level
tokenizer and a ChatML-style template.

It trains for real on a CPU in seconds, which is what lets the whole job (spec, data,
SFT, GRPO, serving, the launchers, Rollout Lab's job follower) be tested end to end on
machines without a GPU or the Hugging Face libraries. It is not a useful language model.

Its "adapter" is its full weights (tiny_model.pt) with its config (tiny_config.json);
its reference policy for GRPO's KL term is a frozen copy of the weights it started from
(a random initialisation is no reference worth staying close to)."""

import copy
import json
import math
import re
from pathlib import Path
from typing import Any

import torch
from torch import nn

from ..data import tool_call_json
from ..errors import SpecError
from ..spec import JobSpec
from ..tokenizer import Message, Tool
from .common import PolicyBase, positions

SPECIALS = ["<|pad|>", "<|im_start|>", "<|im_end|>", "<|endoftext|>"]
DEFAULT_CONFIG: dict[str, Any] = {"vocab": "bytes", "hidden_size": 64, "num_layers": 2, "num_heads": 4, "max_positions": 2048, "seed": 0}
ARCHITECTURE = ("vocab", "hidden_size", "num_layers", "num_heads", "max_positions")
WEIGHTS = "tiny_model.pt"
CONFIG = "tiny_config.json"
# One layer's cached attention keys and values, [B, heads, tokens, head size] each.
KeyValues = tuple[torch.Tensor, torch.Tensor]


class ByteChatTokenizer:
    """UTF-8 bytes (ids 0-255) plus special tokens. The template is ChatML: tools are
    listed in the system turn, and assistant tool calls are written
    `<tool_call>{"name": .., "arguments": {..}}</tool_call>` after the text, as
    Hermes-style templates (Qwen's) do and as serve parses them back."""

    def __init__(self) -> None:
        self.special_ids = {t: 256 + i for i, t in enumerate(SPECIALS)}
        self.pad_token_id = self.special_ids["<|pad|>"]
        self.eos_token_id = self.special_ids["<|im_end|>"]
        self.end_of_turn_ids = {self.eos_token_id, self.special_ids["<|endoftext|>"]}
        self.vocab_size = 256 + len(SPECIALS)
        self._split = re.compile("(" + "|".join(re.escape(t) for t in SPECIALS) + ")")

    @staticmethod
    def _body(m: dict[str, Any]) -> str:
        return (m.get("content") or "") + "".join(f"<tool_call>{tool_call_json(call)}</tool_call>" for call in m.get("tool_calls") or [])

    def render(self, messages: list[Message], tools: list[Tool] | None = None, add_generation_prompt: bool = False) -> str:
        msgs = list(messages)
        if tools:
            listing = "# Tools\n<tools>\n" + "\n".join(json.dumps(t.get("function", t), ensure_ascii=False, sort_keys=True) for t in tools) + "\n</tools>"
            if msgs and msgs[0]["role"] == "system":
                msgs[0] = {**msgs[0], "content": (msgs[0].get("content") or "") + "\n\n" + listing}
            else:
                msgs.insert(0, {"role": "system", "content": listing})
        parts = [f"<|im_start|>{m['role']}\n{self._body(m)}<|im_end|>\n" for m in msgs]
        if add_generation_prompt:
            parts.append("<|im_start|>assistant\n")
        return "".join(parts)

    def encode_with_offsets(self, text: str) -> tuple[list[int], list[tuple[int, int]]]:
        """Ids and the character span each id came from (a multi-byte character's bytes share its span)."""
        ids: list[int] = []
        offsets: list[tuple[int, int]] = []
        pos = 0
        for piece in self._split.split(text):
            if piece in self.special_ids:
                ids.append(self.special_ids[piece])
                offsets.append((pos, pos + len(piece)))
            else:
                for k, ch in enumerate(piece):
                    for b in ch.encode("utf-8"):
                        ids.append(b)
                        offsets.append((pos + k, pos + k + 1))
            pos += len(piece)
        return ids, offsets

    def encode(self, text: str) -> list[int]:
        return self.encode_with_offsets(text)[0]

    def decode(self, ids: list[int]) -> str:
        """Text of the ids without the special tokens (like skip_special_tokens=True)."""
        return bytes(i for i in ids if 0 <= i < 256).decode("utf-8", errors="replace")

    def token_text(self, i: int) -> str:
        if i >= 256:
            return SPECIALS[i - 256] if i - 256 < len(SPECIALS) else ""
        return bytes([i]).decode("latin-1")

    def token_bytes(self, i: int) -> bytes:
        """A byte token's one byte (its text is that byte as a latin-1 character, which
        UTF-8 would write as two bytes above 127); a special token's text in UTF-8."""
        return bytes([i]) if 0 <= i < 256 else self.token_text(i).encode("utf-8")


class Attention(nn.Module):
    """Multi-head self-attention over an explicit boolean `allowed` mask (causal and not
    padding, plus the diagonal so a padding row is never empty: an all-masked softmax
    would give NaN, and 0 * NaN in the next layer would spread it to real tokens).

    With `past` (the keys and values of the tokens before x, [B, H, P, d/H] each), x's
    queries also see those tokens, and `allowed` is [.., T, P + T]. The keys and values
    of past and x together are returned, so decoding feeds one token at a time instead
    of re-running the whole sequence."""

    def __init__(self, d: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)

    def forward(self, x: torch.Tensor, allowed: torch.Tensor, past: KeyValues | None = None) -> tuple[torch.Tensor, KeyValues]:
        b, t, d = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        if past is not None:
            k, v = torch.cat([past[0], k], dim=2), torch.cat([past[1], v], dim=2)
        att = (q @ k.transpose(-2, -1)) / math.sqrt(d // self.heads)
        att = torch.softmax(att.masked_fill(~allowed, float("-inf")), dim=-1)
        return self.proj((att @ v).transpose(1, 2).reshape(b, t, d)), (k, v)


class Block(nn.Module):
    """Pre-norm transformer block: x + attn(ln(x)), then x + mlp(ln(x))."""

    def __init__(self, d: int, heads: int) -> None:
        super().__init__()
        self.ln1 = nn.LayerNorm(d)
        self.attn = Attention(d, heads)
        self.ln2 = nn.LayerNorm(d)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

    def forward(self, x: torch.Tensor, allowed: torch.Tensor, past: KeyValues | None = None) -> tuple[torch.Tensor, KeyValues]:
        a, kv = self.attn(self.ln1(x), allowed, past)
        x = x + a
        return x + self.mlp(self.ln2(x)), kv


class TinyCausalLM(nn.Module):
    """Token + position embeddings, N pre-norm blocks with causal attention, a final norm
    and an untied output head. forward(ids [B,T], mask [B,T]) -> logits [B,T,V]."""

    def __init__(self, vocab: int, hidden_size: int, num_layers: int, num_heads: int, max_positions: int) -> None:
        super().__init__()
        self.max_positions = max_positions
        self.embed = nn.Embedding(vocab, hidden_size)
        self.pos = nn.Embedding(max_positions, hidden_size)
        self.blocks = nn.ModuleList(Block(hidden_size, num_heads) for _ in range(num_layers))
        self.ln = nn.LayerNorm(hidden_size)
        self.head = nn.Linear(hidden_size, vocab, bias=False)

    def forward(self, ids: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        t = ids.shape[1]
        self._check_length(t)
        mask = torch.ones_like(ids) if mask is None else mask
        x = self.embed(ids) + self.pos(positions(mask))
        causal = torch.tril(torch.ones(t, t, dtype=torch.bool, device=ids.device))
        eye = torch.eye(t, dtype=torch.bool, device=ids.device)
        allowed = ((causal[None] & mask.bool()[:, None, :]) | eye[None])[:, None]
        for block in self.blocks:
            x, _ = block(x, allowed)
        return self.head(self.ln(x))

    def extend(self, ids: torch.Tensor, past: list[KeyValues] | None = None) -> tuple[torch.Tensor, list[KeyValues]]:
        """Logits [B, T, V] of `ids` (unpadded) following the tokens whose keys and values
        are cached in `past` (one pair per layer; None: ids start the sequence), and the
        cache extended by them. The same numbers as forward() on the whole sequence, to
        float rounding: positions continue where the cache ends, and each new token sees
        every cached one and the new ones before it."""
        done = 0 if past is None else int(past[0][0].shape[2])
        t = ids.shape[1]
        self._check_length(done + t)
        x = self.embed(ids) + self.pos(torch.arange(done, done + t, device=ids.device))[None]
        allowed = torch.ones(t, done + t, dtype=torch.bool, device=ids.device).tril(diagonal=done)[None, None]
        cache: list[KeyValues] = []
        for n, block in enumerate(self.blocks):
            x, kv = block(x, allowed, None if past is None else past[n])
            cache.append(kv)
        return self.head(self.ln(x)), cache

    def _check_length(self, t: int) -> None:
        if t > self.max_positions:
            raise ValueError(f"a sequence of {t} tokens is longer than the model's max_positions {self.max_positions}")


def resolve_config(config: dict[str, Any] | None) -> dict[str, Any]:
    """The tiny model's config: the defaults overridden by model.config, checked."""
    cfg = {**DEFAULT_CONFIG, **(config or {})}
    unknown = sorted(set(cfg) - set(DEFAULT_CONFIG))
    if unknown:
        raise SpecError(f"model.config: the tiny model takes {', '.join(DEFAULT_CONFIG)}; not {', '.join(unknown)}")
    if cfg["vocab"] != "bytes":
        raise SpecError(f"model.config.vocab: the tiny model's vocabulary is 'bytes', not {cfg['vocab']!r}")
    for k in ("hidden_size", "num_layers", "num_heads", "max_positions"):
        if not isinstance(cfg[k], int) or isinstance(cfg[k], bool) or cfg[k] <= 0:
            raise SpecError(f"model.config.{k}: must be a positive integer, got {cfg[k]!r}")
    if not isinstance(cfg["seed"], int) or isinstance(cfg["seed"], bool):
        raise SpecError(f"model.config.seed: must be an integer, got {cfg['seed']!r}")
    if cfg["hidden_size"] % cfg["num_heads"]:
        raise SpecError(f"model.config: hidden_size {cfg['hidden_size']} must be a multiple of num_heads {cfg['num_heads']}")
    return cfg


class TinyPolicy(PolicyBase[ByteChatTokenizer, TinyCausalLM]):
    backend = "tiny"

    def __init__(self, config: dict[str, Any], device: torch.device, base_model: str = "tiny") -> None:
        super().__init__()
        self.config = resolve_config(config)
        self.tokenizer = ByteChatTokenizer()
        self.device = device
        self.base_model = base_model
        # Weights from the config's seed, no adapter loaded yet: the context can still grow for free.
        self.from_scratch = True
        self._build()

    def _build(self) -> None:
        # The same seed builds the same weights, on any machine.
        gen_state = torch.random.get_rng_state()
        torch.manual_seed(int(self.config["seed"]))
        self.model = TinyCausalLM(self.tokenizer.vocab_size, self.config["hidden_size"], self.config["num_layers"],
                                  self.config["num_heads"], self.config["max_positions"]).to(self.device)
        torch.random.set_rng_state(gen_state)
        self.freeze_reference()

    @classmethod
    def from_spec(cls, spec: JobSpec, device: str | None = None) -> "TinyPolicy":
        dev = torch.device(device or ("cuda" if torch.cuda.is_available() else "cpu"))
        config = spec.model.config
        rel = spec.model.adapter
        adapter, version = (spec.path(rel), Path(rel).name) if rel else (None, "base")
        if adapter is not None:
            saved = read_adapter_config(adapter)
            # model.config null: the adapter says what it is. Otherwise its max_positions still
            # wins: a job that grew the context to fit its data saved the grown model, and the
            # lab's config keeps the size it started from.
            config = saved if config is None else {**config, **{k: saved[k] for k in ("max_positions",) if k in saved}}
        policy = cls(config or {}, dev, spec.model.base)
        if adapter is not None:
            policy.load_adapter(adapter, version)
            policy.freeze_reference()
        return policy

    def freeze_reference(self) -> None:
        """The reference policy from now on: a frozen copy of the current weights."""
        ref = copy.deepcopy(self.model)
        ref.eval()
        for p in ref.parameters():
            p.requires_grad_(False)
        self._reference = ref

    def max_positions(self) -> int:
        return int(self.config["max_positions"])

    def context_setting(self) -> str:
        return "model.config.max_positions (training.trainer.modelConfig.max_positions in lab.json)"

    def grow_context(self, length: int) -> bool:
        """A model still built from scratch is rebuilt from its config with max_positions
        raised to `length` rounded up to a multiple of 256 (some room for the prompts it
        will serve): nothing trained is lost, and the saved adapter records the new size.
        A model that loaded an adapter keeps the context its weights have."""
        if not self.from_scratch or length <= self.max_positions():
            return False
        self.config = {**self.config, "max_positions": -(-int(length) // 256) * 256}
        self._build()
        return True

    def _forward(self, ids: torch.Tensor, mask: torch.Tensor, keep: int, reference: bool) -> torch.Tensor:
        model = self._reference if reference else self.model
        return model(ids, mask)[:, -keep:]

    def _gen_start(self, prompt_ids: list[int]) -> tuple[torch.Tensor, list[KeyValues]]:
        x = torch.tensor([prompt_ids], dtype=torch.long, device=self.device)
        logits, cache = self.model.extend(x)
        return logits[0, -1], cache

    def _gen_next(self, cache: list[KeyValues], token: int) -> tuple[torch.Tensor, list[KeyValues]]:
        logits, cache = self.model.extend(torch.tensor([[token]], dtype=torch.long, device=self.device), cache)
        return logits[0, -1], cache

    def save_adapter(self, directory: Path | str) -> None:
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        with self.lock:
            state = {k: v.detach().cpu() for k, v in self.model.state_dict().items()}
        torch.save(state, directory / WEIGHTS)
        (directory / CONFIG).write_text(json.dumps({**self.config, "base_model": self.base_model}, indent=2) + "\n", encoding="utf-8")

    def load_adapter(self, directory: Path | str, version: str) -> None:
        directory = Path(directory)
        saved = read_adapter_config(directory)
        mismatch = [k for k in ARCHITECTURE if saved.get(k) != self.config[k]]
        if mismatch:
            raise SpecError(f"{directory}: the adapter was trained with another tiny model ({', '.join(f'{k} {saved.get(k)!r} here {self.config[k]!r}' for k in mismatch)})")
        state = torch.load(directory / WEIGHTS, map_location=self.device)
        with self.lock:
            self.model.load_state_dict(state)
            self.version = version
            self.from_scratch = False
            self._drop_optimizer()

    def merge_and_save(self, directory: Path | str) -> None:
        """The tiny model has no separate adapter: merged weights are its weights."""
        self.save_adapter(directory)


def read_adapter_config(directory: Path) -> dict[str, Any]:
    directory = Path(directory)
    if not (directory / WEIGHTS).is_file() or not (directory / CONFIG).is_file():
        raise SpecError(f"{directory}: not a tiny-model adapter ({WEIGHTS} and {CONFIG} expected) — point model.adapter at a previous job's out/adapter")
    saved = json.loads((directory / CONFIG).read_text(encoding="utf-8"))
    return {k: saved[k] for k in DEFAULT_CONFIG if k in saved}
