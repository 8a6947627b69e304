"""Hyper-parameters of each job kind: a typed, frozen record per kind (SftParams,
GrpoParams, ServeParams), the reference defaults, type checks, and unknown names
rejected, so a typo (`lora_rank`) fails before any GPU time instead of silently training
with the default.

The defaults live in defaults.json because Rollout Lab reads the same file to check
lab.json and command-line settings before it launches anything; one table, two readers.
The records repeat those defaults so a record can be built in code; tests/test_hparams.py
fails when the two disagree on a name, a type or a value."""

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypeVar, get_args, overload

from .errors import SpecError

DEFAULTS_FILE = Path(__file__).with_name("defaults.json")
KINDS = ("sft", "grpo", "serve")

LossAgg = Literal["seq-mean-token-mean", "token-mean"]
Engine = Literal["auto", "transformers", "vllm"]

# Settings whose value is one of a few words.
CHOICES: dict[str, tuple[str, ...]] = {"loss_agg": get_args(LossAgg), "engine": get_args(Engine)}
# Settings that must be > 0, and settings that must be >= 0.
POSITIVE = ("learning_rate", "batch_size", "grad_accum", "lora_r", "lora_alpha", "max_length", "group_size",
            "max_prompt_length", "max_response_length", "max_new_tokens")
NON_NEGATIVE = ("adv_eps", "epochs", "kl_coef", "clip_eps", "lora_dropout", "warmup_steps", "save_steps", "logging_steps", "seed")

ATTENTION_PROJECTIONS = ("q_proj", "k_proj", "v_proj", "o_proj")


def _projections() -> list[str]:
    return list(ATTENTION_PROJECTIONS)


@dataclass(frozen=True)
class SftParams:
    """An sft job's hyper-parameters (defaults.json's "sft")."""

    learning_rate: float = 0.0002
    max_steps: int = 10
    epochs: int = 1
    batch_size: int = 2
    grad_accum: int = 4
    lora_r: int = 16
    lora_alpha: int = 16
    lora_dropout: float = 0.05
    target_modules: list[str] = field(default_factory=_projections)
    max_length: int = 4096
    load_in_4bit: bool = False
    merge: bool = False
    gradient_checkpointing: bool = False
    warmup_steps: int = 0
    save_steps: int = 5
    logging_steps: int = 1
    seed: int = 0


@dataclass(frozen=True)
class GrpoParams:
    """A grpo job's hyper-parameters (defaults.json's "grpo"), also those of each
    /control/train update of a serve job."""

    learning_rate: float = 0.000001
    group_size: int = 8
    kl_coef: float = 0.001
    clip_eps: float = 0.2
    batch_size: int = 4
    grad_accum: int = 1
    epochs: int = 2
    max_steps: int = 10
    max_prompt_length: int = 4096
    max_response_length: int = 2048
    lora_r: int = 16
    lora_alpha: int = 16
    lora_dropout: float = 0.05
    target_modules: list[str] = field(default_factory=_projections)
    gradient_checkpointing: bool = True
    adv_eps: float = 0.000001
    loss_agg: LossAgg = "seq-mean-token-mean"
    save_steps: int = 5
    seed: int = 0


@dataclass(frozen=True)
class ServeParams(GrpoParams):
    """A serve job's hyper-parameters: grpo's (for /control/train) plus defaults.json's "serve"."""

    max_new_tokens: int = 512
    engine: Engine = "auto"
    kv_cache: bool = True


# What a job spec carries: the record of its kind (a ServeParams is a GrpoParams).
HyperParameters = SftParams | GrpoParams
PARAMS: dict[str, type[SftParams] | type[GrpoParams]] = {"sft": SftParams, "grpo": GrpoParams, "serve": ServeParams}
P = TypeVar("P", bound=HyperParameters)


def reference_defaults(kind: str) -> dict[str, Any]:
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


@overload
def resolve_hparams(kind: Literal["sft"], given: object) -> SftParams: ...
@overload
def resolve_hparams(kind: Literal["grpo"], given: object) -> GrpoParams: ...
@overload
def resolve_hparams(kind: Literal["serve"], given: object) -> ServeParams: ...
@overload
def resolve_hparams(kind: str, given: object) -> HyperParameters: ...
def resolve_hparams(kind: str, given: object) -> HyperParameters:
    """The job's hyper-parameters: the defaults of `kind` overridden by `given` (the spec's
    mapping as read, so anything), checked."""
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
    return PARAMS[kind](**out)


def target_modules(hp: HyperParameters) -> str | list[str]:
    """target_modules for peft: the list, or the single word peft treats specially ("all-linear")."""
    mods = list(hp.target_modules)
    return mods[0] if mods == ["all-linear"] else mods
