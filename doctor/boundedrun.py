"""Running another program whose output we read (a backend's interpreter, `vllm bench serve`), bounded.

`subprocess.run(capture_output=True)` keeps whatever the program writes: an interpreter path that points at a
program writing without end (`--python` given a wrong file) grows qwen-doctor's memory until the machine kills
something. Here the program's stdin is /dev/null, its stdout and stderr are kept up to `max_bytes` each and its
run is bounded by `timeout`; past either bound the program is killed and `OutputTooLarge` or
`subprocess.TimeoutExpired` is raised (both `subprocess.SubprocessError`s).

Each program here is a Python interpreter run in the user's current folder: `probe_env` keeps that folder (and
a script's own folder) off its sys.path (PYTHONSAFEPATH, Python 3.11+; older ones ignore it), so a `secrets.py`
or `typing.py` there is not imported in place of the library of that name.
"""

from __future__ import annotations

import os
import selectors
import subprocess
import time
from typing import Sequence

MiB = 1 << 20
OUTPUT_MAX_BYTES = 16 * MiB
_CHUNK = 64 * 1024


def probe_env(env: dict[str, str] | None = None) -> dict[str, str]:
    """The environment for an interpreter we run to read something: `env` (else ours) with PYTHONSAFEPATH=1."""
    return {**(os.environ if env is None else env), "PYTHONSAFEPATH": "1"}


class OutputTooLarge(subprocess.SubprocessError):
    """A program wrote more than the caller keeps."""


def run_bounded(argv: Sequence[str], timeout: float, max_bytes: int = OUTPUT_MAX_BYTES,
                env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Run the interpreter command `argv` (with `probe_env(env)`) to its end and return its exit code and output
    (UTF-8, undecodable bytes replaced); OSError when it cannot start, OutputTooLarge / TimeoutExpired (the
    program killed) past a bound."""
    proc = subprocess.Popen(list(argv), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=probe_env(env))
    out_fd, err_fd = proc.stdout.fileno(), proc.stderr.fileno()  # type: ignore[union-attr]
    kept: dict[int, bytearray] = {out_fd: bytearray(), err_fd: bytearray()}
    deadline = time.monotonic() + timeout
    try:
        with selectors.DefaultSelector() as selector:
            for pipe in (proc.stdout, proc.stderr):
                selector.register(pipe, selectors.EVENT_READ)  # type: ignore[arg-type]
            while selector.get_map():
                left = deadline - time.monotonic()
                if left <= 0:
                    raise subprocess.TimeoutExpired(list(argv), timeout)
                for key, _ in selector.select(left):
                    chunk = os.read(key.fd, _CHUNK)
                    if not chunk:
                        selector.unregister(key.fileobj)
                        continue
                    kept[key.fd] += chunk
                    if len(kept[key.fd]) > max_bytes:
                        raise OutputTooLarge(f"{argv[0]} wrote more than {max_bytes // MiB} MiB")
        returncode = proc.wait(max(0.0, deadline - time.monotonic()))
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stdout.close()  # type: ignore[union-attr]
        proc.stderr.close()  # type: ignore[union-attr]
    return subprocess.CompletedProcess(list(argv), returncode, kept[out_fd].decode("utf-8", "replace"),
                                       kept[err_fd].decode("utf-8", "replace"))
