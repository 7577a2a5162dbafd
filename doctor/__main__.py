"""`python -m doctor` runs the CLI.

Python puts the current folder first on sys.path for `-m`: a `secrets.py`, `yaml.py` or `click.py` there would be
imported in place of the library of that name. The folder is taken off the path first (PYTHONSAFEPATH's rule),
unless it is the one that holds this package (a checkout run in place), whose other packages the CLI imports.
"""

import os
import sys


def _drop_current_folder() -> None:
    if not sys.path or getattr(sys.flags, "safe_path", False) or sys.flags.isolated:
        return
    try:
        current = os.getcwd()
    except OSError:  # a deleted current folder: what Python put first is the path it had
        current = sys.path[0]
    first = os.path.realpath(sys.path[0] or os.curdir) if sys.path[0] else current
    package_parent = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
    if first in (current, os.path.realpath(current)) and first != package_parent:
        del sys.path[0]


_drop_current_folder()

from doctor.cli import interrupt  # noqa: E402

interrupt.exit_at_once()  # Ctrl-C while the CLI imports: one line, exit 130

from doctor.cli.main import main  # noqa: E402

main()
