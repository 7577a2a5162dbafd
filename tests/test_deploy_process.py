"""Process-group supervision: the whole group goes on stop, SIGKILL after the grace period, clear errors."""

from __future__ import annotations

import os
import signal
import socket
import sys
import time

import psutil
import pytest

from doctor.deploy.ports import PortInUse, ensure_port_free, free_port
from doctor.deploy.process import LaunchFailed, ServerProcess, supervised
from doctor.outfile import OutputError
from tests.support.deploy_helpers import kill_all, wait_gone

SPAWN_GRANDCHILD = ("import subprocess, sys, time; subprocess.Popen([sys.executable, '-c', 'import time; "
                    "time.sleep(600)']); print('child up', flush=True); time.sleep(600)")
IGNORE_TERM = ("import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); print('stubborn', flush=True); "
               "time.sleep(600)")


def started(tmp_path, code: str, lines: list[str] | None = None) -> ServerProcess:
    sink = (lambda line, n: lines.append(line)) if lines is not None else None
    server = ServerProcess([sys.executable, "-c", code], {}, tmp_path / "server.log", on_line=sink)
    server.start()
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and not (tmp_path / "server.log").read_text():
        time.sleep(0.05)
    return server


def test_stop_takes_down_the_server_and_its_grandchildren(tmp_path) -> None:
    lines: list[str] = []
    server = started(tmp_path, SPAWN_GRANDCHILD, lines)
    family = [psutil.Process(server.pid), *psutil.Process(server.pid).children(recursive=True)]
    try:
        assert len(family) == 2
        assert os.getpgid(server.pid) == server.pid != os.getpgid(0)
        how = server.stop(grace=10)
        assert how.startswith("stopped by qwen-doctor: exited on SIGTERM")
        assert wait_gone(family, 5) == []
        assert server.survivors() == []
        assert lines == ["child up"]
        assert (tmp_path / "server.log").read_text() == "child up\n"
    finally:
        kill_all(family)


def test_a_server_ignoring_sigterm_is_killed_after_the_grace_period(tmp_path) -> None:
    server = started(tmp_path, IGNORE_TERM)
    proc = psutil.Process(server.pid)
    try:
        t0 = time.monotonic()
        how = server.stop(grace=1.0)
        assert "SIGKILL after 1 s" in how and time.monotonic() - t0 < 8
        assert wait_gone([proc], 5) == []
    finally:
        kill_all([proc])


def test_stop_is_idempotent_and_harmless_before_start(tmp_path) -> None:
    server = ServerProcess([sys.executable, "-c", "pass"], {}, tmp_path / "log")
    assert server.stop() == "not running"
    server.start()
    server.proc.wait(10)
    assert server.stop(grace=2) == "exited by itself with code 0"
    assert server.stop() == "exited by itself with code 0"  # a second stop changes nothing


def test_a_missing_interpreter_is_a_clear_launch_error(tmp_path) -> None:
    server = ServerProcess([str(tmp_path / "no-such-python"), "-m", "vllm"], {}, tmp_path / "log")
    with pytest.raises(LaunchFailed, match="cannot start .*no-such-python"):
        server.start()


def test_supervised_stops_the_server_when_the_block_raises(tmp_path) -> None:
    server = ServerProcess([sys.executable, "-c", SPAWN_GRANDCHILD], {}, tmp_path / "log")
    before = signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)
    with pytest.raises(RuntimeError, match="boom"):
        with supervised(server, grace=5):
            server.start()
            time.sleep(0.5)
            family = [psutil.Process(server.pid), *psutil.Process(server.pid).children(recursive=True)]
            raise RuntimeError("boom")
    assert wait_gone(family, 5) == []
    assert (signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)) == before


def test_supervised_leaves_a_kept_server_running(tmp_path) -> None:
    server = ServerProcess([sys.executable, "-c", "import time; time.sleep(600)"], {}, tmp_path / "log")
    try:
        with supervised(server, keep=lambda: True):
            server.start()
        assert server.alive
    finally:
        server._stopped = False
        server.stop(grace=2)
    assert not server.alive


def test_a_port_in_use_is_refused_before_anything_starts() -> None:
    port = free_port()
    with socket.socket() as s:
        s.bind(("127.0.0.1", port))
        s.listen()
        with pytest.raises(PortInUse, match=f"port {port} on 127.0.0.1 is already in use"):
            ensure_port_free("127.0.0.1", port)
    ensure_port_free("127.0.0.1", port)


def test_a_port_whose_last_connections_are_in_time_wait_is_free() -> None:
    """A redeploy on the same port right after a stop must not be refused (uvicorn binds with SO_REUSEADDR)."""
    port = free_port()
    with socket.socket() as server:
        server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        server.bind(("127.0.0.1", port))
        server.listen()
        client = socket.create_connection(("127.0.0.1", port))
        conn, _ = server.accept()
        conn.close()  # the server side closes first: its end goes to TIME_WAIT
        client.close()
    ensure_port_free("127.0.0.1", port)


def test_an_existing_log_file_is_refused_and_kept_as_it_was(tmp_path) -> None:
    log = tmp_path / "server.log"
    log.write_text("yesterday's boot, the only copy\n")
    server = ServerProcess([sys.executable, "-c", "print('new')"], {}, log)
    with pytest.raises(OutputError, match="refusing to overwrite server log .*the file exists"):
        server.start()
    assert log.read_text() == "yesterday's boot, the only copy\n" and server.proc is None


def test_a_log_path_that_is_a_symlink_is_never_written_through(tmp_path) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    (tmp_path / "server.log").symlink_to(victim)
    with pytest.raises(OutputError):
        ServerProcess([sys.executable, "-c", "print('new')"], {}, tmp_path / "server.log").start()
    assert victim.read_text() == "precious\n"
