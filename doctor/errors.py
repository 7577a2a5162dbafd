"""Errors that the CLI turns into one line on stderr and exit code 2."""


class DoctorError(Exception):
    """Bad input or usage: reported as one clear line, exit code 2, never a traceback."""


class BadBundle(DoctorError):
    """A facts bundle that cannot be read or does not follow the schema."""


class DataError(DoctorError):
    """Shipped or user-supplied knowledge data (YAML) that fails validation."""
