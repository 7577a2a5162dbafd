"""The run directory: one JSON record per server qwen-doctor started, so that `deploy --status` can list
them, `deploy --stop` can stop them and a busy port held by our own earlier server is recognised.

Records live in `$QWEN_DOCTOR_STATE_DIR/runs`, else `$XDG_STATE_HOME/qwen-doctor/runs`, else
`~/.local/state/qwen-doctor/runs`. A record is alive while a process with its pid and start time runs
(pid reuse cannot pass for our server); a record whose process is gone is stale.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import signal
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import psutil

from doctor.errors import DoctorError
from doctor.safeio import BadJSON, InputError, read_json
from doctor.textsafe import visible

STATE_ENV = "QWEN_DOCTOR_STATE_DIR"


def runs_dir() -> Path:
    """Where run records are kept (created on demand)."""
    base = os.environ.get(STATE_ENV)
    if base:
        return Path(base) / "runs"
    xdg = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(xdg) / "qwen-doctor" / "runs"


@dataclass(frozen=True)
class RunRecord:
    """One server qwen-doctor started: its group leader's pid and start time, where it serves, its log."""

    pid: int
    create_time: float
    host: str
    port: int
    profile: str
    backend: str
    log: str
    started_at: str
    command: str = ""
    kept: bool = False
    file: str = field(default="", compare=False)  # the file it was read from (its name may not be `path`'s)

    @property
    def id(self) -> str:
        return str(self.pid)

    @property
    def path(self) -> Path:
        return runs_dir() / f"{self.pid}-{int(self.create_time)}.json"

    @property
    def alive(self) -> bool:
        """True while the recorded process (same pid, same start time) runs."""
        try:
            p = psutil.Process(self.pid)
            return abs(p.create_time() - self.create_time) < 1.0 and p.status() != psutil.STATUS_ZOMBIE
        except psutil.Error:
            return False

    def stop_hint(self) -> str:
        return f"qwen-doctor deploy --stop {self.id}"


def save(record: RunRecord) -> Path:
    """Write (or rewrite) a record atomically through `doctor.outfile` (a state folder that others may write
    into, `QWEN_DOCTOR_STATE_DIR=/tmp/x`, cannot steer the write through their symlinks); return its path."""
    from doctor.outfile import write_file

    path = record.path
    path.parent.mkdir(parents=True, exist_ok=True)
    fields = {k: v for k, v in asdict(record).items() if k != "file"}
    write_file(path, json.dumps(fields, indent=1), what="run record")
    return path


def record_for(pid: int, **fields: Any) -> RunRecord:
    """A record for the running process `pid` (its start time read now)."""
    try:
        created = psutil.Process(pid).create_time()
    except psutil.Error:
        created = time.time()
    return RunRecord(pid=pid, create_time=created, **fields)


def forget(record: RunRecord) -> str | None:
    """Remove a record (the server is gone), under its own name and the file it was read from; why a file
    could not be removed (a read-only state directory), else None."""
    for path in dict.fromkeys([record.path, *([Path(record.file)] if record.file else [])]):
        try:
            path.unlink()
        except FileNotFoundError:
            pass
        except OSError as exc:
            return f"cannot remove {path}: {exc.strerror or exc}"
    return None


RECORD_MAX_BYTES = 64 * 1024


def load_all() -> list[RunRecord]:
    """Every record, oldest first, each read like any other input (`doctor.safeio`: a regular file under
    RECORD_MAX_BYTES, never blocking, JSON nesting bounded); a record with foreign fields is skipped, a file
    that is no record at all (a FIFO, a huge or deeply nested file) is one line naming it, exit 2."""
    out = []
    folder = runs_dir()
    if not folder.is_dir():
        return []
    for path in sorted(folder.glob("*.json")):
        try:
            data = read_json(path, "run record", RECORD_MAX_BYTES)
        except BadJSON:
            continue
        except InputError as exc:
            raise InputError(f"{exc} (remove it from {folder})") from None
        try:
            out.append(replace(_parse(data), file=str(path)))
        except (ValueError, TypeError):
            continue
    return sorted(out, key=lambda r: r.create_time)


def _parse(data: Any) -> RunRecord:
    """A record as `save` writes it; TypeError for a hand-edited or foreign file whose fields have other types."""
    record = RunRecord(**data)
    whole = [record.pid, record.port]
    texts = [record.host, record.profile, record.backend, record.log, record.started_at, record.command]
    if not (all(type(v) is int and v > 0 for v in whole) and all(isinstance(v, str) for v in texts)
            and type(record.create_time) in (int, float) and math.isfinite(record.create_time)
            and isinstance(record.kept, bool)):
        raise TypeError(f"not a qwen-doctor run record: {data!r:.80}")
    return record


def holder_of(port: int) -> RunRecord | None:
    """Our own alive server that serves `port`, if any."""
    return next((r for r in load_all() if r.port == port and r.alive), None)


def find(run_id: str) -> RunRecord:
    """The record with this id (the server's pid), or DoctorError naming the known ids."""
    records = load_all()
    match = [r for r in records if r.id == run_id]
    if not match:
        known = ", ".join(r.id for r in records) or "none"
        raise DoctorError(f"no server with id {run_id!r} was started by qwen-doctor (known: {known}); "
                          "see `qwen-doctor deploy --status`")
    return match[-1]


def stop(record: RunRecord, grace: float = 15.0) -> str:
    """Stop a recorded server's whole process group (SIGTERM, then SIGKILL after `grace`), forget it,
    and say what happened."""
    if not record.alive:
        kept = forget(record)
        return f"{record.id}: already gone (" + (f"stale record kept: {kept})" if kept else "stale record removed)")
    _killpg(record.pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline and _group_alive(record.pid):
        time.sleep(0.1)
    how = "stopped with SIGTERM"
    if _group_alive(record.pid):
        _killpg(record.pid, signal.SIGKILL)
        how = f"killed with SIGKILL after {grace:g} s"
    kept = forget(record)
    note = f"; record kept: {kept}" if kept else ""
    return visible(f"{record.id}: {how} (port {record.port}, profile {record.profile}{note})")


def _killpg(pgid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def _group_alive(pgid: int) -> bool:
    """True while any process other than a zombie is in the group."""
    for p in psutil.process_iter(["pid"]):
        with contextlib.suppress(psutil.Error, ProcessLookupError):
            if os.getpgid(p.pid) == pgid and p.status() != psutil.STATUS_ZOMBIE:
                return True
    return False


def describe(record: RunRecord) -> str:
    """One line for `deploy --status`; a hand-edited record's control characters shown escaped, never raw."""
    state = "alive" if record.alive else "stale"
    kept = ", kept" if record.kept else ""
    return visible(f"{record.id:>8}  {state:5}  {record.host}:{record.port}  {record.profile} ({record.backend}{kept})  "
                   f"started {record.started_at}  log {record.log}")
