import json

from conftest import GOLDEN
from rollout_trainer.backends.tiny import ByteChatTokenizer
from rollout_trainer.chat import IGNORE, assistant_labels, prompt_and_completion_ids


def records(name):
    return [json.loads(l) for l in (GOLDEN / name).read_text().splitlines() if l.strip()]


def test_only_assistant_bodies_and_their_end_of_turn_are_learnt():
    tok = ByteChatTokenizer()
    for rec in records("sft.jsonl"):
        ids, labels = assistant_labels(tok, rec["messages"], rec["tools"])
        assert len(ids) == len(labels)
        assert ids == tok.encode(tok.render(rec["messages"], rec["tools"] or None))
        learnt = tok.decode([i for i, l in zip(ids, labels) if l != IGNORE])
        expected = ""
        for m in rec["messages"]:
            if m["role"] == "assistant":
                part = tok.render([m])[len("<|im_start|>assistant\n"):]
                expected += part.replace("<|im_end|>", "")
        assert learnt == expected
        # The header of an assistant turn is never learnt.
        assert "<|im_start|>assistant" not in tok.decode([i for i, l in zip(ids, labels) if l != IGNORE])


def test_a_tool_call_turn_is_learnt_with_its_call():
    tok = ByteChatTokenizer()
    rec = next(r for r in records("sft.jsonl") if any(m["role"] == "tool" for m in r["messages"]))
    ids, labels = assistant_labels(tok, rec["messages"], rec["tools"])
    learnt = tok.decode([i for i, l in zip(ids, labels) if l != IGNORE])
    assert "<tool_call>" in learnt and '"name": "pubmed_search"' in learnt
    tool_result = next(m["content"] for m in rec["messages"] if m["role"] == "tool")
    assert tool_result not in learnt


def test_grpo_completion_ids_follow_the_prompt_or_are_the_sampled_ones():
    tok = ByteChatTokenizer()
    rec = records("rl-equal.jsonl")[1]
    prompt, completion, sampled = prompt_and_completion_ids(tok, rec)
    assert not sampled
    assert tok.decode(prompt + completion) == tok.decode(tok.encode(tok.render(rec["messages"] + [{"role": "assistant", "content": rec["completion"]["text"]}], rec["tools"])))
    ids = tok.encode("hi")
    prompt2, completion2, sampled2 = prompt_and_completion_ids(tok, {**rec, "token_ids": ids})
    assert sampled2 and completion2 == ids and prompt2 == prompt
    # Ids outside the vocabulary (another model's) are not trusted.
    _, completion3, sampled3 = prompt_and_completion_ids(tok, {**rec, "token_ids": [10**6]})
    assert not sampled3 and completion3 == completion
