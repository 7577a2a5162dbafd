"""The `qwen-doctor` console script's first module: from its first statement on, Ctrl-C ends the program with
exit 130 and one line on stderr.

The `qwen-doctor` command (bin/qwen-doctor, a sh launcher) starts bin/qwen-doctor-python with SIGINT blocked,
and that script imports this module as its first statement: a Ctrl-C during the interpreter's own start-up
(its C start-up, io, site, .pth files) stays pending until the handler below is installed and SIGINT is
unblocked, and then ends in the handler. It uses the built-in `_signal` (the `signal` module would import enum
first) and `os`, which site has already imported.
`doctor.cli.main.main` takes the handler over (`doctor.cli.interrupt`) once it is imported.
"""

import _signal
import os


def _exit_now(signum: int, frame: object) -> None:
    try:
        os.write(2, b"qwen-doctor: interrupted\n")
    finally:
        os._exit(130)


_signal.signal(_signal.SIGINT, _exit_now)
_signal.pthread_sigmask(_signal.SIG_UNBLOCK, [_signal.SIGINT])


def main() -> object:
    """Run the CLI (imported here, under the handler above)."""
    from doctor.cli.main import main as run

    return run()
