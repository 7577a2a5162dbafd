"""The signals that stop a command (Ctrl-C's SIGINT, SIGTERM, SIGHUP): the line each ends it with, its name in a
report, and its exit code (128 + its number, as a shell shows it)."""

from __future__ import annotations

import signal

LINE = "qwen-doctor: interrupted"
LINES = {signal.SIGINT: LINE, signal.SIGTERM: "qwen-doctor: terminated (SIGTERM)",
         signal.SIGHUP: "qwen-doctor: hung up (SIGHUP)"}
SIGNAL_NAMES = {signal.SIGINT: "Ctrl-C", signal.SIGTERM: "SIGTERM", signal.SIGHUP: "SIGHUP"}


class Signalled(KeyboardInterrupt):
    """SIGTERM or SIGHUP received while a command runs; raised in the main thread so that every `finally` runs."""

    def __init__(self, signum: int) -> None:
        super().__init__(f"received signal {signum}")
        self.signum = signum


def signum_of(exc: BaseException) -> int:
    """The signal an interruption came from (KeyboardInterrupt without one: SIGINT)."""
    return int(getattr(exc, "signum", signal.SIGINT))


def exit_code(signum: int) -> int:
    """The shell's code for a command ended by `signum`: 128 + its number."""
    return 128 + int(signum)
