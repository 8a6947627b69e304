"""The policy a job trains or serves: the trainer's own tiny torch model (CPU tests), or a
transformers model with a peft LoRA adapter. Both offer the Policy interface described
in backends/common.py, which is all that sft.py, grpo.py and serve.py use."""

from typing import Any, Optional

from ..errors import SpecError

__all__ = ["load_policy"]


def load_policy(spec: Any, device: Optional[str] = None) -> Any:
    """The spec's model (with model.adapter loaded where given), on `device` (default: the
    GPU where there is one). Raises SpecError when the backend cannot run here."""
    backend = spec.model.backend
    if backend == "tiny":
        from .tiny import TinyPolicy

        return TinyPolicy.from_spec(spec, device)
    if backend == "transformers":
        missing = [name for name in ("transformers", "peft") if not _importable(name)]
        if missing:
            raise SpecError(f"model.backend: transformers needs {' and '.join(missing)} on this machine — "
                            "pip install -e './python-trainer[hf]' in the bundle (the SkyPilot and Kubernetes launchers do), or use backend tiny for a dry run")
        from .hf import HfPolicy

        return HfPolicy.from_spec(spec, device)
    raise SpecError(f"model.backend: unknown backend {backend!r} — transformers or tiny")


def _importable(name: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(name) is not None
