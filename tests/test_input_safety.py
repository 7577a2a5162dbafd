"""Inputs are bounded: documents (bundle, config.json, profile, lint file) must be regular files under a size cap,
checked before they are opened, so a FIFO never blocks and /dev/zero is never read; logs may be streams."""

from __future__ import annotations

import gzip
import json
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from doctor import safeio
from doctor.safeio import InputError, read_bytes
from tests.conftest import FIXTURES
from tests.test_cli_check import ROOT, qd
from tests.test_output_safety import assert_refused, snapshot

OOM = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB"


def sparse(path: Path, size: int) -> Path:
    """A file of `size` bytes that takes no disk space (its size alone must be enough to refuse it)."""
    with open(path, "wb") as fh:
        fh.truncate(size)
    return path


@pytest.fixture
def nodes(tmp_path: Path) -> Path:
    os.mkfifo(tmp_path / "fifo")
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(tmp_path / "sock"))
    sock.close()
    return tmp_path


@pytest.mark.parametrize("source, why", [
    ("fifo", "it is a FIFO (named pipe), not a regular file"),
    ("sock", "it is a socket, not a regular file"),
    ("/dev/zero", "it is a character device, not a regular file"),
    ("/dev/null", "it is a character device, not a regular file"),
])
def test_check_from_refuses_non_files_at_once_without_opening_them(nodes: Path, source: str, why: str):
    started = time.monotonic()
    done = qd("check", "--from", source, cwd=nodes)
    assert_refused(done, why)
    assert time.monotonic() - started < 30, "a FIFO without a writer must not block"


def test_a_bundle_over_the_cap_is_refused_by_its_size(tmp_path: Path):
    big = sparse(tmp_path / "big.json", safeio.BUNDLE_MAX_BYTES + 1)
    assert_refused(qd("check", "--from", str(big)), "larger than the 64 MiB limit for a bundle")


def test_profile_config_and_lint_inputs_are_bounded_and_regular_only(nodes: Path):
    os.mkfifo(nodes / "p.yaml")
    sparse(nodes / "big.yaml", safeio.PROFILE_MAX_BYTES + 1)
    (nodes / "fifo-model").mkdir()
    os.mkfifo(nodes / "fifo-model" / "config.json")
    (nodes / "big-model").mkdir()
    sparse(nodes / "big-model" / "config.json", safeio.CONFIG_MAX_BYTES + 1)
    sparse(nodes / "big.sh", safeio.LINT_MAX_BYTES + 1)
    before = snapshot(nodes)
    cases = [
        (["check", "--from", str(FIXTURES / "h200.json"), "--profile", "p.yaml"], "it is a FIFO"),
        (["deploy", "--profile", "p.yaml", "--dry-run"], "it is a FIFO"),
        (["check", "--from", str(FIXTURES / "h200.json"), "--profile", "big.yaml"], "larger than the 1 MiB limit"),
        (["plan", "--gpus", "1xH200", "--model", "fifo-model"], "it is a FIFO"),
        (["plan", "--gpus", "1xH200", "--model", "big-model"], "larger than the 4 MiB limit"),
        (["lint", "fifo"], "it is a FIFO"),
        (["lint", "big.sh"], "larger than the 4 MiB limit"),
    ]
    for argv, why in cases:
        assert_refused(qd(*argv, cwd=nodes), why)
    assert snapshot(nodes) == before


def test_read_bytes_stops_one_byte_past_the_cap(tmp_path: Path):
    path = tmp_path / "f"
    path.write_bytes(b"x" * 100)
    assert read_bytes(path, "thing", 100) == b"x" * 100
    with pytest.raises(InputError, match="larger than the 99 bytes limit for a thing"):
        read_bytes(path, "thing", 99)


def explain_argv(*args: str) -> list[str]:
    return [sys.executable, "-m", "doctor", "explain", *args]


def test_explain_reads_process_substitution_stdin_and_a_fifo(tmp_path: Path):
    log = tmp_path / "server.log"
    log.write_text(f"INFO start\n{OOM}\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    command = " ".join(explain_argv("<(cat server.log)"))
    done = subprocess.run(["bash", "-c", command], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 1, done.stderr
    assert "QD-R-TORCH-CUDA-OOM" in done.stdout
    with open(log, "rb") as stdin:
        done = subprocess.run(explain_argv("/dev/stdin"), stdin=stdin, env=env, capture_output=True, timeout=60)
    assert done.returncode == 1, done.stderr
    fifo = tmp_path / "pipe.log"
    os.mkfifo(fifo)
    feeder = threading.Thread(target=lambda: fifo.write_text(log.read_text()))
    feeder.start()
    done = subprocess.run(explain_argv(str(fifo)), env=env, capture_output=True, text=True, timeout=60)
    feeder.join(timeout=10)
    assert done.returncode == 1, done.stderr
    assert "QD-R-TORCH-CUDA-OOM" in done.stdout


def test_explain_reads_a_gzip_stream(tmp_path: Path):
    import gzip

    log = tmp_path / "server.log.gz"
    log.write_bytes(gzip.compress(f"{OOM}\n".encode()))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(["bash", "-c", " ".join(explain_argv("<(cat server.log.gz)"))], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 1 and "QD-R-TORCH-CUDA-OOM" in done.stdout, done.stderr


@pytest.mark.parametrize("source, why", [
    ("/dev/zero", "not a text log (its first 65,536 bytes are all NUL"),
    ("sock", "is a socket, not a log file or stream"),
])
def test_explain_refuses_binary_streams_and_sockets(nodes: Path, source: str, why: str):
    assert_refused(qd("explain", source, cwd=nodes), why)


def test_explain_of_dev_null_is_an_empty_log_and_dev_null_stays_a_device():
    done = qd("explain", "/dev/null")
    assert done.returncode == 0, done.stderr
    assert "No known errors" in done.stdout
    assert os.path.exists("/dev/null") and not os.path.isfile("/dev/null")


def test_check_log_accepts_a_pipe(tmp_path: Path):
    shutil.copy(FIXTURES / "h200.json", tmp_path / "b.json")
    (tmp_path / "server.log").write_text(f"{OOM}\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    command = f"{sys.executable} -m doctor check --from b.json --format json --log <(cat server.log)"
    done = subprocess.run(["bash", "-c", command], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 1, done.stderr
    assert "QD-R-TORCH-CUDA-OOM" in done.stdout


HEADER = '{"schema": "qwen-doctor.facts", "schema_version": 1, '


@pytest.mark.parametrize("content, why", [
    ("[" * 100_000 + "]" * 100_000, "nested deeper than 64 levels"),
    (HEADER + '"x": ' + "[" * 70 + "]" * 70 + "}", "nested deeper than 64 levels"),
    (HEADER + '"x": ' + "1" * 5000 + "}", "an integer with more than 100 digits"),
    (HEADER + '"x": 1e999}', "number 1e999 is out of range"),
    (HEADER + '"x": NaN}', "NaN is not a JSON number"),
])
def test_deep_or_huge_json_is_exit_2_for_bundles_and_model_configs(tmp_path: Path, content: str, why: str):
    (tmp_path / "b.json").write_text(content)
    (tmp_path / "model").mkdir()
    (tmp_path / "model" / "config.json").write_text(content)
    before = snapshot(tmp_path)
    assert_refused(qd("check", "--from", "b.json", cwd=tmp_path), why)
    assert_refused(qd("plan", "--gpus", "1xH200", "--model", "model", cwd=tmp_path), why)
    assert snapshot(tmp_path) == before


def test_a_fifo_that_nobody_writes_to_is_refused_after_a_bounded_wait(tmp_path: Path, monkeypatch):
    from remedies import reader
    from remedies.errors import LogReadError

    os.mkfifo(tmp_path / "idle.log")
    monkeypatch.setattr(reader, "FIFO_WRITER_WAIT_S", 0.3)
    started = time.monotonic()
    with pytest.raises(LogReadError, match="a FIFO that nobody writes to"):
        with reader.open_log(tmp_path / "idle.log"):
            pass
    assert time.monotonic() - started < 10


def test_a_fifo_whose_writer_starts_late_is_still_read(tmp_path: Path):
    from remedies import reader

    fifo = tmp_path / "late.log"
    os.mkfifo(fifo)

    def late_writer() -> None:
        time.sleep(0.5)
        with open(fifo, "w") as fh:
            fh.write(f"{OOM}\n")

    writer = threading.Thread(target=late_writer)
    writer.start()
    with reader.open_log(fifo) as stream:
        assert stream.read() == f"{OOM}\n".encode()
    writer.join(timeout=10)


BOOT = FIXTURES / "h200-rehearsal"


def _plan_section(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode in (0, 1), done.stderr
    return json.dumps(json.loads(done.stdout)["sections"]["plan"], sort_keys=True)


@pytest.mark.parametrize("log", ["vllm-bf16-lm-only.log", "sglang-bf16-vision.log"])
def test_plan_from_log_reads_a_pipe_stdin_and_gzip_like_the_file(tmp_path: Path, log: str):
    """The source is read once, as explain reads logs: `<(cmd)` is not consumed by a first sniffing read."""
    shutil.copy(BOOT / log, tmp_path / "boot.log")
    (tmp_path / "boot.log.gz").write_bytes(gzip.compress((BOOT / log).read_bytes()))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    plan = f"{sys.executable} -m doctor plan --format json --from-log"
    expected = _plan_section(qd("plan", "--format", "json", "--from-log", "boot.log", cwd=tmp_path))
    for source in ("<(cat boot.log)", "- < boot.log", "boot.log.gz"):
        done = subprocess.run(["bash", "-c", f"{plan} {source}"], cwd=tmp_path, env=env, capture_output=True,
                              text=True, timeout=60)
        assert _plan_section(done) == expected, source


def test_plan_from_log_gives_up_on_a_fifo_nobody_writes_to_and_refuses_a_directory(tmp_path: Path, monkeypatch):
    from doctor.planner.bootlog import read_log_text
    from doctor.planner.errors import PlanInputError
    from remedies import reader

    os.mkfifo(tmp_path / "idle.log")
    monkeypatch.setattr(reader, "FIFO_WRITER_WAIT_S", 0.3)
    with pytest.raises(PlanInputError, match="--from-log .*idle.log: a FIFO that nobody writes to"):
        read_log_text(str(tmp_path / "idle.log"))
    assert_refused(qd("plan", "--gpus", "1xH200", "--from-log", str(tmp_path)), "is a directory, not a log file")


def test_a_gzipped_bundle_is_checked_like_the_plain_one_and_broken_gzip_is_one_line(tmp_path: Path):
    plain = (FIXTURES / "h200.json").read_bytes()
    (tmp_path / "b.json.gz").write_bytes(gzip.compress(plain))
    (tmp_path / "cut.json.gz").write_bytes(gzip.compress(plain)[:300])
    (tmp_path / "fake.json.gz").write_bytes(b"\x1f\x8b not gzip at all")
    done = qd("check", "--from", str(FIXTURES / "h200.json"), "--no-plugins", "--format", "json")
    unzipped = qd("check", "--from", "b.json.gz", "--no-plugins", "--format", "json", cwd=tmp_path)
    assert unzipped.returncode == done.returncode, unzipped.stderr
    assert [r["status"] for r in json.loads(unzipped.stdout)["results"]] == \
        [r["status"] for r in json.loads(done.stdout)["results"]]
    assert_refused(qd("check", "--from", "cut.json.gz", cwd=tmp_path), "truncated gzip data")
    assert_refused(qd("check", "--from", "fake.json.gz", cwd=tmp_path), "corrupt gzip data")


def test_a_bundle_that_is_not_utf8_names_the_byte(tmp_path: Path):
    (tmp_path / "b.json").write_bytes(b'{"x": "caf\xe9"}')
    assert_refused(qd("check", "--from", "b.json", cwd=tmp_path), "not UTF-8 text at byte 10")


def test_nul_bytes_in_a_log_are_ignored_and_a_log_that_starts_all_nul_is_named_so(tmp_path: Path):
    """A log written over a hole (logrotate's copytruncate) or cut by a crash holds runs of NUL bytes."""
    (tmp_path / "holed.log").write_bytes(b"\0" * 4000 + b"INFO start\n" + OOM.replace(". ", ".\0 ").encode()
                                         + b"\n" + b"\0" * 100_000)
    done = qd("explain", "holed.log", cwd=tmp_path)
    assert done.returncode == 1 and "QD-R-TORCH-CUDA-OOM" in done.stdout, done.stderr
    (tmp_path / "hole.log").write_bytes(b"\0" * 100_000 + f"{OOM}\n".encode())
    assert_refused(qd("explain", "hole.log", cwd=tmp_path), "all NUL", "tr -d")


LONG = "a" * 300  # longer than any file name the kernel takes (ENAMETOOLONG)


@pytest.mark.parametrize("argv, why", [
    (["plan", "--gpus", "8xH200", "--model", LONG], "unknown model"),
    (["plan", "--gpus", "8xH200", "--model", "/tmp/" + LONG + "/" + LONG], "unknown model"),
    (["plan", "--gpus", "8xH200", "--speculative-config", json.dumps({"method": "eagle", "model": LONG})],
     "unknown drafter"),
    (["deploy", "--profile", "cpu-tiny", "--set", f"model_dir={LONG}", "--rehearse", "--dry-run"],
     "--rehearse needs a registry model or a folder with config.json"),
])
def test_an_over_long_path_is_an_unknown_name_not_an_internal_error(argv: list[str], why: str):
    assert_refused(qd(*argv), why)


def test_an_over_long_model_path_is_checked_like_any_missing_one():
    done = qd("deploy", "--profile", "cpu-tiny", "--model", LONG, "--dry-run")
    assert done.returncode in (0, 1), done.stderr
    assert "internal error" not in done.stderr and "Traceback" not in done.stderr


@pytest.mark.skipif(not Path("/proc/self/mem").exists(), reason="needs Linux /proc")
@pytest.mark.parametrize("argv", [["explain", "/proc/self/mem"], ["plan", "--from-log", "/proc/self/mem"],
                                  ["check", "--from", str(FIXTURES / "h200.json"), "--log", "/proc/self/mem"]],
                         ids=["explain", "plan --from-log", "check --log"])
def test_a_log_whose_read_fails_is_one_line_naming_the_error(argv: list[str]):
    """/proc/self/mem opens but reading offset 0 fails (EIO), as a file on a failing disk does."""
    assert_refused(qd(*argv), "/proc/self/mem", "read failed")
