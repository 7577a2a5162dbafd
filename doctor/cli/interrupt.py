"""Ctrl-C, SIGTERM and SIGHUP at any moment end the program with one line on stderr and exit 128 + the signal's
number (130, 143, 129), never a traceback.

Before the command runs (imports, start-up) and after it has finished, the signal ends the process at once
(`_exit_now`): nothing is half-done then. While the command runs, it is raised as KeyboardInterrupt (SIGINT) or
`Signalled` (SIGTERM, SIGHUP; a KeyboardInterrupt too), so that every `finally` runs (a temporary output file is
removed, a deploy stops the server it started); `main` turns it into the same line and exit code. A SIGHUP or
SIGTERM that the caller set to be ignored (`nohup`) stays ignored.

Python cannot raise out of a finalizer (`__del__`, a weakref callback, a generator closed by the collector): a
signal that lands in one is printed as "Exception ignored in ..." with a traceback and the command goes on.
While a command runs, such a swallowed signal is kept silent (`sys.unraisablehook`) and delivered again a moment later
(REDELIVER_AFTER_S), so the command stops; should that one land in a finalizer too (up to REDELIVER_MAX times), it is
raised when the command returns (`raise_swallowed`), so it still ends in its one line and exit code.
"""

from __future__ import annotations

import atexit
import os
import signal
import sys
import threading
from types import FrameType

from doctor.stop_signals import LINE, LINES, SIGNAL_NAMES, Signalled, exit_code, signum_of

EXIT_INTERRUPTED = 130
REDELIVER_AFTER_S = 0.05  # once the finalizer has returned
REDELIVER_MAX = 3  # a swallowed signal sent again at most this often; then it waits for the return
__all__ = ["EXIT_INTERRUPTED", "LINE", "LINES", "SIGNAL_NAMES", "Interrupted", "Signalled", "exit_code",
           "signum_of", "exit_at_once", "ignore_at_exit", "raise_interrupt", "raise_swallowed"]
_CALLER_IGNORED = frozenset(s for s in (signal.SIGTERM, signal.SIGHUP) if signal.getsignal(s) == signal.SIG_IGN)


class Interrupted(BaseException):
    """A stopping signal carried past click, which would print a blank line and call it an abort."""

    def __init__(self, signum: int = signal.SIGINT) -> None:
        super().__init__(signum)
        self.signum = signum


def _exit_now(signum: int, frame: FrameType | None) -> None:
    try:
        os.write(2, (LINES.get(signum, LINE) + "\n").encode())
    except OSError:
        pass
    os._exit(exit_code(signum))


def _raise_signalled(signum: int, frame: FrameType | None) -> None:
    raise Signalled(signum)


def _set(handler: object, ending: object) -> None:
    """`handler` for SIGINT and `ending` for SIGTERM / SIGHUP (those the caller ignored are left alone)."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, handler)  # type: ignore[arg-type]
        for signum in (signal.SIGTERM, signal.SIGHUP):
            if signum not in _CALLER_IGNORED:
                signal.signal(signum, ending)  # type: ignore[arg-type]


def exit_at_once() -> None:
    """A stopping signal ends the process now, with its line and exit code (start-up and shut-down)."""
    _set(_exit_now, _exit_now)


def ignore_at_exit() -> None:
    """From the interpreter's last steps on (after atexit), the signals are ignored: the command has finished and
    Python would otherwise restore the default action, which kills the process without a word."""
    atexit.register(_set, signal.SIG_IGN, signal.SIG_IGN)


def raise_interrupt() -> None:
    """SIGINT raises KeyboardInterrupt and SIGTERM / SIGHUP raise Signalled (while a command runs and may need to
    clean up); one that a finalizer swallows is kept for `raise_swallowed`."""
    _set(signal.default_int_handler, _raise_signalled)
    if sys.unraisablehook is not _keep_swallowed:
        _Swallowed.previous_hook = sys.unraisablehook
        sys.unraisablehook = _keep_swallowed


class _Swallowed:
    """The unraisable hook `raise_interrupt` replaced, and the stopping signals finalizers swallowed since."""

    previous_hook = sys.unraisablehook
    signals: list[int] = []


def _keep_swallowed(unraisable: sys.UnraisableHookArgs) -> None:
    if isinstance(unraisable.exc_value, KeyboardInterrupt):
        signum = signum_of(unraisable.exc_value)
        _Swallowed.signals.append(signum)
        if len(_Swallowed.signals) <= REDELIVER_MAX:
            timer = threading.Timer(REDELIVER_AFTER_S, os.kill, (os.getpid(), signum))
            timer.daemon = True  # sent from here, its handler would run inside this hook and be lost
            timer.start()
        return
    _Swallowed.previous_hook(unraisable)


def raise_swallowed() -> None:
    """Raise again, as Interrupted, the first stopping signal a finalizer swallowed while the command ran."""
    if _Swallowed.signals:
        signum = _Swallowed.signals[0]
        _Swallowed.signals.clear()
        raise Interrupted(signum)
