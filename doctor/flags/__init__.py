"""Backend flag validation: per-version flag schemas (package data) and a bridge to the backend's real parser.

    validate(rendered.backend_args, "vllm")             -> real parser if installed, else the schema
    validate_command(rendered.backend_args, "vllm", version="0.32.0") -> ValidationReport (schema only)
    real_parse("vllm", args) -> ValidationReport | None    # None when the backend is not installed
"""

from doctor.flags.schema import FlagDefault, FlagSchema, FlagSpec, available_versions, flag_default, load_schema
from doctor.flags.validate import FlagIssue, ValidationReport, validate, validate_args, validate_command

__all__ = [
    "FlagDefault",
    "FlagIssue",
    "FlagSchema",
    "FlagSpec",
    "ValidationReport",
    "available_versions",
    "flag_default",
    "load_schema",
    "validate",
    "validate_args",
    "validate_command",
]
