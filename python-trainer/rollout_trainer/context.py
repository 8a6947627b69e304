"""What a training job says about the sequences it leaves out as too long.

A job never truncates: what does not fit its length settings or the model's context is
left out, counted, and the message names the settings that would keep it: the job's
length limits and, for a model this job builds from a config, the config's context (a
model loaded from a checkpoint, or carried by the adapter a job continues from, has the
context its weights were trained with)."""

from collections.abc import Sequence

from .policy import Policy

# (hyper-parameter name, its value): the job's own length limits.
Caps = Sequence[tuple[str, int]]


def too_long_advice(policy: Policy, caps: Caps, longest: int, name_all: bool = False) -> str:
    """What to change to keep sequences of `longest` tokens: the settings that stop them
    (every one with name_all, for a job left with nothing to train on)."""
    settings = [f"hyperparameters.{name} (now {value})" for name, value in caps if name_all or value < longest]
    limit, setting = policy.max_positions(), policy.context_setting()
    tail = ""
    if limit is not None and setting is not None and (name_all or limit < longest):
        settings.append(f"{setting} (now {limit})")
    elif limit is not None and limit < longest:
        tail = f" (the model takes at most {limit} tokens)"
    return ("raise " + " or ".join(settings) + tail + ", or export shorter ones") if settings else f"export shorter ones{tail}"
