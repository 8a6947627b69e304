"""The policy a job trains or serves: a transformers model (downloaded, or built from
model.config) with a peft LoRA adapter. It offers the Policy interface described in
policy.py, which is all that sft.py, grpo.py and serve.py use."""

import sys

from ..errors import SpecError
from ..events import Emitter
from ..policy import Policy
from ..spec import JobSpec

__all__ = ["load_policy"]


def load_policy(spec: JobSpec, device: str | None = None, emitter: Emitter | None = None) -> Policy:
    """The spec's model (with model.adapter loaded where given), on `device` (default: the
    GPU where there is one). Raises SpecError when the backend cannot run here; a
    transformers model on a machine without CUDA says so in the emitter's log."""
    if spec.model.backend != "transformers":
        raise SpecError(f"model.backend: unknown backend {spec.model.backend!r} — transformers is the only one")
    missing = [name for name in ("transformers", "peft", "tokenizers") if not _importable(name)]
    if missing:
        raise SpecError(f"model.backend: transformers needs {' and '.join(missing)} in this python ({sys.executable}), on a machine with {_device_words()} — "
                        "pip install -r python-trainer/requirements.txt (in a clone of Rollout Lab, bash scripts/setupTrainerVenv.sh makes .venv-trainer, "
                        "which the local target then uses; the SkyPilot and Kubernetes launchers install it)")
    # A model built from a config is small by choice: the CPU is the place for it.
    note = cpu_only_note() if device is None and not spec.model.config else None
    if note and emitter is not None:
        emitter.log(note)
    from .hf import HfPolicy

    return HfPolicy.from_spec(spec, device)


# The lab.json key that builds a small model from a config instead of loading a checkpoint, for messages.
BUILD_HINT = ('set training.trainer.modelConfig in .rollout-lab/lab.json to build a small model from a config, its tokenizer trained on '
              'the job\'s data, nothing downloaded (e.g. {"model_type": "qwen2", "vocab_size": 1024, "hidden_size": 64, "intermediate_size": 128, '
              '"num_hidden_layers": 1, "num_attention_heads": 4, "num_key_value_heads": 2, "max_position_embeddings": 1024, "tie_word_embeddings": true})')


def cpu_only_note() -> str | None:
    """What a job loading a transformers checkpoint on a machine without a CUDA GPU should know, else None."""
    import torch

    if torch.cuda.is_available():
        return None
    return f"note: no CUDA GPU on this machine: the transformers model runs on the CPU, slowly — to try the pipeline here, {BUILD_HINT}"


def _device_words() -> str:
    import torch

    return f"CUDA GPU {torch.cuda.get_device_name(0)}" if torch.cuda.is_available() else "no CUDA GPU"


def _importable(name: str) -> bool:
    """Whether the module imports (found but broken counts as missing: it would fail the job later)."""
    import importlib

    try:
        importlib.import_module(name)
    except ImportError:
        return False
    return True
