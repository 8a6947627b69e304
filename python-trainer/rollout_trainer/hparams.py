"""Hyper-parameters of each job kind: the reference defaults, type checks, and unknown
names rejected, so a typo (`lora_rank`) fails before any GPU time instead of silently
training with the default.

The defaults live in defaults.json because Rollout Lab reads the same file to check
lab.json and command-line settings before it launches anything; one table, two readers."""

import json
import math
from pathlib import Path
from typing import Any, Dict, List

from .errors import SpecError

DEFAULTS_FILE = Path(__file__).with_name("defaults.json")
KINDS = ("sft", "grpo", "serve")

# Settings whose value is one of a few words.
CHOICES = {
    "loss_agg": ("seq-mean-token-mean", "token-mean"),
    "engine": ("auto", "transformers", "vllm"),
}
# Settings that must be > 0, and settings that must be >= 0.
POSITIVE = ("learning_rate", "batch_size", "grad_accum", "lora_r", "lora_alpha", "max_length", "group_size",
            "max_prompt_length", "max_response_length", "max_new_tokens")
NON_NEGATIVE = ("adv_eps", "epochs", "kl_coef", "clip_eps", "lora_dropout", "warmup_steps", "save_steps", "logging_steps", "seed")


def reference_defaults(kind: str) -> Dict[str, Any]:
    """The defaults of a job kind; serve takes grpo's (for /control/train) plus its own."""
    table = json.loads(DEFAULTS_FILE.read_text(encoding="utf-8"))
    if kind == "serve":
        return {**table["grpo"], **table["serve"]}
    if kind not in table:
        raise SpecError(f"phase.kind: unknown job kind {kind!r} — one of {', '.join(KINDS)}")
    return dict(table[kind])


def _type_name(ref: Any) -> str:
    if isinstance(ref, bool):
        return "boolean"
    if isinstance(ref, int):
        return "integer"
    if isinstance(ref, float):
        return "number"
    if isinstance(ref, list):
        return "a list of names (or one comma-separated string)"
    return "string"


def _coerce(name: str, ref: Any, value: Any) -> Any:
    """value converted to the reference's type, or SpecError. Integral floats are taken
    as integers (YAML writes 1e3 as a float) and integers as floats; nothing else is
    converted, so `lora_r: "16"` is an error rather than a guess."""
    ok = False
    if isinstance(ref, list):
        if isinstance(value, str):
            value, ok = [v.strip() for v in value.split(",") if v.strip()], True
        elif isinstance(value, list) and all(isinstance(v, str) for v in value):
            value, ok = [v.strip() for v in value if v.strip()], True
        ok = ok and bool(value)
    elif isinstance(ref, bool):
        ok = isinstance(value, bool)
    elif isinstance(ref, int):
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        ok = isinstance(value, int) and not isinstance(value, bool)
    elif isinstance(ref, float):
        ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
        value = float(value) if ok else value
    else:
        ok = isinstance(value, str)
    if not ok:
        raise SpecError(f"hyperparameters.{name}: {value!r} is not of type '{_type_name(ref)}' (default {ref!r})")
    return value


def resolve_hparams(kind: str, given: Dict[str, Any]) -> Dict[str, Any]:
    """The job's hyper-parameters: the defaults of `kind` overridden by `given`, checked."""
    defaults = reference_defaults(kind)
    if not isinstance(given, dict):
        raise SpecError(f"hyperparameters: expected a mapping of name: value, got {type(given).__name__}")
    unknown = sorted(set(given) - set(defaults))
    if unknown:
        raise SpecError(f"hyperparameters: unknown {kind} setting(s) {', '.join(unknown)} — known: {', '.join(defaults)}")
    out = dict(defaults)
    for name, value in given.items():
        out[name] = _coerce(name, defaults[name], value)
    for name, choices in CHOICES.items():
        if name in out and out[name] not in choices:
            raise SpecError(f"hyperparameters.{name}: {out[name]!r} is not one of {', '.join(choices)}")
    for name in POSITIVE:
        if name in out and not out[name] > 0:
            raise SpecError(f"hyperparameters.{name}: must be greater than 0, got {out[name]!r}")
    for name in NON_NEGATIVE:
        if name in out and out[name] < 0:
            raise SpecError(f"hyperparameters.{name}: must not be negative, got {out[name]!r}")
    if "lora_dropout" in out and out["lora_dropout"] >= 1:
        raise SpecError(f"hyperparameters.lora_dropout: must be below 1, got {out['lora_dropout']!r}")
    if kind in ("sft", "grpo") and out["max_steps"] <= 0 and out["epochs"] <= 0:
        raise SpecError("hyperparameters: max_steps <= 0 and epochs 0 would train nothing — set max_steps, or max_steps -1 and epochs >= 1")
    return out


def target_modules(hp: Dict[str, Any]) -> Any:
    """target_modules for peft: the list, or the single word peft treats specially ("all-linear")."""
    mods: List[str] = list(hp.get("target_modules") or [])
    return mods[0] if mods == ["all-linear"] else mods
