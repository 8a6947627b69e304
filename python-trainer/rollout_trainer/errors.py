"""The errors that decide a job's exit status.

Rollout Lab reads the exit status before anything else: 2 means "fix the spec or the
data and run again" (no GPU time will help), 1 means the run itself failed (result.json
and the log say why). Keeping the distinction in exception types means every module
can raise the right one without knowing about exit codes."""


class SpecError(Exception):
    """The job spec is invalid; the message names the field and how to fix it (exit 2)."""


class DataError(SpecError):
    """The training data is invalid; the message names FILE:LINE and what is wrong (exit 2)."""


class TrainingError(Exception):
    """The training itself failed, e.g. the loss diverged (exit 1)."""
