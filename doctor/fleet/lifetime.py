"""Child processes that cannot outlive us: own process group, Linux parent-death signal, group kill."""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import signal
import subprocess
import sys
from typing import Any, Callable

PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


def _libc() -> Any:
    if not sys.platform.startswith("linux"):
        return None
    try:
        return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    except OSError:
        return None


def _die_with(parent: int, libc: Any) -> Callable[[], None]:
    """Runs in the child between fork and exec: SIGKILL when the parent dies, and exit if it already has."""

    def preexec() -> None:
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != parent:
            os._exit(1)

    return preexec


def spawn(cmd: list[str], env: dict[str, str], stderr: int | None = None) -> subprocess.Popen[bytes]:
    """Start `cmd` in a new session (its own process group) that dies with this process where Linux allows."""
    libc = _libc()
    return subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=stderr, env=env,
                            start_new_session=True,
                            preexec_fn=_die_with(os.getpid(), libc) if libc is not None else None)


def kill_group(proc: subprocess.Popen[bytes], wait_s: float) -> None:
    """SIGKILL the child's whole process group (the runner and whatever it started) and reap the child."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        proc.wait(timeout=wait_s)
    except subprocess.TimeoutExpired:
        pass
