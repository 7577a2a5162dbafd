"""Errors for planner input that cannot be planned (unknown GPU, impossible flags)."""


class PlanInputError(ValueError):
    """Bad planner input: reported as one line, exit code 2."""
