"""Ctrl-C at any moment ends the program with exit 130 and one line on stderr, never a traceback.

Before the command runs (imports, start-up) and after it has finished, SIGINT ends the process at once
(`_exit_now`): nothing is half-done then. While the command runs, SIGINT is Python's KeyboardInterrupt, so that
a deploy can stop the server it started; `main` turns it into the same line and exit code.
"""

from __future__ import annotations

import atexit
import os
import signal
import threading
from types import FrameType

EXIT_INTERRUPTED = 130
LINE = "qwen-doctor: interrupted"


class Interrupted(BaseException):
    """KeyboardInterrupt carried past click, which would print a blank line and call it an abort."""


def _exit_now(signum: int, frame: FrameType | None) -> None:
    try:
        os.write(2, (LINE + "\n").encode())
    except OSError:
        pass
    os._exit(EXIT_INTERRUPTED)


def _set(handler: object) -> None:
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, handler)  # type: ignore[arg-type]


def exit_at_once() -> None:
    """SIGINT ends the process now, with LINE and exit 130 (start-up and shut-down)."""
    _set(_exit_now)


def ignore_at_exit() -> None:
    """From the interpreter's last steps on (after atexit), SIGINT is ignored: the command has finished and
    Python would otherwise restore the default action, which kills the process without a word."""
    atexit.register(_set, signal.SIG_IGN)


def raise_interrupt() -> None:
    """SIGINT raises KeyboardInterrupt (while a command runs and may need to clean up)."""
    _set(signal.default_int_handler)
