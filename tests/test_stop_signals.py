"""SIGTERM and SIGHUP at any moment of a command end it like Ctrl-C does (issue 23): one line on stderr, exit
128 + the signal's number (143, 129), never a traceback; an -o file is whole or absent and no temporary file is
left beside it. A SIGHUP the caller ignored (`nohup`) stays ignored: the command runs to its own end."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from doctor.stop_signals import LINES, exit_code

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = Path(sys.executable).with_name("qwen-doctor")
BUNDLE = ROOT / "tests/fixtures/h200.json"
pytestmark = pytest.mark.skipif(not SCRIPT.exists(), reason="the qwen-doctor command is not installed")


def _caller_dispositions(ignored: tuple[int, ...] = ()) -> None:
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, signal.SIG_IGN if signum in ignored else signal.SIG_DFL)


def _signalled_run(folder: Path, signum: int, delay: float, ignored: tuple[int, ...] = ()) -> tuple[int, str]:
    proc = subprocess.Popen([str(SCRIPT), "check", "--from", str(BUNDLE), "--format", "json", "-o",
                             str(folder / "r.json")], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            preexec_fn=lambda: _caller_dispositions(ignored))
    time.sleep(delay)
    proc.send_signal(signum)
    _, err = proc.communicate(timeout=120)
    return proc.returncode, err.decode("utf-8", "replace")


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP], ids=["SIGTERM", "SIGHUP"])
def test_a_stopping_signal_at_any_moment_is_one_line_and_its_exit_code_and_the_output_whole_or_absent(
        tmp_path: Path, signum: int) -> None:
    started = time.monotonic()
    finished = subprocess.run([str(SCRIPT), "check", "--from", str(BUNDLE)], capture_output=True, timeout=120)
    whole = time.monotonic() - started
    pick = random.Random(int(signum))
    endings = []
    for index in range(8):
        folder = tmp_path / str(index)
        folder.mkdir()
        code, err = _signalled_run(folder, signum, pick.uniform(0.02, whole))
        assert "Traceback" not in err and "internal error" not in err, err
        if code == exit_code(signum):
            assert err.splitlines()[-1] == LINES[signum] and err.count("qwen-doctor:") == 1, err
        else:  # the command ended first: its own code, its own file
            assert code == finished.returncode, (code, err)
        left = sorted(path.name for path in folder.iterdir())
        assert left in ([], ["r.json"]), left
        if left:
            assert json.loads((folder / "r.json").read_text())["schema"] == "qwen-doctor.report"
        endings.append(code)
    assert exit_code(signum) in endings, endings


def test_a_sighup_the_caller_ignored_does_not_stop_the_command(tmp_path: Path) -> None:
    expected = subprocess.run([str(SCRIPT), "check", "--from", str(BUNDLE)], capture_output=True, timeout=120)
    code, err = _signalled_run(tmp_path, signal.SIGHUP, 0.3, ignored=(signal.SIGHUP,))
    assert code == expected.returncode and LINES[signal.SIGHUP] not in err, (code, err)
    assert json.loads((tmp_path / "r.json").read_text())["schema"] == "qwen-doctor.report"


def test_python_m_doctor_ends_a_sigterm_the_same_way(tmp_path: Path) -> None:
    proc = subprocess.Popen([sys.executable, "-m", "doctor", "explain", str(ROOT / "tests/data/logs/nccl-525-shm.log")],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=ROOT,
                            env={**os.environ, "PYTHONPATH": str(ROOT)}, preexec_fn=_caller_dispositions)
    time.sleep(0.3)
    proc.send_signal(signal.SIGTERM)
    err = proc.communicate(timeout=120)[1].decode()
    assert (proc.returncode, err.splitlines()[-1:]) in [(143, [LINES[signal.SIGTERM]]), (0, []), (1, [])], err


# A command whose object's finalizer swallows a SIGTERM, as a signal landing in a finalizer is raised there.
SWALLOWING = (
    "import signal, time\n"
    "from doctor.cli import interrupt\n"
    "interrupt.raise_interrupt()\n"
    "class Closing:\n"
    "    def __del__(self):\n"
    "        raise interrupt.Signalled(signal.SIGTERM)\n"
)


def _swallowing(rest: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", SWALLOWING + rest], capture_output=True, text=True, timeout=60,
                          cwd=ROOT)


def test_a_signal_a_finalizer_swallowed_is_silent_and_still_stops_the_command_that_goes_on() -> None:
    done = _swallowing(
        "try:\n"
        "    Closing()\n"
        "    time.sleep(10)  # the command's next step\n"
        "    print('the command went on')\n"
        "except KeyboardInterrupt as exc:\n"
        "    print('stopped', interrupt.signum_of(exc))\n"
    )
    assert done.stdout.splitlines() == [f"stopped {int(signal.SIGTERM)}"]
    assert done.stderr == ""  # no "Exception ignored in ..." traceback


def test_a_swallowed_signal_whose_redelivery_meets_another_handler_is_raised_when_the_command_returns() -> None:
    done = _swallowing(
        "signal.signal(signal.SIGTERM, lambda *_: None)  # as if a library took the handler over\n"
        "Closing()\n"
        "time.sleep(0.5)\n"
        "print('the command went on')\n"
        "try:\n"
        "    interrupt.raise_swallowed()\n"
        "except interrupt.Interrupted as exc:\n"
        "    print('raised again', exc.signum)\n"
    )
    assert done.stdout.splitlines() == ["the command went on", f"raised again {int(signal.SIGTERM)}"]
    assert done.stderr == ""
