"""Conversations as token ids for training: the chat template renders them, and only the
assistant turns are learnt (SFT), or only the completion is scored (GRPO).

Rendering prefixes finds each turn's tokens: for a sane template, render(msgs[:k]) is a
prefix of render(msgs[:k+1]), so each message's text is the difference; an assistant
message splits into its header (render(msgs[:k], add_generation_prompt=True) minus
render(msgs[:k]), not learnt) and its body with the end-of-turn marker (learnt).
Templates that rewrite earlier turns (some drop old reasoning) break the prefix property;
then the whole conversation is tokenised once and the token-level common prefix decides."""

from typing import Any, Dict, List, Optional, Sequence, Tuple

IGNORE = -100


def _common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n


def assistant_labels(tok: Any, messages: List[Dict[str, Any]], tools: Optional[list]) -> Tuple[List[int], List[int]]:
    """(input_ids, labels) with labels = IGNORE everywhere but the assistant turns."""
    tools = tools or None
    ids: List[int] = []
    labels: List[int] = []
    prev_text = ""
    for k, msg in enumerate(messages):
        if msg["role"] == "assistant":
            header_text = tok.render(messages[:k], tools, add_generation_prompt=True)
            if header_text.startswith(prev_text):
                head = tok.encode(header_text[len(prev_text):])
                ids += head
                labels += [IGNORE] * len(head)
                prev_text = header_text
        text = tok.render(messages[: k + 1], tools, add_generation_prompt=False)
        if not text.startswith(prev_text):
            return _labels_by_tokens(tok, messages, tools)
        piece = tok.encode(text[len(prev_text):])
        ids += piece
        labels += piece if msg["role"] == "assistant" else [IGNORE] * len(piece)
        prev_text = text
    return ids, labels


def _labels_by_tokens(tok: Any, messages: List[Dict[str, Any]], tools: Optional[list]) -> Tuple[List[int], List[int]]:
    full = tok.encode(tok.render(messages, tools, add_generation_prompt=False))
    labels = [IGNORE] * len(full)
    for k, msg in enumerate(messages):
        if msg["role"] != "assistant":
            continue
        before = tok.encode(tok.render(messages[:k], tools, add_generation_prompt=True))
        upto = tok.encode(tok.render(messages[: k + 1], tools, add_generation_prompt=False))
        start = _common_prefix(before, full)
        end = _common_prefix(upto, full)
        for i in range(start, max(start, end)):
            labels[i] = full[i]
    return full, labels


def completion_message(rec: Dict[str, Any]) -> Dict[str, Any]:
    comp = rec["completion"]
    msg: Dict[str, Any] = {"role": "assistant", "content": comp.get("text") or ""}
    if comp.get("tool_calls"):
        msg["tool_calls"] = comp["tool_calls"]
    return msg


def prompt_and_completion_ids(tok: Any, rec: Dict[str, Any]) -> Tuple[List[int], List[int], bool]:
    """(prompt ids, completion ids, whether the completion ids are the sampled ones from the record)."""
    tools = rec.get("tools") or None
    prompt_text = tok.render(rec["messages"], tools, add_generation_prompt=True)
    prompt = tok.encode(prompt_text)
    sampled = rec.get("token_ids")
    if sampled and all(isinstance(t, int) and 0 <= t < tok.vocab_size for t in sampled):
        return prompt, list(sampled), True
    full_text = tok.render(rec["messages"] + [completion_message(rec)], tools, add_generation_prompt=False)
    if full_text.startswith(prompt_text):
        return prompt, tok.encode(full_text[len(prompt_text):]), False
    full = tok.encode(full_text)
    return prompt, full[_common_prefix(prompt, full):], False
