"""Where a SIGINT sent to the `qwen-doctor` command landed, read from how the process ended.

Shared by bench/sigint_startup.py, bench/sigint_first_ms.py and tests/test_sigint_startup.py. The windows, in
start-up order:

- default action: before the launcher's `env --block-signal=INT` has blocked SIGINT (the exec of sh and env;
  with the Python program run directly, or an env without the option: until CPython's `_PySignal_Init`), the
  kernel ends the process (returncode -2; a shell shows 130) without a word;
- interpreter: with SIGINT not blocked, CPython's handler raises KeyboardInterrupt in code that runs before any
  of ours: the io module for sys.stdin/stdout/stderr ("Fatal Python error: init_sys_streams", exit 1), the site
  module and the .pth files ("Fatal Python error: init_import_site", exit 1), or the import machinery locating
  our first module (a KeyboardInterrupt traceback). Through the launcher the signal stays pending instead;
- ours: from the first statement of `qwen_doctor_start` on (and, through the launcher, from env's block on),
  exit 130 and one line, always.
"""

from __future__ import annotations

import re
import signal

LINE = "qwen-doctor: interrupted"
FIRST_MODULE = "qwen_doctor_start.py"
_FRAME = re.compile(r'File "([^"]+)", line (\d+)')


def handled(returncode: int, stderr: str) -> bool:
    """Exit 130 and the one interrupted line last (after any progress lines the command printed before)."""
    lines = stderr.splitlines()
    return (returncode == 130 and bool(lines) and lines[-1].startswith(LINE) and "Traceback" not in stderr
            and sum(LINE in line for line in lines) == 1)


def traceback_in_our_code(stderr: str, handler_line: int) -> bool:
    """A traceback with a frame of doctor or of `qwen_doctor_start` past the line that installs the handler:
    a window our code should have closed."""
    for path, line in _FRAME.findall(stderr):
        if path.endswith(FIRST_MODULE) and int(line) > handler_line:
            return True
        if "/doctor/" in path:
            return True
    return False


def window(returncode: int, stderr: str) -> str:
    """The window an ending came from (module docstring), or 'finished' / 'other'."""
    if handled(returncode, stderr):
        return "handled"
    if returncode == -signal.SIGINT and not stderr.strip():
        return "default action (before SIGINT is blocked)"
    if "Traceback" in stderr or "Fatal Python error" in stderr:
        frames = [path for path, _ in _FRAME.findall(stderr)]
        fatal = re.search(r"Fatal Python error: (init_\w+)", stderr)
        if fatal:
            return {"init_import_site": "traceback: site import (fatal error)",
                    "init_sys_streams": "traceback: io / sys streams (fatal error)"}.get(
                        fatal.group(1), f"traceback: {fatal.group(1)} (fatal error)")
        if any(FIRST_MODULE in path or "/doctor/" in path for path in frames):
            return "traceback: our code"
        if frames and frames[0].endswith(("qwen-doctor", "qwen-doctor-python")):
            return "traceback: console-script wrapper"
        return "traceback: " + (frames[-1] if frames else "unknown")
    if LINE not in stderr and returncode in (0, 1, 2):
        return "finished"
    return "other"


def handler_line(source: str) -> int:
    """The line of `qwen_doctor_start` that installs the handler."""
    return next(n for n, text in enumerate(source.splitlines(), 1) if text.startswith("_signal.signal("))


def sigint_default() -> None:
    """A trial's preexec_fn: SIGINT at its default action in the child, as an interactive shell leaves it. A
    bench or test started in the background (`nohup`, `&` in a script) has SIGINT ignored, which every trial
    would inherit (an ignored signal sent before the handler is installed is discarded)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
