"""A transformers model built from a config, with a tokenizer trained here: nothing is
downloaded. `model.config` names the architecture (`model_type` qwen2, llama, ...); when
`model.base` is not a folder with a tokenizer, a byte-level BPE is trained with
`tokenizers` on the job's own text (its training data; the chat template's words alone for
a job without data), with the ChatML turn tokens and the Hermes tool-call tokens, and saved
with a ChatML chat template that lists tools and writes calls as
`<tool_call>{"name": .., "arguments": {..}}</tool_call>` (what serving/toolcalls.py parses).

The config's `vocab_size` is the BPE's target size; the model gets the tokenizer's real
size. The model built this way, with its tokenizer, is saved beside every adapter trained
on it (`<adapter>/base/`), so a later phase, a server, `PeftModel.from_pretrained` or
`vllm serve --model <adapter>/base --lora-modules name=<adapter>` load exactly the
weights the adapter was trained on."""

import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from ..data import tool_call_json

# Turn tokens (special: they never appear in decoded text) and the tool-call markers (ordinary
# added tokens: a decoded completion keeps them, so its tool calls can be parsed back).
SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
TOOL_TOKENS = ["<tool_call>", "</tool_call>"]
DEFAULT_VOCAB = 1024
# The folder beside an adapter that holds the model it was trained on, when that model was built from a config.
BASE_DIR = "base"

CHATML_WITH_TOOLS = (
    "{%- if tools %}"
    "{{- '<|im_start|>system\\n' }}{%- if messages and messages[0].role == 'system' %}{{- messages[0].content + '\\n\\n' }}{%- endif %}"
    "{{- '# Tools\\n<tools>\\n' }}{%- for t in tools %}{{- (t | tojson) + '\\n' }}{%- endfor %}{{- '</tools><|im_end|>\\n' }}"
    "{%- elif messages and messages[0].role == 'system' %}{{- '<|im_start|>system\\n' + messages[0].content + '<|im_end|>\\n' }}"
    "{%- endif %}"
    "{%- for m in messages %}"
    "{%- if m.role == 'system' and loop.first %}"
    "{%- elif m.role == 'assistant' %}{{- '<|im_start|>assistant\\n' + (m.content or '') }}"
    "{%- for tc in (m.tool_calls or []) %}"
    "{{- '<tool_call>{\"name\": \"' + tc.function.name + '\", \"arguments\": ' + (tc.function.arguments | tojson) + '}</tool_call>' }}"
    "{%- endfor %}{{- '<|im_end|>\\n' }}"
    "{%- else %}{{- '<|im_start|>' + m.role + '\\n' + (m.content or '') + '<|im_end|>\\n' }}"
    "{%- endif %}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"
)
# What every rendered conversation contains besides its messages.
TEMPLATE_WORDS = ["system\n", "user\n", "assistant\n", "tool\n", "# Tools\n<tools>\n", "</tools>", '{"name": "', '", "arguments": ', "}"]


def _message_texts(messages: Iterable[dict[str, Any]]) -> Iterator[str]:
    for m in messages:
        if isinstance(m.get("content"), str):
            yield m["content"]
        yield from (tool_call_json(call) for call in m.get("tool_calls") or [])


def corpus_of(records: Iterable[dict[str, Any]]) -> Iterator[str]:
    """The text of exported records (SFT conversations, RL calls): messages, tool calls,
    completions and tool definitions, then the template's own words."""
    for r in records:
        yield from _message_texts(r.get("messages") or [])
        completion = r.get("completion")
        if isinstance(completion, dict):
            yield from _message_texts([{"content": completion.get("text", completion.get("content")), "tool_calls": completion.get("tool_calls")}])
        elif isinstance(completion, str):
            yield completion
        for t in r.get("tools") or []:
            yield json.dumps(t, ensure_ascii=False)
    yield from TEMPLATE_WORDS


def train_tokenizer(texts: Iterable[str], vocab_size: int, directory: Path | str | None = None) -> Any:
    """A transformers fast tokenizer: byte-level BPE trained on `texts`, with the ChatML
    template; saved to `directory` where given. Deterministic for the same texts."""
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tk = Tokenizer(models.BPE())
    tk.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tk.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=max(vocab_size, 256 + len(SPECIALS) + len(TOOL_TOKENS)), special_tokens=SPECIALS,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tk.train_from_iterator(list(texts), trainer)
    tk.add_tokens([AddedToken(t, special=False, normalized=False) for t in TOOL_TOKENS])
    tok = PreTrainedTokenizerFast(tokenizer_object=tk, eos_token="<|im_end|>", pad_token="<|endoftext|>")
    tok.chat_template = CHATML_WITH_TOOLS
    if directory is not None:
        tok.save_pretrained(str(directory))
    return tok


def has_tokenizer(directory: Path) -> bool:
    return directory.is_dir() and (directory / "tokenizer_config.json").is_file()


def embedding_modules(model: Any) -> list[str]:
    """The names of the model's input embeddings and output head (one name when they are tied):
    what a model built from a config trains in full (peft's modules_to_save)."""
    wanted = [m for m in (model.get_input_embeddings(), model.get_output_embeddings()) if m is not None]
    return sorted({name.rsplit(".", 1)[-1] for name, module in model.named_modules() if any(module is w for w in wanted)})


def build_model(config: dict[str, Any], vocab_size: int, seed: int) -> Any:
    """The causal LM of `config` (with model_type) and `vocab_size`, initialised from `seed`."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    from ..errors import SpecError

    cfg = dict(config)
    model_type = cfg.pop("model_type", None)
    if not model_type:
        raise SpecError("model.config: a transformers config needs model_type (e.g. qwen2, llama)")
    cfg["vocab_size"] = vocab_size
    try:
        built = AutoConfig.for_model(model_type, **cfg)
    except (ValueError, KeyError, TypeError) as exc:
        raise SpecError(f"model.config: {exc}") from None
    torch.manual_seed(seed)
    return AutoModelForCausalLM.from_config(built)
