"""Run a command with stdout on a pseudo-terminal: what a user's terminal receives. click strips ANSI sequences
only from a pipe, so a raw ESC a command prints is visible to a test only this way."""

from __future__ import annotations

import os
import pty
import select
import subprocess
import time
from pathlib import Path


def on_terminal(argv: list[str], env: dict[str, str], cwd: Path | None = None,
                timeout: float = 60.0) -> subprocess.CompletedProcess:
    """Run argv with stdout on a pseudo-terminal and stderr on a pipe; stdout is what the terminal received, its
    CR LF read back as LF."""
    main_fd, child_fd = pty.openpty()
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=child_fd, stderr=subprocess.PIPE, env=env, cwd=cwd)
    os.close(child_fd)
    received = b""
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([main_fd], [], [], 1.0)
            if not ready:
                if proc.poll() is not None:
                    break
                continue
            try:
                chunk = os.read(main_fd, 1 << 16)
            except OSError:  # EIO: the child closed the terminal
                break
            if not chunk:
                break
            received += chunk
        err = proc.communicate(timeout=max(1.0, deadline - time.monotonic()))[1]
    finally:
        os.close(main_fd)
    return subprocess.CompletedProcess(argv, proc.returncode, received.replace(b"\r\n", b"\n"), err)
