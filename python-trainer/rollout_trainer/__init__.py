"""Rollout Lab's trainer job: LoRA SFT on exported conversations, GRPO on rollout groups,
and an OpenAI-compatible server for the policy under training, all driven by one job
spec (python -m rollout_trainer sft|grpo|serve|validate --spec job.yaml)."""

__version__ = "0.2.0"
