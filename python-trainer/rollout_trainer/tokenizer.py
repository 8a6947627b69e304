"""What the trainer needs of a tokenizer, as protocols: HfTokenizer (around a Hugging Face
tokenizer) offers them, and the tests' stand-ins offer the parts they exercise. Pure
Python: chat.py needs no torch."""

from typing import Any, Protocol, runtime_checkable

Message = dict[str, Any]
Tool = dict[str, Any]


class ChatTokenizer(Protocol):
    """Enough to turn a conversation into token ids (chat.py); `end_of_turn_ids` is read
    where a tokenizer has it."""

    eos_token_id: int

    def render(self, messages: list[Message], tools: list[Tool] | None = None, add_generation_prompt: bool = False) -> str: ...

    def encode(self, text: str) -> list[int]: ...


class Tokenizer(ChatTokenizer, Protocol):
    """A policy's tokenizer: ids back to text, padding, and the tokens that end a turn."""

    pad_token_id: int
    end_of_turn_ids: set[int]
    vocab_size: int

    def decode(self, ids: list[int]) -> str: ...

    def token_text(self, i: int) -> str: ...


@runtime_checkable
class EncodesWithOffsets(Protocol):
    """A tokenizer that says which characters each id came from (a fast Hugging Face one)."""

    def encode_with_offsets(self, text: str) -> tuple[list[int], list[tuple[int, int]]]: ...
