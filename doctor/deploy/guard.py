"""A small supervisor process that stops a server's process group when qwen-doctor dies without
stopping it (SIGKILL, a crash): `python -m doctor.deploy.guard PARENT_PID PGID GRACE [RECORD]`.

It polls: once the server's group is empty it exits (removing the run record); once PARENT_PID is
gone it sends SIGTERM to the group, waits GRACE seconds, sends SIGKILL, removes the record and exits.
The server's leader also has a parent-death signal (`process.die_with_parent`); the guard covers the
leader's children, which do not inherit it.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time
from pathlib import Path

POLL_S = 0.5


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return _has_members(pgid)


def _has_members(pgid: int) -> bool:
    """True when a non-zombie process is in the group (killpg(0) also succeeds for zombies)."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError, ValueError, IndexError):
            stat = (entry / "stat").read_text()
            fields = stat[stat.rindex(")") + 2:].split()
            if int(fields[2]) == pgid and fields[0] != "Z":
                return True
    return False


def _parent_alive(parent: int) -> bool:
    return os.getppid() == parent


def guard(parent: int, pgid: int, grace: float, record: Path | None) -> int:
    """Watch until the group is gone or the parent died (then stop the group); return 0."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    while _group_alive(pgid):
        if not _parent_alive(parent):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pgid, signal.SIGTERM)
            deadline = time.monotonic() + grace
            while time.monotonic() < deadline and _group_alive(pgid):
                time.sleep(POLL_S)
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pgid, signal.SIGKILL)
            break
        time.sleep(POLL_S)
    if record is not None:
        with contextlib.suppress(OSError):
            record.unlink()
    return 0


def main(argv: list[str]) -> int:
    parent, pgid, grace = int(argv[0]), int(argv[1]), float(argv[2])
    return guard(parent, pgid, grace, Path(argv[3]) if len(argv) > 3 and argv[3] else None)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
