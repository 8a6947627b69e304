"""A transformers causal LM with a peft LoRA adapter.

The base model stays frozen (in 4-bit where asked), only the adapter trains, and the
reference policy for GRPO's KL term is the base model itself (`disable_adapter()`), so
no second copy of the weights is held. The tokenizer's own chat template renders every
conversation, so training sees exactly what the model sees when vLLM or serve.py
applies the same template.

Written against transformers 5.x and peft 0.2x (python-trainer/requirements.txt pins what
the suite runs); a model built from a config with a tokenizer trained here (hf_build.py)
is what the suite trains and serves on the CPU."""

import inspect
import shutil
import tempfile
from pathlib import Path
from typing import Any

import torch

from ..data import read_jsonl, tool_call_arguments
from ..errors import SpecError
from ..hparams import SftParams, target_modules
from ..spec import JobSpec
from ..tokenizer import Message, Tool
from .common import PolicyBase, positions
from .hf_build import BASE_DIR, DEFAULT_VOCAB, build_model, corpus_of, embedding_modules, has_tokenizer, train_tokenizer

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}
# Tokens that close a turn in the common chat formats (ChatML, Llama 3, Phi, Gemma);
# those present in a tokenizer's vocabulary stop generation and end a learnt turn.
TURN_END_TOKENS = ("<|im_end|>", "<|eot_id|>", "<|eom_id|>", "<|end|>", "<end_of_turn>", "<|endoftext|>")


def dtype_kwarg() -> str:
    """transformers 4.56 renamed from_pretrained's torch_dtype to dtype (5.x warns on the old name)."""
    import transformers
    from packaging.version import Version

    return "dtype" if Version(transformers.__version__) >= Version("4.56.0") else "torch_dtype"


def resolve_dtype(name: str, device: torch.device) -> torch.dtype:
    """model.dtype; `auto` is bfloat16 on a GPU that has it, float32 otherwise (float16
    training without a loss scaler overflows, so auto never picks it)."""
    if name in DTYPES:
        return DTYPES[name]
    if device.type == "cuda" and torch.cuda.is_bf16_supported():
        return torch.bfloat16
    return torch.float32


class HfTokenizer:
    """A Hugging Face tokenizer behind the interface the trainer uses."""

    def __init__(self, tok: Any) -> None:
        self.tok = tok
        if not getattr(tok, "chat_template", None):
            raise SpecError("model.base: the tokenizer has no chat template — use an instruct/chat model, or add a chat_template to its tokenizer_config.json")
        if tok.eos_token_id is None:
            raise SpecError("model.base: the tokenizer has no eos token — set eos_token in its tokenizer_config.json")
        if tok.pad_token_id is None:
            tok.pad_token = tok.eos_token  # padding is masked out; any id will do
        self.pad_token_id = int(self.tok.pad_token_id)
        self.eos_token_id = int(tok.eos_token_id)
        vocab = tok.get_vocab()
        self.end_of_turn_ids = {self.eos_token_id} | {int(vocab[t]) for t in TURN_END_TOKENS if t in vocab}
        self.vocab_size = len(tok)
        if getattr(tok, "is_fast", False):
            self.encode_with_offsets = self._encode_with_offsets

    @staticmethod
    def _for_template(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """OpenAI messages as chat templates expect them: tool-call arguments as objects
        (templates apply `tojson` to them; a JSON string would be encoded twice) and
        text content never null (some templates print "None")."""
        out = []
        for m in messages:
            msg = {**m, "content": m.get("content") or ""}
            if m.get("tool_calls"):
                calls = []
                for call in m["tool_calls"]:
                    fn = call.get("function", {})
                    calls.append({**call, "type": call.get("type", "function"),
                                  "function": {**fn, "arguments": tool_call_arguments(fn.get("arguments"))}})
                msg["tool_calls"] = calls
            out.append(msg)
        return out

    def render(self, messages: list[Message], tools: list[Tool] | None = None, add_generation_prompt: bool = False) -> str:
        text = self.tok.apply_chat_template(self._for_template(messages), tools=tools or None,
                                            add_generation_prompt=add_generation_prompt, tokenize=False)
        if isinstance(text, list):  # a batch of one, in some versions
            text = text[0]
        return str(text)

    def encode(self, text: str) -> list[int]:
        # The template writes the special tokens (BOS included) as text; don't add them again.
        return list(self.tok(text, add_special_tokens=False)["input_ids"])

    def _encode_with_offsets(self, text: str) -> tuple[list[int], list[tuple[int, int]]]:
        enc = self.tok(text, add_special_tokens=False, return_offsets_mapping=True)
        return list(enc["input_ids"]), [tuple(o) for o in enc["offset_mapping"]]

    def decode(self, ids: list[int]) -> str:
        return self.tok.decode(list(ids), skip_special_tokens=True)

    def token_text(self, i: int) -> str:
        return self.tok.decode([int(i)])


def _logits_keep_arg(model: Any) -> str | None:
    """The forward argument that limits the logits to the last positions (renamed in 4.50)."""
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    params = inspect.signature(base.forward).parameters
    for name in ("logits_to_keep", "num_logits_to_keep"):
        if name in params:
            return name
    return None


class HfPolicy(PolicyBase[HfTokenizer, Any]):
    backend = "transformers"

    def __init__(self, model: Any, tokenizer: HfTokenizer, device: torch.device, base_model: str, base_path: str,
                 dtype: torch.dtype, quantized: bool, built_dir: Path | None = None) -> None:
        super().__init__()
        self.model = model
        self.tokenizer = tokenizer
        self.device = device
        self.base_model = base_model
        self.dtype = dtype
        self.quantized = quantized
        self._base_path = base_path
        self._keep_arg = _logits_keep_arg(model)
        self.merged = False
        # The model built from a config (with its tokenizer) that every saved adapter carries; None for a loaded one.
        self.built_dir = built_dir
        # Built by this job from model.config (not carried by an adapter): the config sizes its context.
        self.built_here = False

    @classmethod
    def from_spec(cls, spec: JobSpec, device: str | None = None) -> "HfPolicy":
        from peft import LoraConfig, PeftModel, get_peft_model
        from transformers import AutoModelForCausalLM, AutoTokenizer

        hp = spec.hyperparameters
        dev = torch.device(device) if device else torch.device("cuda" if torch.cuda.is_available() else "cpu")
        dtype = resolve_dtype(spec.model.dtype, dev)
        base = _base_path(spec)
        adapter = spec.path(spec.model.adapter) if spec.model.adapter else None
        # An adapter trained on a model built from a config carries that model (hf_build.BASE_DIR).
        carried = adapter / BASE_DIR if adapter is not None and (adapter / BASE_DIR / "config.json").is_file() else None
        if carried is not None:
            base = str(carried)
        quantized = isinstance(hp, SftParams) and hp.load_in_4bit
        checkpointing = hp.gradient_checkpointing
        built_dir: Path | None = None
        if spec.model.config and carried is None:
            # A model built from a config: its tokenizer from model.base where that folder has one, else trained here.
            if has_tokenizer(Path(base)):
                tok = AutoTokenizer.from_pretrained(base)
            else:
                records = [rec for _, rec in read_jsonl(spec.path(spec.train))] if spec.train else []
                tok = train_tokenizer(corpus_of(records), int(spec.model.config.get("vocab_size") or DEFAULT_VOCAB))
            tokenizer = HfTokenizer(tok)
            model = build_model(spec.model.config, len(tok), hp.seed).to(device=dev, dtype=dtype)
            quantized = False
            # Saved as it was built, before any adapter touches it: every adapter trained here carries it.
            built_dir = spec.out / BASE_DIR
            model.save_pretrained(str(built_dir))
            tok.save_pretrained(str(built_dir))
        else:
            try:
                tok = AutoTokenizer.from_pretrained(base)
            except (OSError, ValueError) as exc:
                raise SpecError(f"model.base: cannot load a tokenizer from {spec.model.base!r} ({exc})") from None
            tokenizer = HfTokenizer(tok)  # checked before any weights are loaded
            kwargs: dict[str, Any] = {dtype_kwarg(): dtype}
            if quantized:
                if dev.type != "cuda":
                    raise SpecError("hyperparameters.load_in_4bit: 4-bit loading (bitsandbytes) needs a CUDA GPU — set it false, or run on a GPU target")
                from transformers import BitsAndBytesConfig

                kwargs["quantization_config"] = BitsAndBytesConfig(
                    load_in_4bit=True, bnb_4bit_quant_type="nf4", bnb_4bit_use_double_quant=True,
                    bnb_4bit_compute_dtype=dtype if dtype != torch.float32 else torch.bfloat16)
                kwargs["device_map"] = {"": dev.index if dev.index is not None else torch.cuda.current_device()}
            try:
                model: Any = AutoModelForCausalLM.from_pretrained(base, **kwargs)
            except OSError as exc:
                raise SpecError(f"model.base: cannot load {spec.model.base!r} ({exc})") from None
            if not quantized:
                model.to(dev)
            if carried is not None:
                built_dir = carried

        if quantized:
            from peft import prepare_model_for_kbit_training

            model = prepare_model_for_kbit_training(model, use_gradient_checkpointing=checkpointing,
                                                    gradient_checkpointing_kwargs={"use_reentrant": False})
        elif checkpointing:
            model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
            model.enable_input_require_grads()

        if adapter is not None:
            model = PeftModel.from_pretrained(model, str(adapter), is_trainable=True)
        else:
            # A model built from a config has no trained embeddings for an adapter to steer: its input embeddings and
            # output head train in full (and are saved in the adapter), the rest through LoRA.
            lora = LoraConfig(r=hp.lora_r, lora_alpha=hp.lora_alpha, lora_dropout=hp.lora_dropout,
                              target_modules=target_modules(hp), task_type="CAUSAL_LM",
                              modules_to_save=embedding_modules(model) if built_dir is not None else None)
            try:
                model = get_peft_model(model, lora)
            except ValueError as exc:
                raise SpecError(f"hyperparameters.target_modules: {exc}") from None
        policy = cls(model, tokenizer, dev, spec.model.base, base, dtype, quantized, built_dir)
        policy.built_here = built_dir is not None and carried is None
        if spec.model.adapter:
            policy.version = Path(spec.model.adapter).name
        return policy

    def max_positions(self) -> int | None:
        n = getattr(self.model.config, "max_position_embeddings", None)
        return int(n) if n else None

    def context_setting(self) -> str | None:
        if not self.built_here:
            return None
        return "model.config.max_position_embeddings (training.trainer.modelConfig.max_position_embeddings in lab.json)"

    def _is_peft(self) -> bool:
        from peft import PeftModel

        return isinstance(self.model, PeftModel)

    def _forward(self, ids: torch.Tensor, mask: torch.Tensor, keep: int, reference: bool) -> torch.Tensor:
        kwargs: dict[str, Any] = {"input_ids": ids, "attention_mask": mask, "position_ids": positions(mask), "use_cache": False}
        if self._keep_arg and keep < ids.shape[1]:
            kwargs[self._keep_arg] = keep
        if reference and self._is_peft():
            with self.model.disable_adapter():
                logits = self.model(**kwargs).logits
        else:
            logits = self.model(**kwargs).logits
        return logits[:, -keep:]

    def _gen_start(self, prompt_ids: list[int]) -> tuple[torch.Tensor, Any]:
        x = torch.tensor([prompt_ids], dtype=torch.long, device=self.device)
        kwargs: dict[str, Any] = {self._keep_arg: 1} if self._keep_arg else {}
        out = self.model(input_ids=x, use_cache=True, **kwargs)
        return out.logits[0, -1], out.past_key_values

    def _gen_next(self, past: Any, token: int) -> tuple[torch.Tensor, Any]:
        x = torch.tensor([[token]], dtype=torch.long, device=self.device)
        out = self.model(input_ids=x, past_key_values=past, use_cache=True)
        return out.logits[0, -1], out.past_key_values

    def save_adapter(self, directory: Path | str) -> None:
        """The LoRA adapter (adapter_config.json, adapter_model.safetensors), as
        `PeftModel.from_pretrained` and `vllm serve --lora-modules` read it."""
        if self.merged:
            raise RuntimeError("the adapter was merged into the model (merge_and_save); there is no adapter to save any more")
        Path(directory).mkdir(parents=True, exist_ok=True)
        with self.lock:
            self.model.save_pretrained(str(directory))
        self.carry_base(directory)

    def carry_base(self, directory: Path | str) -> None:
        """A model built from a config goes with every adapter trained on it (`<adapter>/base`),
        checkpoints written by another trainer (TRL's) included, so each loads on its own."""
        if self.built_dir is not None and Path(directory, BASE_DIR).resolve() != self.built_dir.resolve():
            shutil.copytree(self.built_dir, Path(directory, BASE_DIR), dirs_exist_ok=True)

    def load_adapter(self, directory: Path | str, version: str) -> None:
        """Serve another version: its weights are copied into the current adapter, which
        must have the same LoRA shape (every version a job produces has)."""
        from peft import PeftConfig
        from peft.utils.save_and_load import load_peft_weights, set_peft_model_state_dict

        directory = Path(directory)
        if not (directory / "adapter_config.json").is_file():
            raise SpecError(f"{directory}: not a peft adapter (no adapter_config.json)")
        incoming = PeftConfig.from_pretrained(str(directory))
        current = self.model.peft_config["default"]

        def shape(c: Any) -> tuple[Any, Any, Any]:
            mods = c.target_modules
            return getattr(c, "r", None), getattr(c, "lora_alpha", None), mods if isinstance(mods, str) else sorted(mods or [])

        if shape(incoming) != shape(current):
            raise SpecError(f"{directory}: the adapter's LoRA shape (r, alpha, target modules) {shape(incoming)} differs from the served one {shape(current)}")
        weights = load_peft_weights(str(directory), device=str(self.device))
        with self.lock:
            result = set_peft_model_state_dict(self.model, weights, adapter_name="default")
            unexpected = [k for k in getattr(result, "unexpected_keys", []) or [] if "lora_" in k]
            if unexpected:
                raise SpecError(f"{directory}: the adapter has weights this model lacks ({', '.join(unexpected[:3])}...)")
            self.version = version
            self._drop_optimizer()

    def merge_and_save(self, directory: Path | str) -> None:
        """The base model with the adapter folded in, as a standalone checkpoint. A 4-bit
        base is reloaded in full precision for this (merging into 4-bit weights would round
        the update away); otherwise the merge happens in place, so call this last."""
        from peft import PeftModel
        from transformers import AutoModelForCausalLM

        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        with self.lock:
            if self.quantized:
                with tempfile.TemporaryDirectory() as tmp:
                    self.model.save_pretrained(tmp)
                    dtype = self.dtype if self.dtype != torch.float32 else torch.bfloat16
                    base = AutoModelForCausalLM.from_pretrained(self._base_path, **{dtype_kwarg(): dtype})
                    merged = PeftModel.from_pretrained(base, tmp).merge_and_unload()
            else:
                merged = self.model.merge_and_unload()
                self.model = merged
                self.merged = True
            merged.save_pretrained(str(directory))
        self.tokenizer.tok.save_pretrained(str(directory))


def _base_path(spec: JobSpec) -> str:
    """model.base: a directory in the bundle where there is one, else a hub id or an absolute path."""
    base = spec.model.base
    if not base.startswith("/") and ".." not in base.replace("\\", "/").split("/"):
        local = spec.bundle_dir / base
        if local.is_dir():
            return str(local)
    return base
