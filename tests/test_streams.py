"""Closed, failing and narrow-charset standard streams, NO_COLOR / --color, escape sequences on stderr and
Ctrl-C: none of them changes what a command does or how it ends (issue 23, item 4)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent / "fixtures"
BUNDLE = FIXTURES / "h200.json"
SCRIPT = Path(sys.executable).with_name("qwen-doctor")


def _run(args: list[str], env: dict[str, str] | None = None, **kw) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-m", "doctor", *args], env={**os.environ, **(env or {})},
                          capture_output=kw.pop("capture_output", True), timeout=120, **kw)


def _closed(fd: int) -> None:
    os.close(fd)


def _run_closed(args: list[str], fds: tuple[int, ...]) -> int:
    """Exit code of the command run with the descriptors `fds` closed (as `cmd >&- 2>&- <&-` does)."""
    proc = subprocess.run([sys.executable, "-m", "doctor", *args], timeout=120,
                          preexec_fn=lambda: [_closed(fd) for fd in fds])
    return proc.returncode


@pytest.mark.parametrize("fds", [(0,), (1,), (2,), (0, 1, 2)])
def test_a_closed_standard_stream_keeps_the_exit_code_and_the_output_files(tmp_path: Path, fds) -> None:
    report = tmp_path / "r.json"
    args = ["check", "--from", str(BUNDLE), "-o", str(report)]
    expected = _run(args).returncode
    assert expected in (0, 1)
    report.unlink()
    assert _run_closed(args, fds) == expected
    assert json.loads(report.read_text())["results"]


def test_a_stdout_that_cannot_be_written_is_one_line_and_exit_2_not_a_success(tmp_path: Path) -> None:
    """A full disk lost what stdout held (`collect > bundle.json`): exit 0 would tell CI it was written. The
    -o files are written all the same."""
    args = ["check", "--from", str(BUNDLE), "-o", str(tmp_path / "r.md")]
    with open("/dev/full", "wb") as full:
        proc = subprocess.run([sys.executable, "-m", "doctor", *args], stdout=full, stderr=subprocess.PIPE,
                              timeout=120)
    last = proc.stderr.decode().splitlines()[-1]
    assert proc.returncode == 2 and last.startswith("qwen-doctor: error: cannot write to stdout: No space left"), last
    assert (tmp_path / "r.md").exists()


def test_a_reader_that_stops_early_does_not_change_the_exit_code() -> None:
    args = ["check", "--from", str(BUNDLE)]
    expected = _run(args).returncode
    proc = subprocess.Popen([sys.executable, "-m", "doctor", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    proc.stdout.read(1)
    proc.stdout.close()
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == expected and b"Traceback" not in err


@pytest.mark.parametrize("env", [{"PYTHONIOENCODING": "ascii"}, {"PYTHONIOENCODING": "latin-1"},
                                 {"LC_ALL": "C", "PYTHONCOERCECLOCALE": "0", "PYTHONUTF8": "0",
                                  "PYTHONIOENCODING": ""}])
def test_output_is_escaped_not_crashed_in_a_narrow_charset(env: dict[str, str]) -> None:
    proc = _run(["check", "--from", str(BUNDLE)], env=env)
    assert proc.returncode in (0, 1), proc.stderr
    assert b"UnicodeEncodeError" not in proc.stderr and b"internal error" not in proc.stderr
    proc.stdout.decode("ascii" if env.get("PYTHONIOENCODING") == "ascii" else "latin-1")


def test_an_escape_sequence_in_a_file_name_does_not_reach_stderr_raw() -> None:
    proc = _run(["check", "--from", "a\x1b[8mhidden.json"])
    assert proc.returncode == 2
    assert b"\x1b" not in proc.stderr and b"hidden.json" in proc.stderr


class _Tty:
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize(("choice", "no_color", "expected"), [
    ("auto", None, True), ("auto", "1", False), ("never", None, False), ("always", "1", True)])
def test_color_follows_the_flag_then_no_color_then_the_terminal(monkeypatch, choice, no_color, expected) -> None:
    from doctor.textsafe import use_color

    if no_color is None:
        monkeypatch.delenv("NO_COLOR", raising=False)
    else:
        monkeypatch.setenv("NO_COLOR", no_color)
    assert use_color(choice, _Tty()) is expected


def test_color_always_paints_a_pipe_and_never_leaves_it_plain() -> None:
    args = ["check", "--from", str(BUNDLE)]
    assert b"\x1b[" in _run([*args, "--color", "always"]).stdout
    assert b"\x1b[" not in _run([*args, "--color", "never"]).stdout


