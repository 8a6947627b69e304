"""A transformers causal LM with a peft LoRA adapter: the base model stays frozen (4-bit
where asked), the adapter trains, and the reference policy for the KL term is the base
model itself (the adapter switched off), so no second copy of the weights is held."""

from pathlib import Path
from typing import Any, List, Optional

import torch

from ..errors import SpecError
from .common import PolicyBase

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


class HfTokenizer:
    """The tokenizer's own chat template, behind the interface the trainer uses."""

    def __init__(self, tok: Any) -> None:
        self.tok = tok
        if tok.pad_token_id is None:
            tok.pad_token = tok.eos_token
        self.pad_token_id = tok.pad_token_id
        self.eos_token_id = tok.eos_token_id
        self.vocab_size = len(tok)

    def render(self, messages: List[dict], tools: Optional[list] = None, add_generation_prompt: bool = False) -> str:
        return self.tok.apply_chat_template(messages, tools=tools or None, add_generation_prompt=add_generation_prompt, tokenize=False)

    def encode(self, text: str) -> List[int]:
        return self.tok(text, add_special_tokens=False)["input_ids"]

    def decode(self, ids: List[int]) -> str:
        return self.tok.decode(ids, skip_special_tokens=True)

    def token_text(self, i: int) -> str:
        return self.tok.decode([i])


class HfPolicy(PolicyBase):
    backend = "transformers"

    def __init__(self, model: Any, tokenizer: HfTokenizer, device: torch.device, base_model: str) -> None:
        super().__init__()
        self.model = model
        self.tokenizer = tokenizer
        self.device = device
        self.base_model = base_model
        self.version = "base"

    @classmethod
    def from_spec(cls, spec: Any, device: Optional[str] = None, lora: bool = True) -> "HfPolicy":
        from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer
        from peft import LoraConfig, PeftModel, get_peft_model

        hp = spec.hyperparameters
        dev = torch.device(device or ("cuda" if torch.cuda.is_available() else "cpu"))
        dtype = DTYPES.get(spec.model.dtype) or (torch.bfloat16 if dev.type == "cuda" else torch.float32)
        tok = AutoTokenizer.from_pretrained(spec.model.base)
        if spec.model.config:
            cfg = dict(spec.model.config)
            model_type = cfg.pop("model_type", None)
            if not model_type:
                raise SpecError("model.config: a transformers config needs model_type (e.g. llama, qwen2)")
            model = AutoModelForCausalLM.from_config(AutoConfig.for_model(model_type, **cfg), torch_dtype=dtype)
        else:
            kwargs: dict = {"torch_dtype": dtype}
            if hp.get("load_in_4bit"):
                from transformers import BitsAndBytesConfig

                kwargs["quantization_config"] = BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type="nf4", bnb_4bit_compute_dtype=dtype)
                kwargs["device_map"] = {"": dev.index or 0}
            model = AutoModelForCausalLM.from_pretrained(spec.model.base, **kwargs)
        if not hp.get("load_in_4bit"):
            model.to(dev)
        if hp.get("gradient_checkpointing"):
            model.gradient_checkpointing_enable()
            model.enable_input_require_grads()
        if spec.model.adapter:
            model = PeftModel.from_pretrained(model, str(spec.path(spec.model.adapter)), is_trainable=lora)
        elif lora:
            modules = hp.get("target_modules") or ["q_proj", "k_proj", "v_proj", "o_proj"]
            model = get_peft_model(model, LoraConfig(r=int(hp["lora_r"]), lora_alpha=int(hp["lora_alpha"]), lora_dropout=float(hp["lora_dropout"]), target_modules=list(modules), task_type="CAUSAL_LM"))
        policy = cls(model, HfTokenizer(tok), dev, spec.model.base)
        if spec.model.adapter:
            policy.version = Path(spec.model.adapter).name
        return policy

    def max_positions(self) -> Optional[int]:
        return getattr(self.model.config, "max_position_embeddings", None)

    def _logits(self, ids: torch.Tensor, mask: torch.Tensor, reference: bool) -> torch.Tensor:
        if reference and hasattr(self.model, "disable_adapter"):
            with self.model.disable_adapter():
                return self.model(input_ids=ids, attention_mask=mask).logits
        return self.model(input_ids=ids, attention_mask=mask).logits

    def save_adapter(self, directory: Path) -> None:
        Path(directory).mkdir(parents=True, exist_ok=True)
        self.model.save_pretrained(str(directory))
        self.tokenizer.tok.save_pretrained(str(directory))

    def load_adapter(self, directory: Path, version: str) -> None:
        with self.lock:
            self.model.load_adapter(str(directory), adapter_name=version, is_trainable=True)
            self.model.set_adapter(version)
            self.version = version

    def merge_and_save(self, directory: Path) -> None:
        merged = self.model.merge_and_unload() if hasattr(self.model, "merge_and_unload") else self.model
        Path(directory).mkdir(parents=True, exist_ok=True)
        merged.save_pretrained(str(directory))
        self.tokenizer.tok.save_pretrained(str(directory))
