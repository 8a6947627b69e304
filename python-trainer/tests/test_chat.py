"""Assistant-only labels and GRPO's prompt/completion split, on the tokenizer a model built
from a config gets (a byte-level BPE trained by hf_build, its ChatML template, behind
HfTokenizer) and on templates that are not prefix-stable."""

import json

import pytest
from conftest import GOLDEN, golden

from rollout_trainer.backends.hf import HfTokenizer
from rollout_trainer.backends.hf_build import corpus_of, train_tokenizer
from rollout_trainer.chat import IGNORE, assistant_labels, assistant_spans, prompt_and_completion_ids

HEADER = "<|im_start|>assistant\n"


@pytest.fixture(scope="module")
def tok():
    """HfTokenizer around a BPE trained on the golden exports (as a job on a built model trains one)."""
    records = [json.loads(line) for name in ("sft.jsonl", "rl-equal.jsonl") for line in (GOLDEN / name).read_text().splitlines() if line.strip()]
    return HfTokenizer(train_tokenizer(corpus_of(records), 600))


def learnt_text(tok, ids, labels):
    """The learnt tokens as text, one string per contiguous run."""
    runs, cur = [], []
    for i, label in zip(ids, labels):
        if label != IGNORE:
            assert label == i
            cur.append(i)
        elif cur:
            runs.append(cur)
            cur = []
    if cur:
        runs.append(cur)
    return [tok.tok.decode(run, skip_special_tokens=False) for run in runs]


def expected_bodies(tok, messages):
    return [tok.render([m])[len(HEADER):-1] for m in messages if m["role"] == "assistant"]  # body + <|im_end|>, no newline


def test_exactly_the_assistant_bodies_and_their_end_of_turn_are_learnt(tok):
    assert hasattr(tok, "encode_with_offsets"), "a fast tokenizer: the conversation is tokenised once"
    for rec in golden("sft.jsonl"):
        ids, labels = assistant_labels(tok, rec["messages"], rec["tools"])
        assert ids == tok.encode(tok.render(rec["messages"], rec["tools"])), "tokenised exactly as the server would"
        assert len(labels) == len(ids)
        runs = learnt_text(tok, ids, labels)
        assert runs == expected_bodies(tok, rec["messages"])
        assert all(r.endswith("<|im_end|>") and not r.startswith("<|im_start|>") for r in runs)


def test_tool_call_turns_are_learnt_with_their_calls_and_tool_results_are_not(tok):
    rec = next(r for r in golden("sft.jsonl") if any(m["role"] == "tool" for m in r["messages"]))
    ids, labels = assistant_labels(tok, rec["messages"], rec["tools"])
    runs = learnt_text(tok, ids, labels)
    assert len(runs) == 2, "both assistant turns"
    assert runs[0].startswith("<tool_call>{\"name\": \"pubmed_search\", \"arguments\": {") and runs[0].endswith("</tool_call><|im_end|>")
    tool_result = next(m["content"] for m in rec["messages"] if m["role"] == "tool")
    assert all(tool_result not in r for r in runs)
    assert all("# Tools" not in r for r in runs)


class NoOffsets:
    """The tokenizer without encode_with_offsets (as a slow one): pieces are encoded one by one."""

    def __init__(self, tok):
        self.tok = tok
        self.eos_token_id = self.tok.eos_token_id
        self.end_of_turn_ids = self.tok.end_of_turn_ids

    def render(self, *a, **k):
        return self.tok.render(*a, **k)

    def encode(self, text):
        return self.tok.encode(text)


class ForgetfulTemplate(NoOffsets):
    """A template that rewrites earlier turns (like those that drop old reasoning): an
    assistant message followed by more messages loses its text after the first word."""

    def render(self, messages, tools=None, add_generation_prompt=False):
        msgs = [dict(m) for m in messages]
        for m in msgs[:-1]:
            if m["role"] == "assistant" and m.get("content"):
                m["content"] = m["content"].split(" ")[0]
        return self.tok.render(msgs, tools, add_generation_prompt)


def test_without_offsets_the_pieces_give_the_same_labels(tok):
    # BPE merges can cross the point where a turn's body starts, so the pieces agree with the
    # whole on which tokens are learnt where the template's turn markers are tokens of their own.
    for rec in golden("sft.jsonl"):
        assert assistant_labels(NoOffsets(tok), rec["messages"], rec["tools"]) == assistant_labels(tok, rec["messages"], rec["tools"])


def test_a_template_that_rewrites_earlier_turns_falls_back_to_token_prefixes(tok):
    forgetful = ForgetfulTemplate(tok)
    messages = [{"role": "user", "content": "q1"}, {"role": "assistant", "content": "first answer here"},
                {"role": "user", "content": "q2"}, {"role": "assistant", "content": "second answer"}]
    assert assistant_spans(forgetful, messages, None) is None
    ids, labels = assistant_labels(forgetful, messages, None)
    assert ids == forgetful.encode(forgetful.render(messages))
    runs = learnt_text(tok, ids, labels)
    assert runs[-1] == "second answer<|im_end|>"
    joined = "".join(runs)
    assert "q1" not in joined and "q2" not in joined and "<|im_start|>" not in joined


def test_a_grpo_completion_is_what_follows_the_generation_prompt_through_its_end_of_turn(tok):
    rec = golden("rl-equal.jsonl")[0]  # a tool-call completion
    prompt, completion = prompt_and_completion_ids(tok, rec["messages"], rec["tools"], rec["completion"])
    assert prompt == tok.encode(tok.render(rec["messages"], rec["tools"], add_generation_prompt=True))
    assert completion[-1] == tok.eos_token_id
    text = tok.decode(completion)  # without the special <|im_end|>
    assert text == '<tool_call>{"name": "protein_lookup", "arguments": {"name": "GLP-1"}}</tool_call>'
    full = tok.encode(tok.render(rec["messages"] + [{"role": "assistant", "content": "", "tool_calls": rec["completion"]["tool_calls"]}], rec["tools"]))
    assert prompt + completion == full[:-1], "everything but the newline after <|im_end|>"
    same = prompt_and_completion_ids(tok, rec["messages"], rec["tools"], {"role": "assistant", "content": "", "tool_calls": rec["completion"]["tool_calls"]})
    assert same == (prompt, completion)


def test_the_transformers_tokenizer_wrapper_gives_templates_objects_and_text():
    """HfTokenizer around a trained tokenizer, its template call watched: tool-call arguments
    reach the template as objects (templates apply tojson to them; a JSON string would be
    encoded twice), content is never null, a missing pad token falls back to eos, and the
    turn tokens end a turn."""
    hf = train_tokenizer(["a few strings to learn from", '{"name": "x"}'], 0)
    hf.pad_token = None
    seen = []
    render = hf.apply_chat_template

    def watched(messages, **kwargs):
        seen.extend(messages)
        return render(messages, **kwargs)

    hf.apply_chat_template = watched
    tok = HfTokenizer(hf)
    vocab = hf.get_vocab()
    assert tok.pad_token_id == tok.eos_token_id == vocab["<|im_end|>"]
    assert tok.end_of_turn_ids == {vocab["<|im_end|>"], vocab["<|endoftext|>"]} and tok.vocab_size == len(hf)
    rec = next(r for r in golden("sft.jsonl") if any(m.get("tool_calls") for m in r["messages"]))
    messages = [*rec["messages"], {"role": "assistant", "content": None}]
    text = tok.render(messages, rec["tools"])
    assert "None" not in text.split("<|im_start|>assistant\n")[-1]
    calls = [c for m in seen for c in m.get("tool_calls") or []]
    assert calls and all(isinstance(c["function"]["arguments"], dict) for c in calls)
    assert all(isinstance(m["content"], str) for m in seen)
    arguments = json.dumps(calls[0]["function"]["arguments"], ensure_ascii=False)
    assert f'"arguments": {arguments}' in text, "the arguments written once, as an object"
