"""Hyper-parameters of each job kind: the reference defaults (defaults.json, which Rollout Lab
reads too), type checks, and unknown names rejected so a typo never trains with a default."""

import json
from pathlib import Path
from typing import Any, Dict

from .errors import SpecError

DEFAULTS_FILE = Path(__file__).with_name("defaults.json")


def reference_defaults(kind: str) -> Dict[str, Any]:
    table = json.loads(DEFAULTS_FILE.read_text(encoding="utf-8"))
    if kind == "serve":
        return {**table["grpo"], **table["serve"]}
    if kind not in table:
        raise SpecError(f"unknown job kind {kind!r} — one of sft, grpo, serve")
    return dict(table[kind])


def _coerce(name: str, ref: Any, value: Any) -> Any:
    if isinstance(ref, list):
        if isinstance(value, str):
            return [v.strip() for v in value.split(",") if v.strip()]
        if isinstance(value, list) and all(isinstance(v, str) for v in value):
            return value
    elif isinstance(ref, bool):
        if isinstance(value, bool):
            return value
    elif isinstance(ref, int):
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        if isinstance(value, float) and value.is_integer():
            return int(value)
    elif isinstance(ref, float):
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
    elif isinstance(ref, str):
        if isinstance(value, str):
            return value
    kind = "a list of names" if isinstance(ref, list) else type(ref).__name__
    raise SpecError(f"hyperparameters.{name}: {value!r} is not {kind} (e.g. {ref!r})")


def resolve_hparams(kind: str, given: Dict[str, Any]) -> Dict[str, Any]:
    defaults = reference_defaults(kind)
    unknown = sorted(set(given) - set(defaults))
    if unknown:
        raise SpecError(f"hyperparameters: unknown {kind} setting(s) {', '.join(unknown)} — known: {', '.join(defaults)}")
    out = dict(defaults)
    for name, value in given.items():
        out[name] = _coerce(name, defaults[name], value)
    if kind == "grpo" and out["loss_agg"] not in ("seq-mean-token-mean", "token-mean"):
        raise SpecError("hyperparameters.loss_agg: must be seq-mean-token-mean or token-mean")
    if kind == "serve" and out["engine"] not in ("auto", "transformers", "vllm"):
        raise SpecError("hyperparameters.engine: must be auto, transformers or vllm")
    if kind in ("sft", "grpo") and out["max_steps"] <= 0 and out["epochs"] <= 0:
        raise SpecError("hyperparameters: max_steps and epochs are both 0 — nothing would be trained; set max_steps (or max_steps -1 and epochs >= 1)")
    for name in ("learning_rate", "batch_size", "grad_accum"):
        if name in out and out[name] <= 0:
            raise SpecError(f"hyperparameters.{name}: must be positive, got {out[name]}")
    return out
