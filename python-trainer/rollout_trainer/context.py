"""How long a sequence a training job keeps, and what it says about the ones it leaves out.

A tiny model built from its config has no trained position embeddings to lose, so a job
grows its context to the longest example its length settings let in, instead of dropping
every example longer than a default `max_positions` (a lab's first SFT used to fail with
"none of the 111 examples fits"). A model whose context is fixed (a tiny model that
continues from an adapter, a transformers model) leaves out what does not fit, counted,
and the message names the settings that would keep it."""

from collections.abc import Sequence

from .events import Emitter
from .policy import Policy

# (hyper-parameter name, its value): the job's own length limits.
Caps = Sequence[tuple[str, int]]


def fit_context(policy: Policy, longest: int, emitter: Emitter) -> None:
    """Grows a from-scratch model's context to hold `longest` tokens, and says so in the log."""
    before = policy.max_positions()
    if longest > 0 and policy.grow_context(longest):
        emitter.log(f"note: {policy.context_setting()} {before} -> {policy.max_positions()} to fit the longest example "
                    f"({longest} tokens): the model is built from scratch, so a longer context costs nothing")


def too_long_advice(policy: Policy, caps: Caps, longest: int, name_all: bool = False) -> str:
    """What to change to keep sequences of `longest` tokens: the settings that stop them
    (every one with name_all, for a job left with nothing to train on)."""
    settings = [f"hyperparameters.{name} (now {value})" for name, value in caps if name_all or value < longest]
    limit, setting = policy.max_positions(), policy.context_setting()
    tail = ""
    if limit is not None and setting is not None and (name_all or limit < longest):
        if policy.from_scratch:
            settings.append(f"{setting} (now {limit}; a model built from scratch grows it to fit what the other settings let in)")
        else:
            settings.append(f"{setting} (now {limit}, fixed by the adapter this job continues from: a larger one means a new model)")
    elif limit is not None and limit < longest:
        tail = f" (the model takes at most {limit} tokens)"
    return ("raise " + " or ".join(settings) + tail + ", or export shorter ones") if settings else f"export shorter ones{tail}"
