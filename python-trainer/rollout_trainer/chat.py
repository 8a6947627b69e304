"""Conversations as token ids for training: the chat template renders them, only the
assistant turns are learnt (SFT), and only the completion is scored (GRPO).

A tokenizer here is anything with `render(messages, tools, add_generation_prompt) -> str`,
`encode(text) -> list[int]` and `eos_token_id` (HfTokenizer, the tests' stand-ins); optionally
`end_of_turn_ids` (the tokens that close a turn) and `encode_with_offsets(text)`.

How the assistant tokens are found: for a sane template, a conversation's rendering
starts with the rendering of each of its prefixes, so each assistant message k owns the
text between
render(msgs[:k], add_generation_prompt=True) (which ends with its generation header, not
learnt) and render(msgs[:k+1]) (which ends with its end-of-turn marker, learnt; whatever
the template writes after that marker, such as a newline, is not). With character offsets
the whole conversation is tokenised once, exactly as the server will tokenise a prompt;
without them each piece is encoded on its own.

Templates that rewrite earlier turns (some drop old reasoning, some move the system
prompt) break the prefix property. Then the conversation is tokenised once and each
assistant turn is the token range that its own prefixes share with the whole: an
approximation, but never one that learns a user or tool message."""

from collections.abc import Sequence
from typing import Any

from .tokenizer import ChatTokenizer, EncodesWithOffsets, Tool

IGNORE = -100

Messages = list[dict[str, Any]]


def common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    """Length of the longest common prefix of two id sequences."""
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n


def end_of_turn_ids(tok: ChatTokenizer) -> set[int]:
    ids: set[int] = set(getattr(tok, "end_of_turn_ids", None) or ())
    if getattr(tok, "eos_token_id", None) is not None:
        ids.add(int(tok.eos_token_id))
    return ids


def through_end_of_turn(ids: Sequence[int], eot: set[int]) -> int:
    """How many of `ids` to keep so they end with the last end-of-turn token (all of
    them when there is none: such a template closes turns with ordinary text)."""
    for i in range(len(ids) - 1, -1, -1):
        if ids[i] in eot:
            return i + 1
    return len(ids)


def _render(tok: ChatTokenizer, messages: Messages, tools: list[Tool] | None, gen: bool) -> str | None:
    """render, or None where the template refuses (e.g. an empty conversation)."""
    try:
        return tok.render(messages, tools or None, add_generation_prompt=gen)
    except Exception:  # noqa: BLE001 — a template's own error only means "no such prefix"
        return None


def _generation_prompt(tok: ChatTokenizer, before: Messages, tools: list[Tool] | None) -> str | None:
    """The conversation before an assistant turn plus its generation header. A template
    may refuse an empty conversation (an assistant turn first): then the header is
    part of the turn's span, which costs nothing for a turn nobody writes."""
    head = _render(tok, before, tools, True)
    return "" if head is None and not before else head


def assistant_spans(tok: ChatTokenizer, messages: Messages, tools: list[Tool] | None) -> tuple[str, list[tuple[int, int]]] | None:
    """(rendered conversation, character spans of the assistant turns' bodies), or None
    when the template is not prefix-stable around some assistant turn.

    Only the assistant turns' own prefixes must be prefixes of the whole: templates
    that regroup other messages (Qwen's merges consecutive tool results into one turn)
    still get exact spans."""
    full = tok.render(messages, tools or None, add_generation_prompt=False)
    spans: list[tuple[int, int]] = []
    end = 0
    for k, msg in enumerate(messages):
        if msg["role"] != "assistant":
            continue
        head = _generation_prompt(tok, messages[:k], tools)
        upto = full if k == len(messages) - 1 else _render(tok, messages[: k + 1], tools, False)
        if head is None or upto is None or not full.startswith(upto) or not upto.startswith(head) or len(head) < end:
            return None
        spans.append((len(head), len(upto)))
        end = len(upto)
    return full, spans


def _labels_from_offsets(tok: EncodesWithOffsets, text: str, spans: list[tuple[int, int]], eot: set[int]) -> tuple[list[int], list[int]]:
    ids, offsets = tok.encode_with_offsets(text)
    labels = [IGNORE] * len(ids)
    i = 0
    for start, end in spans:
        while i < len(ids) and offsets[i][1] <= start:
            i += 1
        first = i
        while i < len(ids) and offsets[i][0] < end:
            i += 1
        keep = through_end_of_turn(ids[first:i], eot)
        for j in range(first, first + keep):
            labels[j] = ids[j]
    return list(ids), labels


def _labels_from_pieces(tok: ChatTokenizer, text: str, spans: list[tuple[int, int]], eot: set[int]) -> tuple[list[int], list[int]]:
    ids: list[int] = []
    labels: list[int] = []
    pos = 0
    for start, end in spans:
        if start > pos:
            piece = tok.encode(text[pos:start])
            ids += piece
            labels += [IGNORE] * len(piece)
        body = tok.encode(text[start:end])
        keep = through_end_of_turn(body, eot)
        ids += body
        labels += body[:keep] + [IGNORE] * (len(body) - keep)
        pos = end
    if pos < len(text):
        piece = tok.encode(text[pos:])
        ids += piece
        labels += [IGNORE] * len(piece)
    return ids, labels


def _labels_by_tokens(tok: ChatTokenizer, messages: Messages, tools: list[Tool] | None, eot: set[int]) -> tuple[list[int], list[int]]:
    full = tok.encode(tok.render(messages, tools or None, add_generation_prompt=False))
    labels = [IGNORE] * len(full)
    for k, msg in enumerate(messages):
        if msg["role"] != "assistant":
            continue
        head_text = _generation_prompt(tok, messages[:k], tools)
        upto_text = _render(tok, messages[: k + 1], tools, False)
        if head_text is None or upto_text is None:
            continue
        start = common_prefix(tok.encode(head_text), full)
        end = common_prefix(tok.encode(upto_text), full)
        if end <= start:
            continue
        end = start + through_end_of_turn(full[start:end], eot)
        for i in range(start, end):
            labels[i] = full[i]
    return full, labels


def assistant_labels(tok: ChatTokenizer, messages: Messages, tools: list[Tool] | None = None) -> tuple[list[int], list[int]]:
    """(input_ids, labels) of a conversation: labels are the ids on the assistant turns'
    bodies and their end-of-turn tokens, IGNORE (-100) everywhere else."""
    eot = end_of_turn_ids(tok)
    found = assistant_spans(tok, messages, tools)
    if found is None:
        return _labels_by_tokens(tok, messages, tools, eot)
    text, spans = found
    if isinstance(tok, EncodesWithOffsets):
        return _labels_from_offsets(tok, text, spans, eot)
    return _labels_from_pieces(tok, text, spans, eot)


def completion_message(completion: dict[str, Any]) -> dict[str, Any]:
    """An RL record's completion ({text, tool_calls}) as the assistant message it was."""
    msg: dict[str, Any] = {"role": "assistant", "content": completion.get("text") or ""}
    if completion.get("tool_calls"):
        msg["tool_calls"] = completion["tool_calls"]
    return msg


def prompt_and_completion_ids(tok: ChatTokenizer, messages: Messages, tools: list[Tool] | None, completion: dict[str, Any]) -> tuple[list[int], list[int]]:
    """(prompt ids, completion ids) for scoring a completion: the prompt is the
    conversation with the generation header (what the server fed the model), the
    completion is the rest of the rendered conversation up to and including the
    end-of-turn token (what the model wrote, and the token that stopped it).

    `completion` is an assistant message ({role, content, tool_calls}) or an RL record's
    completion ({text, tool_calls})."""
    msg = completion if completion.get("role") == "assistant" else completion_message(completion)
    prompt_text = tok.render(messages, tools or None, add_generation_prompt=True)
    full_text = tok.render(list(messages) + [msg], tools or None, add_generation_prompt=False)
    prompt = tok.encode(prompt_text)
    if full_text.startswith(prompt_text):
        rest = tok.encode(full_text[len(prompt_text):])
    else:
        full = tok.encode(full_text)
        rest = full[common_prefix(prompt, full):]
    return prompt, rest[: through_end_of_turn(rest, end_of_turn_ids(tok))]
