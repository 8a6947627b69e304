"""The trainer's own small causal language model in plain torch, with a byte-level
tokenizer and a ChatML-style template. It trains for real on a CPU, which is what lets the
whole job (spec, data, SFT, GRPO, serving, launchers) be tested on machines without a GPU
or Hugging Face libraries. Its "adapter" is its full weights."""

import copy
import json
import re
from pathlib import Path
from typing import Any, Dict, List, Optional

import torch
from torch import nn

from ..errors import SpecError
from .common import PolicyBase

SPECIALS = ["<|pad|>", "<|im_start|>", "<|im_end|>", "<|endoftext|>"]
DEFAULT_CONFIG = {"hidden_size": 64, "num_layers": 2, "num_heads": 4, "max_positions": 2048, "seed": 0}


class ByteChatTokenizer:
    """Bytes 0-255 plus the special tokens; tools go in the system turn, tool calls are
    written `<tool_call>{"name":..,"arguments":{..}}</tool_call>` as Hermes-style templates do."""

    def __init__(self) -> None:
        self.special_ids = {t: 256 + i for i, t in enumerate(SPECIALS)}
        self.pad_token_id = self.special_ids["<|pad|>"]
        self.eos_token_id = self.special_ids["<|im_end|>"]
        self.vocab_size = 256 + len(SPECIALS)
        self._split = re.compile("(" + "|".join(re.escape(t) for t in SPECIALS) + ")")

    def render(self, messages: List[Dict[str, Any]], tools: Optional[list] = None, add_generation_prompt: bool = False) -> str:
        parts = []
        msgs = list(messages)
        if tools:
            listing = "\n\n# Tools\n" + "\n".join(json.dumps(t.get("function", t), sort_keys=True) for t in tools)
            if msgs and msgs[0]["role"] == "system":
                msgs[0] = {**msgs[0], "content": (msgs[0].get("content") or "") + listing}
            else:
                msgs.insert(0, {"role": "system", "content": listing.strip()})
        for m in msgs:
            body = m.get("content") or ""
            for call in m.get("tool_calls") or []:
                fn = call["function"]
                try:
                    args = json.loads(fn["arguments"])
                except (json.JSONDecodeError, TypeError):
                    args = fn["arguments"]
                body += "<tool_call>" + json.dumps({"name": fn["name"], "arguments": args}, sort_keys=True) + "</tool_call>"
            parts.append(f"<|im_start|>{m['role']}\n{body}<|im_end|>\n")
        if add_generation_prompt:
            parts.append("<|im_start|>assistant\n")
        return "".join(parts)

    def encode(self, text: str) -> List[int]:
        ids: List[int] = []
        for piece in self._split.split(text):
            if piece in self.special_ids:
                ids.append(self.special_ids[piece])
            elif piece:
                ids.extend(piece.encode("utf-8"))
        return ids

    def decode(self, ids: List[int]) -> str:
        out = bytearray()
        for i in ids:
            if i < 256:
                out.append(i)
            elif i != self.pad_token_id and i != self.eos_token_id:
                out.extend(SPECIALS[i - 256].encode())
        return out.decode("utf-8", errors="replace")

    def token_text(self, i: int) -> str:
        return SPECIALS[i - 256] if i >= 256 else bytes([i]).decode("latin-1")


class Block(nn.Module):
    def __init__(self, d: int, heads: int) -> None:
        super().__init__()
        self.ln1 = nn.LayerNorm(d)
        self.attn = nn.MultiheadAttention(d, heads, batch_first=True)
        self.ln2 = nn.LayerNorm(d)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

    def forward(self, x: torch.Tensor, causal: torch.Tensor, pad: torch.Tensor) -> torch.Tensor:
        h = self.ln1(x)
        a, _ = self.attn(h, h, h, attn_mask=causal, key_padding_mask=pad, need_weights=False)
        x = x + a
        return x + self.mlp(self.ln2(x))


class TinyCausalLM(nn.Module):
    def __init__(self, vocab: int, hidden_size: int, num_layers: int, num_heads: int, max_positions: int) -> None:
        super().__init__()
        self.max_positions = max_positions
        self.embed = nn.Embedding(vocab, hidden_size)
        self.pos = nn.Embedding(max_positions, hidden_size)
        self.blocks = nn.ModuleList(Block(hidden_size, num_heads) for _ in range(num_layers))
        self.ln = nn.LayerNorm(hidden_size)
        self.head = nn.Linear(hidden_size, vocab, bias=False)

    def forward(self, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        t = ids.shape[1]
        if t > self.max_positions:
            raise ValueError(f"sequence of {t} tokens is longer than max_positions {self.max_positions}")
        x = self.embed(ids) + self.pos(torch.arange(t, device=ids.device))[None]
        causal = torch.triu(torch.ones(t, t, dtype=torch.bool, device=ids.device), diagonal=1)
        pad = mask == 0
        for b in self.blocks:
            x = b(x, causal, pad)
        return self.head(self.ln(x))


class TinyPolicy(PolicyBase):
    backend = "tiny"

    def __init__(self, config: Dict[str, Any], device: torch.device, base_model: str) -> None:
        super().__init__()
        self.config = config
        self.tokenizer = ByteChatTokenizer()
        torch.manual_seed(int(config.get("seed", 0)))
        self.model = TinyCausalLM(self.tokenizer.vocab_size, int(config["hidden_size"]), int(config["num_layers"]), int(config["num_heads"]), int(config["max_positions"])).to(device)
        self.device = device
        self.base_model = base_model
        self.version = "base"
        self._reference: Optional[TinyCausalLM] = None

    @classmethod
    def from_spec(cls, spec: Any, device: Optional[str] = None) -> "TinyPolicy":
        config = {**DEFAULT_CONFIG, **(spec.model.config or {})}
        unknown = sorted(set(config) - set(DEFAULT_CONFIG))
        if unknown:
            raise SpecError(f"model.config: the tiny model takes {', '.join(DEFAULT_CONFIG)}, not {', '.join(unknown)}")
        if int(config["hidden_size"]) % int(config["num_heads"]):
            raise SpecError("model.config: hidden_size must be a multiple of num_heads")
        dev = torch.device(device or ("cuda" if torch.cuda.is_available() else "cpu"))
        policy = cls(config, dev, spec.model.base)
        if spec.model.adapter:
            policy.load_adapter(spec.path(spec.model.adapter), Path(spec.model.adapter).name)
        return policy

    def max_positions(self) -> int:
        return self.model.max_positions

    def _logits(self, ids: torch.Tensor, mask: torch.Tensor, reference: bool) -> torch.Tensor:
        if reference:
            if self._reference is None:
                # The reference is the policy as it was loaded: frozen before the first update.
                self._reference = copy.deepcopy(self.model).eval()
                for p in self._reference.parameters():
                    p.requires_grad_(False)
            return self._reference(ids, mask)
        return self.model(ids, mask)

    def freeze_reference(self) -> None:
        self._logits(torch.zeros((1, 1), dtype=torch.long, device=self.device), torch.ones((1, 1), dtype=torch.long, device=self.device), True)

    def save_adapter(self, directory: Path) -> None:
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        torch.save(self.model.state_dict(), directory / "tiny_model.pt")
        (directory / "tiny_config.json").write_text(json.dumps({**self.config, "base_model": self.base_model}, indent=2), encoding="utf-8")

    def load_adapter(self, directory: Path, version: str) -> None:
        directory = Path(directory)
        weights = directory / "tiny_model.pt"
        if not weights.exists():
            raise SpecError(f"{directory}: not a tiny-model adapter (no tiny_model.pt)")
        saved = json.loads((directory / "tiny_config.json").read_text(encoding="utf-8"))
        mismatch = [k for k in DEFAULT_CONFIG if k != "seed" and int(saved.get(k, -1)) != int(self.config[k])]
        if mismatch:
            raise SpecError(f"{directory}: the adapter was trained with another model.config ({', '.join(mismatch)})")
        with self.lock:
            self.model.load_state_dict(torch.load(weights, map_location=self.device))
            self.version = version

    def merge_and_save(self, directory: Path) -> None:
        self.save_adapter(directory)
