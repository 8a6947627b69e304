"""The policy a job trains or serves: the trainer's own tiny torch model (CPU tests), or a
transformers model with a peft LoRA adapter. Both offer the Policy interface described
in policy.py, which is all that sft.py, grpo.py and serve.py use."""

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
    backend = spec.model.backend
    if backend == "tiny":
        from .tiny import TinyPolicy

        return TinyPolicy.from_spec(spec, device)
    if backend == "transformers":
        missing = [name for name in ("transformers", "peft", "tokenizers") if not _importable(name)]
        if missing:
            raise SpecError(f"model.backend: transformers needs {' and '.join(missing)} in this python ({sys.executable}), on a machine with {_device_words()} — "
                            "pip install -r python-trainer/requirements.txt (in a clone of Rollout Lab, bash scripts/setupTrainerVenv.sh makes .venv-trainer, "
                            f"which the local target then uses; the SkyPilot and Kubernetes launchers install it), or train the trainer's own small model on the CPU: {TINY_HINT}")
        # A model built from a config is small by choice: the CPU is the place for it.
        note = cpu_only_note(backend) if device is None and not spec.model.config else None
        if note and emitter is not None:
            emitter.log(note)
        from .hf import HfPolicy

        return HfPolicy.from_spec(spec, device)
    raise SpecError(f"model.backend: unknown backend {backend!r} — transformers or tiny")


# The lab.json keys that choose the tiny backend, for messages.
TINY_HINT = ('set training.trainer.backend: "tiny" (and, optionally, training.trainer.modelConfig, e.g. '
             '{"hidden_size": 64, "num_layers": 2, "num_heads": 4, "max_positions": 2048}) in .rollout-lab/lab.json')


def cpu_only_note(backend: str) -> str | None:
    """What a transformers job on a machine without a CUDA GPU should know, else None."""
    import torch

    if backend != "transformers" or torch.cuda.is_available():
        return None
    return f"note: no CUDA GPU on this machine: the transformers model runs on the CPU, slowly — to try the pipeline here, {TINY_HINT}"


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
