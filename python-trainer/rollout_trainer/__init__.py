"""Rollout Lab's trainer job: SFT, GRPO and a policy server, driven by one job spec."""

__version__ = "0.1.0"
