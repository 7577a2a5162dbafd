"""The fault campaign's fork server (bench/forkserver.py) runs a case as `python -m doctor` would: the same exit
code and the same stderr, for plain runs, bad input, closed streams, a deleted current folder and a full disk."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

import fault_variants as campaign  # noqa: E402

CASES = {
    "version": (["--version"], ()),
    "bad input": (["plan", "--gpus", "NOPE"], ()),
    "check a bundle": (["check", "--from", str(ROOT / "tests/fixtures/h200.json")], ()),
    "closed stdout": (["profiles", "list"], (1,)),
    "closed stderr": (["plan", "--gpus", "NOPE"], (2,)),
    "closed stdin": (["explain", "-"], (0,)),
}


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    started = campaign.ForkServer(ROOT, tmp_path_factory.mktemp("fork"))
    yield started
    started.close()


def _own_process(args: list[str], closed: tuple[int, ...], out: Path) -> subprocess.CompletedProcess:
    with open(out / "p-out", "w+b") as stdout, open(out / "p-err", "w+b") as stderr:
        def close() -> None:
            for fd in closed:
                os.close(fd)
        code = subprocess.run([sys.executable, "-m", "doctor", *args], stdin=subprocess.DEVNULL, stdout=stdout,
                              stderr=stderr, cwd=ROOT, timeout=120, preexec_fn=close).returncode
        stdout.seek(0)
        stderr.seek(0)
        return subprocess.CompletedProcess(args, code, stdout.read(), stderr.read())


@pytest.mark.parametrize("name", list(CASES))
def test_a_forked_case_ends_as_its_own_process_would(server, tmp_path: Path, name: str) -> None:
    args, closed = CASES[name]
    forked = server.run(args, {**os.environ, "NO_COLOR": "1"}, ROOT, closed, False, tmp_path)
    alone = _own_process(args, closed, tmp_path)
    assert (forked.returncode, forked.stderr) == (alone.returncode, alone.stderr)
    assert forked.stdout == alone.stdout or name == "check a bundle"  # its report names its own timing


def test_a_forked_case_in_a_deleted_current_folder_refuses_a_relative_output(server, tmp_path: Path) -> None:
    gone = tmp_path / "gone"
    gone.mkdir()
    forked = server.run(["plan", "--gpus", "1xH200", "-o", "p.json"], {**os.environ}, gone, (), True, tmp_path)
    assert forked.returncode == 2 and forked.stderr.count(b"\n") == 1 and b"Traceback" not in forked.stderr
    assert not gone.exists()


def test_which_cases_need_a_process_of_their_own() -> None:
    assert campaign.ForkServer.serves(campaign.Case("plain", "x", ["plan"]))
    for case in (campaign.Case("locale", "x", ["plan"], env={"LC_ALL": "C"}),
                 campaign.Case("encoding", "x", ["plan"], env={"PYTHONIOENCODING": "ascii"}),
                 campaign.Case("cache", "x", ["plan"], env={"QWEN_DOCTOR_CACHE": "/dev/null"}),
                 campaign.Case("tty", "x", ["plan"], tty=True), campaign.Case("pipe", "x", ["plan"], shell="| head"),
                 campaign.Case("signal", "x", ["plan"], stop=(15, 0.1)), campaign.Case("launcher", "x", ["plan"], launcher=True)):
        assert not campaign.ForkServer.serves(case), case.name
