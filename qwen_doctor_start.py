"""The `qwen-doctor` command's first module: from its first statement on, Ctrl-C ends the program with exit 130
and one line on stderr (SIGTERM and SIGHUP: 143 and 129, unless the caller ignored them).

The `qwen-doctor` command (bin/qwen-doctor, a sh launcher) starts bin/qwen-doctor-python with SIGINT, SIGTERM
and SIGHUP blocked, and that script imports this module as its first statement: a Ctrl-C during the
interpreter's own start-up (its C start-up, io, site, .pth files) stays pending until the handlers below are
installed and the signals unblocked, and then ends in the handler. It uses the built-in `_signal` (the `signal` module would import enum
first) and `os`, which site has already imported.
`doctor.cli.main.main` takes the handlers over (`doctor.cli.interrupt`) once it is imported.
"""

import _signal
import os


def _exit_now(signum: int, frame: object) -> None:
    try:
        os.write(2, _LINES[signum])
    finally:
        os._exit(128 + signum)


_LINES = {_signal.SIGINT: b"qwen-doctor: interrupted\n", _signal.SIGTERM: b"qwen-doctor: terminated (SIGTERM)\n",
          _signal.SIGHUP: b"qwen-doctor: hung up (SIGHUP)\n"}
_signal.signal(_signal.SIGINT, _exit_now)
for _ending in (_signal.SIGTERM, _signal.SIGHUP):
    if _signal.getsignal(_ending) != _signal.SIG_IGN:  # nohup's SIGHUP stays ignored
        _signal.signal(_ending, _exit_now)
_signal.pthread_sigmask(_signal.SIG_UNBLOCK, [_signal.SIGINT, _signal.SIGTERM, _signal.SIGHUP])


def main() -> object:
    """Run the CLI (imported here, under the handler above)."""
    from doctor.cli.main import main as run

    return run()
