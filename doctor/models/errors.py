"""Errors raised for unreadable or inconsistent model data."""

from doctor.errors import DataError


class ModelConfigError(DataError):
    """A config.json or registry entry that cannot describe a model (one line, exit 2)."""
