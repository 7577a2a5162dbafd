"""Errors of the remedies library.

They derive from the core's `doctor.errors` classes when the core is importable, so the CLI turns them
into one line on stderr and exit code 2; the library itself stays usable without the core.
"""

try:
    from doctor.errors import DataError as _DataBase
    from doctor.errors import DoctorError as _InputBase
except ImportError:  # the core spine is not merged yet
    _DataBase = _InputBase = Exception  # type: ignore[misc,assignment]


class CatalogueError(_DataBase):
    """The catalogue data is invalid; the message names the file and the entry."""


class LogReadError(_InputBase):
    """A log source cannot be read (missing, unreadable, corrupt gzip)."""
