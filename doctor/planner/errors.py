"""Errors for planner input that cannot be planned (unknown GPU, impossible flags)."""

from doctor.errors import DoctorError


class PlanInputError(DoctorError):
    """Bad planner input: reported as one line, exit code 2."""
