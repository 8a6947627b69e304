"""Completions from the in-process policy (transformers + peft, when vLLM is not used). Every use of the model holds policy.lock, so a request never samples
from weights a /control/train is halfway through changing; requests wait instead."""

import threading
from collections.abc import Sequence
from typing import Any

from ..chat import end_of_turn_ids
from ..policy import Policy, Sampled
from ..tokenizer import Tokenizer
from .protocol import ApiError, ChatRequest, Generation, TokenLogprob
from .toolcalls import parse_tool_calls


def context_limit(policy: Policy) -> int | None:
    limit = policy.max_positions() if hasattr(policy, "max_positions") else None
    return int(limit) if limit else None


def single_token_stops(tok: Tokenizer, stops: Sequence[str]) -> set[int]:
    """Stop strings that are one token stop the sampler itself; longer ones are cut after."""
    out = set()
    for s in stops:
        ids = tok.encode(s)
        if len(ids) == 1:
            out.add(ids[0])
    return out


def cut_at_stop(tok: Tokenizer, ids: list[int], stops: Sequence[str]) -> tuple[list[int], str, bool]:
    """(ids up to and including the token that completes the first stop string, the text
    before that stop string, whether one occurred). Token ids keep the stop string's tokens,
    as vLLM's do, so the ids stay the ones actually sampled."""
    text = tok.decode(ids)
    hits = [text.find(s) for s in stops if s in text]
    if not hits:
        return ids, text, False
    lo, hi = 1, len(ids)
    while lo < hi:  # the shortest prefix whose text contains a stop string
        mid = (lo + hi) // 2
        if any(s in tok.decode(ids[:mid]) for s in stops):
            hi = mid
        else:
            lo = mid + 1
    return ids[:lo], text[: min(hits)], True


def token_bytes(text: str) -> list[int]:
    """A token's bytes: its text's UTF-8."""
    return list(text.encode("utf-8"))


class LocalGenerator:
    def __init__(self, policy: Policy, default_max_tokens: int) -> None:
        self.policy = policy
        self.default_max_tokens = int(default_max_tokens)
        self._next_call_id = 0
        self._ids_lock = threading.Lock()

    def _prompt(self, req: ChatRequest) -> list[int]:
        tok = self.policy.tokenizer
        try:
            text = tok.render(req.messages, req.tools, add_generation_prompt=True)
        except Exception as exc:  # noqa: BLE001 — a template that refuses these messages is the client's 400
            raise ApiError(400, f"messages: the model's chat template cannot render them: {exc}", "invalid_value", "messages") from None
        return tok.encode(text)

    def _budget(self, prompt_len: int, req: ChatRequest) -> int:
        wanted = req.max_tokens or self.default_max_tokens
        limit = context_limit(self.policy)
        if limit is None:
            return wanted
        if prompt_len >= limit:
            raise ApiError(400, f"messages: the prompt is {prompt_len} tokens, and this model's context is {limit}; shorten the conversation", "context_length_exceeded", "messages")
        return min(wanted, limit - prompt_len)

    def _take_call_ids(self, count: int) -> int:
        """The first of `count` call ids, unique over the server's life: clients match tool
        results to calls by id across a whole conversation."""
        with self._ids_lock:
            first = self._next_call_id
            self._next_call_id += count
        return first

    def generate(self, req: ChatRequest) -> Generation:
        tok = self.policy.tokenizer
        with self.policy.lock:
            prompt = self._prompt(req)
            budget = self._budget(len(prompt), req)
            stop_ids = single_token_stops(tok, req.stop)
            sampled = self.policy.generate(prompt, budget, req.temperature, req.top_p, req.seed, stop_ids=stop_ids or None, top_logprobs=req.top_logprobs)
        return self.finish(req, prompt, sampled, stop_ids)

    def finish(self, req: ChatRequest, prompt: list[int], sampled: Sampled, stop_ids: set[int]) -> Generation:
        """Content, tool calls and finish reason of sampled ids. The ids, logprobs and
        alternatives reported are the sampled ones up to where the completion stopped (the
        stop token or string included); only the text leaves the stop token or string out."""
        tok = self.policy.tokenizer
        ids, logprobs, top = list(sampled.ids), list(sampled.logprobs), list(sampled.top)
        stopped = bool(ids) and (ids[-1] in end_of_turn_ids(tok) or ids[-1] in stop_ids)
        body = ids[:-1] if stopped else ids
        text = tok.decode(body)
        if req.stop:
            kept, before_stop, hit = cut_at_stop(tok, body, req.stop)
            if hit:
                ids, logprobs, top, text, stopped = kept, logprobs[: len(kept)], top[: len(kept)], before_stop, True
        finish = "stop" if stopped else "length"
        content: str | None = text
        calls: list[dict[str, Any]] = []
        if req.tools and req.parse_tools:
            content, calls = parse_tool_calls(text)
            if calls:
                first = self._take_call_ids(len(calls))
                for n, call in enumerate(calls):
                    call["id"] = f"call_{first + n}"
                finish = "tool_calls"
        tokens = [tok.token_text(i) for i in ids]
        return Generation(prompt_ids=prompt, ids=ids, logprobs=logprobs, tokens=tokens, token_bytes=[token_bytes(t) for t in tokens],
                          content=content, tool_calls=calls, finish_reason=finish, top=[[self._alternative(i, lp) for i, lp in alts] for alts in top])

    def _alternative(self, i: int, logprob: float) -> TokenLogprob:
        text = self.policy.tokenizer.token_text(i)
        return TokenLogprob(id=int(i), token=text, logprob=float(logprob), bytes=token_bytes(text))
