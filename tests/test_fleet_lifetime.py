"""Fleet runs keep their promises: an honest deadline, node garbage as per-node errors, no orphaned runner.

A stub runner (tests/support/stub_fleet_runner.py) stands in for the Ray / Spark runner: no engine is needed.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from doctor.fleet import gather

ROOT = Path(__file__).resolve().parents[1]
STUB = ("json", "tests.support.stub_fleet_runner", "--master")
WRAPPER = (
    "import sys\n"
    "from doctor.fleet import gather\n"
    f"gather.RUNNERS['spark'] = {STUB!r}\n"
    "from doctor.cli.main import main\n"
    "main(sys.argv[1:])\n"
)


def _gone(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return True
    return state in ("Z", "X")


def _wait_gone(pids: list[int], seconds: float = 10.0) -> list[int]:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and not all(_gone(p) for p in pids):
        time.sleep(0.05)
    return [p for p in pids if not _gone(p)]


def _start_check(tmp_path: Path, mode: str, node_timeout: float) -> tuple[subprocess.Popen[str], Path]:
    pids = tmp_path / "pids"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "QD_STUB_MODE": mode, "QD_STUB_PIDS": str(pids)}
    proc = subprocess.Popen([sys.executable, "-c", WRAPPER, "check", "--spark", "local[1]", "--only", "QD-FLEET-001",
                             "--format", "json", "--node-timeout", str(node_timeout), "--timeout", "2"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=ROOT,
                            preexec_fn=_default_stopping_signals)
    return proc, pids


def _default_stopping_signals() -> None:
    """In the child: SIGINT / SIGTERM / SIGHUP at their default action, as from a terminal. `main(argv)` leaves the
    handlers to the program that embeds it, and a suite started in the background (`cmd &`, nohup) would otherwise
    hand the child SIGINT / SIGHUP ignored."""
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, signal.SIG_DFL)


def _runner_pids(pids: Path, proc: subprocess.Popen[str]) -> list[int]:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and proc.poll() is None:
        if pids.exists() and len(pids.read_text().split()) == 2:
            return [int(p) for p in pids.read_text().split()]
        time.sleep(0.05)
    raise AssertionError(f"stub runner did not start: {proc.communicate(timeout=10)}")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
@pytest.mark.parametrize("signum,code", [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_signalling_check_kills_the_runner_and_its_children(tmp_path: Path, signum: int, code: int):
    proc, pid_file = _start_check(tmp_path, "hang", node_timeout=120)
    runner_pids = _runner_pids(pid_file, proc)
    proc.send_signal(signum)
    _, stderr = proc.communicate(timeout=30)
    assert proc.returncode == code
    assert "Traceback" not in stderr and len(stderr.strip().splitlines()) <= 1
    assert _wait_gone(runner_pids) == []


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux only")
def test_runner_dies_with_a_parent_killed_outright(tmp_path: Path):
    proc, pid_file = _start_check(tmp_path, "hang", node_timeout=120)
    runner, _grandchild = _runner_pids(pid_file, proc)
    proc.kill()  # SIGKILL: no handler, no cleanup; only the parent-death signal is left
    proc.wait(timeout=10)
    assert _wait_gone([runner]) == []


def test_the_deadline_is_node_timeout_not_more(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setitem(gather.RUNNERS, "spark", STUB)
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    monkeypatch.setenv("QD_STUB_MODE", "hang")
    monkeypatch.setenv("QD_STUB_PIDS", str(tmp_path / "pids"))
    t0 = time.monotonic()
    fleet = gather.gather("spark", "local[1]", node_timeout_s=3.0, probe_timeout_s=1.0)
    took = time.monotonic() - t0
    assert fleet["status"] == "timeout" and "--node-timeout 3 s" in fleet["error"]
    assert took < 3.0 + 1.5  # the deadline plus the kill and the temp dir cleanup, nothing hidden
    assert _wait_gone([int(p) for p in (tmp_path / "pids").read_text().split()]) == []


def test_help_states_the_deadline_covers_the_whole_run():
    from click.testing import CliRunner

    from doctor.cli.main import cli

    text = " ".join(CliRunner().invoke(cli, ["check", "--help"]).output.split())
    assert "Deadline of the whole --ray / --spark run" in text


def test_a_node_returning_garbage_is_that_nodes_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setitem(gather.RUNNERS, "spark", STUB)
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    monkeypatch.setenv("QD_STUB_MODE", "garbage")
    monkeypatch.setenv("QD_STUB_PIDS", str(tmp_path / "pids"))
    fleet = gather.gather("spark", "local[1]", node_timeout_s=60.0, probe_timeout_s=1.0)
    by_host = {n["hostname"]: n for n in fleet["nodes"]}
    assert by_host["good"]["status"] == "ok" and by_host["good"]["facts"]
    assert by_host["bad"]["status"] == "error" and by_host["bad"]["facts"] is None
    assert 'nvml.gpus[2].memory.total: expected integer, got "lots"' in by_host["bad"]["error"]
    assert by_host["worse"]["status"] == "error" and "schema" in by_host["worse"]["error"]


def test_garbage_nodes_are_per_node_failures_in_the_report(tmp_path: Path):
    proc, _ = _start_check(tmp_path, "garbage", node_timeout=60)
    out, err = proc.communicate(timeout=120)
    results = json.loads(out)["results"]
    assert proc.returncode == 1, err
    assert sorted(r["status"] for r in results) == ["fail", "fail", "ok"]
    assert not any("crashed" in r["summary"] for r in results)
    assert any("memory.total" in r["summary"] for r in results if r["status"] == "fail")


def test_a_fleet_the_checks_cannot_read_is_a_fleet_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setitem(gather.RUNNERS, "spark", STUB)
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    monkeypatch.setenv("QD_STUB_MODE", "broken")
    monkeypatch.setenv("QD_STUB_PIDS", str(tmp_path / "pids"))
    fleet = gather.gather("spark", "local[1]", node_timeout_s=60.0, probe_timeout_s=1.0)
    assert fleet["status"] == "error" and fleet["nodes"] == []
    assert "fleet.nodes: expected a list" in fleet["error"]
