"""Errors that decide the exit status: a bad spec or bad data is exit 2, a failed run exit 1."""


class SpecError(Exception):
    """The job spec or its data is invalid; the message names the field or file:line and the fix."""


class TrainingError(Exception):
    """The training itself failed (result.json says why)."""
