"""Process-group supervision: start a server in its own session, follow its log file, stop all of it.

Stopping is SIGTERM to the whole group, a grace period, then SIGKILL to whatever is left (the group
and every descendant seen while it ran, in case one left the group). `supervised()` makes sure this
happens on Ctrl-C, on SIGTERM to qwen-doctor, on any exception and at interpreter exit. When
qwen-doctor dies without running any of that (SIGKILL), the leader gets a parent-death signal
(Linux PR_SET_PDEATHSIG) and a guard process (`doctor.deploy.guard`) stops the rest of the group.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Callable, Iterator

import psutil

from doctor.errors import DoctorError

LineSink = Callable[[str, int], None]


class LaunchFailed(DoctorError):
    """The server binary could not be executed at all (missing interpreter, not executable)."""


class Terminated(KeyboardInterrupt):
    """qwen-doctor received SIGTERM; raised in the main thread so that every `finally` runs."""

    signum = signal.SIGTERM


PR_SET_PDEATHSIG = 1


def die_with_parent(parent: int) -> Callable[[], None]:
    """A preexec function: the child gets SIGTERM when `parent` dies (Linux), and exits at once if the
    parent is already gone. Elsewhere it does nothing (the guard process still covers the group). The child also
    starts with no signal blocked, as from a terminal: a mask is inherited, and a Ray worker blocks SIGINT."""

    def preexec() -> None:
        with contextlib.suppress(OSError, AttributeError):
            signal.pthread_sigmask(signal.SIG_SETMASK, ())
        if sys.platform.startswith("linux"):
            with contextlib.suppress(OSError, AttributeError):
                ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, int(signal.SIGTERM), 0, 0, 0)
        if os.getppid() != parent:
            os._exit(1)

    return preexec


class ServerProcess:
    """A server started in its own process group whose combined stdout/stderr is teed to `log_path`.

    `die_with_parent` sets the leader's parent-death signal; leave it off for a server that may be kept
    (the signal cannot be withdrawn later); the guard process covers that case until `detach()`."""

    def __init__(self, argv: list[str], env: dict[str, str], log_path: Path, on_line: LineSink | None = None,
                 on_stop: Callable[[], None] | None = None, guard_grace: float | None = 15.0,
                 on_started: Callable[[int], Path | None] | None = None, die_with_parent: bool = True) -> None:
        self.argv = argv
        self.die_with_parent = die_with_parent
        self.on_started = on_started
        self.stop_how: str | None = None
        self.stop_seconds = 0.0
        self.on_stop = on_stop
        self.guard_grace = guard_grace
        self.guard: subprocess.Popen[bytes] | None = None
        self.record_path: Path | None = None
        self.exited_by_itself: int | None = None
        self.env = env
        self.log_path = Path(log_path)
        self.on_line = on_line
        self.proc: subprocess.Popen[bytes] | None = None
        self.lines = 0
        self.sink_errors: list[str] = []
        self._seen: dict[int, psutil.Process] = {}
        self._reader: threading.Thread | None = None
        self._stopped = False
        self._finished = threading.Event()

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc else None

    @property
    def returncode(self) -> int | None:
        return self.proc.poll() if self.proc else None

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def start(self) -> None:
        """Spawn the server writing straight to the log file, a new one (so a kept server outlives qwen-doctor;
        an existing file is never truncated: OutputError), and follow that file; raise LaunchFailed when it
        cannot be executed."""
        from doctor.outfile import create_new

        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with create_new(self.log_path, "server log") as log:
            try:
                self.proc = subprocess.Popen(
                    self.argv, env={**os.environ, **self.env}, stdin=subprocess.DEVNULL,
                    stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                    preexec_fn=die_with_parent(os.getpid()) if self.die_with_parent else None)
            except OSError as exc:
                raise LaunchFailed(f"cannot start {self.argv[0]}: {exc.strerror or exc}") from exc
        atexit.register(self.stop)
        if self.on_started is not None:
            self.record_path = self.on_started(self.proc.pid)
        if self.guard_grace is not None:
            self.start_guard()
        self._reader = threading.Thread(target=self._follow, name="server-log", daemon=True)
        self._reader.start()

    def _follow(self) -> None:
        """Read the log file as it grows; finish once stopped, or once the server exited and the file
        has been quiet for a second."""
        partial = b""
        quiet_since: float | None = None
        with self.log_path.open("rb") as log:
            while True:
                chunk = log.readline()
                if chunk:
                    quiet_since = None
                    partial += chunk
                    if partial.endswith(b"\n"):
                        self._emit(partial)
                        partial = b""
                    continue
                exited = self.proc is not None and self.proc.poll() is not None
                if exited and quiet_since is None:
                    quiet_since = time.monotonic()
                if self._finished.is_set() or (quiet_since is not None and time.monotonic() - quiet_since > 1.0):
                    rest = log.read()
                    for raw in (partial + rest).splitlines(keepends=True):
                        self._emit(raw)
                    return
                time.sleep(0.05)

    def _emit(self, raw: bytes) -> None:
        self.lines += 1
        text = raw.decode("utf-8", errors="replace").rstrip("\r\n")
        for part in text.split("\r"):  # progress bars redraw with \r: each redraw is a line
            if part.strip() and self.on_line is not None:
                try:
                    self.on_line(part, self.lines)
                except Exception as exc:  # a bad sink must never stop the follower
                    self.sink_errors.append(f"{type(exc).__name__}: {exc}")

    def start_guard(self, record: Path | None = None) -> None:
        """(Re)start the guard process that stops the group if qwen-doctor dies; `record` is the run record
        it removes once the group is gone."""
        if self.proc is None or self.guard_grace is None:
            return
        self._end_guard()
        self.record_path = record or self.record_path
        self.guard = subprocess.Popen(
            [sys.executable, "-m", "doctor.deploy.guard", str(os.getpid()), str(self.proc.pid),
             str(self.guard_grace), str(self.record_path or "")],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            start_new_session=True, cwd="/", env={**os.environ, "PYTHONPATH": _package_root()})

    def _end_guard(self) -> None:
        if self.guard is not None and self.guard.poll() is None:
            self.guard.terminate()
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.guard.wait(5)
        self.guard = None

    def detach(self) -> None:
        """Leave the server running: no stop at exit, no guard, stop following its log."""
        self._end_guard()
        self._stopped = True
        self._finished.set()
        with contextlib.suppress(Exception):
            atexit.unregister(self.stop)

    def exit_code_within(self, timeout: float) -> int | None:
        """The server's exit code if it exits within `timeout` s (a dying server may still answer nothing
        for a moment before it is gone), else None."""
        if self.proc is None:
            return None
        with contextlib.suppress(subprocess.TimeoutExpired):
            return self.proc.wait(timeout=timeout)
        return None

    def wait_log_drained(self, timeout: float = 5.0) -> None:
        """Wait until every line the server wrote has been followed (after it exited)."""
        if self._reader is not None and self._reader is not threading.current_thread():
            self._reader.join(timeout)

    def remember_descendants(self) -> None:
        """Record the server's current descendants, so that stop() finds them even outside the group."""
        if not self.alive:
            return
        with contextlib.suppress(psutil.Error):
            for child in psutil.Process(self.proc.pid).children(recursive=True):
                self._seen.setdefault(child.pid, child)

    def survivors(self) -> list[psutil.Process]:
        """Processes of this server still running: group members and remembered descendants."""
        found: dict[int, psutil.Process] = {}
        if self.proc is None:
            return []
        pgid = self.proc.pid
        for p in list(self._seen.values()):
            with contextlib.suppress(psutil.Error):
                if p.is_running() and p.status() != psutil.STATUS_ZOMBIE:
                    found[p.pid] = p
        for p in psutil.process_iter(["pid"]):
            with contextlib.suppress(psutil.Error, ProcessLookupError):
                if p.pid != os.getpid() and os.getpgid(p.pid) == pgid and p.status() != psutil.STATUS_ZOMBIE:
                    found[p.pid] = p
        return list(found.values())

    def stop(self, grace: float = 15.0) -> str:
        """SIGTERM the group, wait up to `grace` s, SIGKILL what is left; return (and keep in `stop_how`)
        what happened: "stopped by qwen-doctor: ..." or "exited by itself with code N"."""
        if self.proc is None or self._stopped:
            return self.stop_how or "not running"
        t0 = time.monotonic()
        self.stop_how = self._stop(grace)
        self.stop_seconds = time.monotonic() - t0
        return self.stop_how

    def _stop(self, grace: float) -> str:
        assert self.proc is not None
        self._stopped = True
        if self.on_stop is not None:
            with contextlib.suppress(Exception):
                self.on_stop()
        self.remember_descendants()
        started = time.monotonic()
        self.exited_by_itself = self.proc.poll()
        if self.exited_by_itself is None or self.survivors():
            self._signal_all(signal.SIGTERM)
        how = "exited on SIGTERM"
        while time.monotonic() - started < grace:
            self.proc.poll()
            if self.proc.returncode is not None and not self.survivors():
                break
            time.sleep(0.1)
        else:
            self._signal_all(signal.SIGKILL)
            how = f"killed with SIGKILL after {grace:g} s"
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout=5)
            gone_by = time.monotonic() + 5
            while self.survivors() and time.monotonic() < gone_by:
                time.sleep(0.1)
        self._finished.set()
        self.wait_log_drained(2.0)
        self._end_guard()
        with contextlib.suppress(Exception):
            atexit.unregister(self.stop)
        if self.exited_by_itself is not None:
            left = "" if how == "exited on SIGTERM" else f"; its leftovers {how}"
            return f"exited by itself with code {self.exited_by_itself}{left}"
        return f"stopped by qwen-doctor: {how} in {time.monotonic() - started:.1f} s"

    def _signal_all(self, sig: signal.Signals) -> None:
        assert self.proc is not None
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, sig)
        for p in self.survivors():
            with contextlib.suppress(psutil.Error):
                p.send_signal(sig)


def _package_root() -> str:
    """The directory holding the `doctor` package, so the guard imports this very copy."""
    return str(Path(__file__).resolve().parents[2])


@contextlib.contextmanager
def supervised(server: ServerProcess, keep: Callable[[], bool] = lambda: False,
               grace: float = 15.0) -> Iterator[ServerProcess]:
    """Run the block with SIGINT/SIGTERM turned into exceptions; stop the server on the way out
    unless `keep()` says to leave it running (only after a successful block)."""
    if threading.current_thread() is not threading.main_thread():
        raise RuntimeError("supervised() must run in the main thread (it installs signal handlers)")

    def on_term(signum: int, frame: object) -> None:
        raise Terminated(f"received signal {signum}")

    previous = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    ok = False
    try:
        yield server
        ok = True
    finally:
        for s in previous:  # a second Ctrl-C (or a SIGHUP) must not interrupt the cleanup
            signal.signal(s, signal.SIG_IGN)
        try:
            if not (ok and keep()):
                server.stop(grace)
        finally:
            for s, handler in previous.items():
                signal.signal(s, handler)
