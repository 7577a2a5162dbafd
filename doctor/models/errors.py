"""Errors raised for unreadable or inconsistent model data."""


class ModelConfigError(ValueError):
    """A config.json or registry entry that cannot describe a model."""
