"""The policy a job trains or serves: the trainer's own tiny torch model (CPU tests) or a
transformers model with a peft LoRA adapter. Both offer the same Policy interface."""

from typing import Any, Optional

from ..errors import SpecError


def load_policy(spec: Any, device: Optional[str] = None, lora: bool = True) -> Any:
    if spec.model.backend == "tiny":
        from .tiny import TinyPolicy

        return TinyPolicy.from_spec(spec, device)
    if spec.model.backend == "transformers":
        try:
            import transformers  # noqa: F401
            import peft  # noqa: F401
        except ImportError as exc:
            raise SpecError(f"model.backend transformers needs transformers and peft on this machine ({exc}) — pip install 'rollout-trainer[hf]'") from None
        from .hf import HfPolicy

        return HfPolicy.from_spec(spec, device, lora=lora)
    raise SpecError(f"model.backend: unknown backend {spec.model.backend!r}")
