"""`-o` / `--output` / `--report` / `--log` / `collect -o` never destroy anything: refusals are one line, exit 2,
and every file the user had is byte-identical afterwards; accepted writes are atomic, unique and keep modes."""

from __future__ import annotations

import json
import os
import shutil
import socket
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from doctor.outfile import OutputError, check_outputs, write_file
from tests.conftest import FIXTURES
from tests.test_cli_check import ROOT, qd

PROFILE = ROOT / "profiles" / "cpu-tiny.yaml"


def snapshot(folder: Path) -> dict[str, bytes | str]:
    """Every entry of a folder: file bytes, or the kind of anything else (so a replaced node shows)."""
    out: dict[str, bytes | str] = {}
    for entry in sorted(folder.rglob("*")):
        mode = entry.lstat().st_mode
        key = str(entry.relative_to(folder))
        if stat.S_ISLNK(mode):
            out[key] = "link->" + os.readlink(entry)
        elif stat.S_ISREG(mode):
            out[key] = entry.read_bytes()
        else:
            out[key] = stat.filemode(mode)[0]
    return out


def assert_refused(done: subprocess.CompletedProcess[str], *words: str) -> None:
    assert done.returncode == 2, (done.returncode, done.stderr)
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("qwen-doctor: error: "), done.stderr
    assert "Traceback" not in done.stderr and "internal error" not in done.stderr
    for word in words:
        assert word in done.stderr, done.stderr


@pytest.fixture
def work(tmp_path: Path) -> Path:
    shutil.copy(FIXTURES / "h200.json", tmp_path / "b.json")
    shutil.copy(PROFILE, tmp_path / "p.yaml")
    (tmp_path / "server.log").write_text("INFO starting\ntorch.OutOfMemoryError: CUDA out of memory. "
                                         "Tried to allocate 2.00 GiB\n")
    (tmp_path / "model").mkdir()
    (tmp_path / "model" / "config.json").write_text("{}")
    return tmp_path


SAME_FILE = [
    ("check --from b.json -o b.json", ["check", "--from", "b.json", "-o", "b.json"]),
    ("explain server.log -o server.log", ["explain", "server.log", "-o", "server.log"]),
    ("check --log server.log -o server.log", ["check", "--from", "b.json", "--log", "server.log", "-o", "server.log"]),
    ("deploy --profile p.yaml -o p.yaml", ["deploy", "--profile", "p.yaml", "--dry-run", "--format", "text",
                                           "-o", "p.yaml"]),
    ("deploy --profile p.yaml --report p.yaml", ["deploy", "--profile", "p.yaml", "--dry-run", "--format", "text",
                                                 "--report", "p.yaml"]),
    ("deploy --log p.yaml", ["deploy", "--profile", "p.yaml", "--dry-run", "--log", "p.yaml"]),
    ("deploy -o the --log file", ["deploy", "--profile", "p.yaml", "--dry-run", "--log", "server.log",
                                  "-o", "server.log"]),
    ("check --profile p.yaml -o p.yaml", ["check", "--from", "b.json", "--profile", "p.yaml", "--format", "text",
                                          "-o", "p.yaml"]),
    ("plan --model DIR -o DIR/config.json", ["plan", "--gpus", "1xH200", "--model", "model", "-o",
                                             "model/config.json"]),
    ("plan --model config.json -o it", ["plan", "--gpus", "1xH200", "--model", "model/config.json", "-o",
                                        "model/config.json"]),
]


@pytest.mark.parametrize("argv", [a for _, a in SAME_FILE], ids=[i for i, _ in SAME_FILE])
def test_an_output_that_is_an_input_of_the_command_is_refused(work: Path, argv: list[str]):
    before = snapshot(work)
    done = qd(*argv, cwd=work)
    assert_refused(done, "it is the input")
    assert snapshot(work) == before


def test_an_input_reached_through_a_symlink_or_a_hard_link_is_still_the_input(work: Path):
    (work / "via-link.json").symlink_to(work / "b.json")
    os.link(work / "b.json", work / "hard.json")
    before = snapshot(work)
    for out in ("via-link.json", "hard.json", str(work / "." / "b.json")):
        assert_refused(qd("check", "--from", "b.json", "-o", out, cwd=work), "it is the input")
    assert snapshot(work) == before


def test_the_same_file_given_twice_is_refused(work: Path):
    done = qd("check", "--from", "b.json", "-o", "r.json", "-o", "./r.json", cwd=work)
    assert_refused(done, "given twice")
    assert not (work / "r.json").exists()


def special_nodes(folder: Path) -> dict[str, Path]:
    """A FIFO, a socket, a directory and symlinks to them and to /dev/null, created without root."""
    os.mkfifo(folder / "fifo.json")
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(folder / "sock.json"))
    sock.close()
    (folder / "dir.json").mkdir()
    (folder / "null.json").symlink_to("/dev/null")
    (folder / "to-fifo.json").symlink_to(folder / "fifo.json")
    (folder / "dangling.json").symlink_to(folder / "nowhere.json")
    return {name: folder / name for name in ("fifo.json", "sock.json", "dir.json", "null.json", "to-fifo.json",
                                             "dangling.json")}


@pytest.mark.parametrize("command", [["check", "--from", "b.json"], ["collect"]], ids=["check", "collect"])
def test_device_fifo_socket_directory_and_links_to_them_are_never_replaced(work: Path, command: list[str]):
    nodes = special_nodes(work)
    before = snapshot(work)
    targets = [*map(str, nodes.values()), "/dev/null", "/dev/full", "/dev/stdout", "/dev/fd/1"]
    for target in targets:
        done = qd(*command, "-o", target, "--format", "json", cwd=work) if command[0] == "check" \
            else qd(*command, "-o", target, cwd=work)
        assert_refused(done, "cannot write")
    assert snapshot(work) == before
    for device in ("/dev/null", "/dev/full"):
        assert stat.S_ISCHR(os.stat(device).st_mode), f"{device} is still a character device"


def test_the_refusal_names_what_the_path_is(work: Path):
    nodes = special_nodes(work)
    expected = {"fifo.json": "a FIFO", "sock.json": "a socket", "dir.json": "a directory",
                "null.json": "a character device (a symlink to /dev/null)", "to-fifo.json": "a FIFO",
                "dangling.json": "a symlink to a missing file"}
    for name, path in nodes.items():
        with pytest.raises(OutputError, match=expected[name].replace("(", r"\(").replace(")", r"\)")):
            check_outputs([path])


def test_replacing_a_file_keeps_its_mode_says_so_and_leaves_no_temp_file(work: Path):
    out = work / "r.json"
    out.write_text("old report")
    out.chmod(0o640)
    done = qd("check", "--from", "b.json", "-o", "r.json", cwd=work)
    assert done.returncode == 1, done.stderr
    assert done.stderr.splitlines() == ["wrote r.json (json, replaced the existing file)"]
    assert stat.S_IMODE(out.stat().st_mode) == 0o640
    assert json.loads(out.read_text())["command"].startswith("check")
    assert sorted(p.name for p in work.iterdir()) == ["b.json", "model", "p.yaml", "r.json", "server.log"]


def test_a_new_file_gets_the_umask_mode_like_any_shell_file(work: Path):
    umask = os.umask(0o027)
    try:
        write_file(work / "new.txt", "x")
    finally:
        os.umask(umask)
    assert stat.S_IMODE((work / "new.txt").stat().st_mode) == 0o640


def test_a_read_only_file_is_not_replaced(work: Path):
    out = work / "r.json"
    out.write_text("keep me")
    out.chmod(0o444)
    assert_refused(qd("check", "--from", "b.json", "-o", "r.json", cwd=work), "read-only")
    assert out.read_text() == "keep me"


def test_a_symlink_to_a_regular_file_is_written_through_and_stays_a_link(work: Path):
    (work / "reports").mkdir()
    real = work / "reports" / "latest.json"
    real.write_text("old")
    (work / "r.json").symlink_to(real)
    done = qd("check", "--from", "b.json", "-o", "r.json", cwd=work)
    assert done.returncode == 1, done.stderr
    assert (work / "r.json").is_symlink() and os.readlink(work / "r.json") == str(real)
    assert json.loads(real.read_text())["command"].startswith("check")
    assert sorted(p.name for p in (work / "reports").iterdir()) == ["latest.json"]


def test_collect_writes_a_bundle_atomically_and_check_reads_it_back(work: Path):
    done = qd("collect", "-o", "new.json", "--timeout", "5", cwd=work)
    assert done.returncode == 0, done.stderr
    assert json.loads((work / "new.json").read_text())["schema"] == "qwen-doctor.facts"
    assert qd("check", "--from", "new.json", "--format", "json", cwd=work).returncode in (0, 1)


def test_concurrent_writers_to_one_path_all_succeed_and_the_last_one_wins(tmp_path: Path):
    out = tmp_path / "shared.json"
    payloads = [json.dumps({"writer": i, "pad": "x" * 50_000}) for i in range(16)]
    errors: list[BaseException] = []

    def writer(text: str) -> None:
        try:
            for _ in range(10):
                write_file(out, text)
        except BaseException as exc:  # noqa: BLE001 - collected and asserted below
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(p,)) for p in payloads]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert out.read_text() in payloads
    assert [p.name for p in tmp_path.iterdir()] == ["shared.json"], "no temp file is left behind"


def test_concurrent_processes_writing_one_report_all_succeed(tmp_path: Path):
    shutil.copy(FIXTURES / "h200.json", tmp_path / "b.json")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    procs = [subprocess.Popen([sys.executable, "-m", "doctor", "check", "--from", "b.json", "-o", "r.json"],
                              cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
             for _ in range(4)]
    results = [(p.wait(timeout=120), p.stderr.read()) for p in procs if p.stderr]
    assert [code for code, _ in results] == [1, 1, 1, 1], results
    assert json.loads((tmp_path / "r.json").read_text())["command"].startswith("check")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["b.json", "r.json"]


def test_a_failed_or_interrupted_write_leaves_the_old_file_and_no_temp(tmp_path: Path, monkeypatch):
    out = tmp_path / "r.txt"
    out.write_text("old")

    def fail(*_args: object, **_kwargs: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", fail)
    with pytest.raises(OutputError, match="No space left on device"):
        write_file(out, "new")

    def interrupt(*_args: object, **_kwargs: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "replace", interrupt)
    with pytest.raises(KeyboardInterrupt):
        write_file(out, "new")
    assert out.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["r.txt"]


def test_report_files_are_written_even_when_stdout_is_closed_early(tmp_path: Path) -> None:
    """`qwen-doctor plan ... -o plan.json | head -1`: the pipe closes after one line, the file still lands."""
    out = tmp_path / "plan.json"
    done = subprocess.run(f"{sys.executable} -m doctor plan --gpus 1xH200 -o {out} -o - | head -c 1",
                          shell=True, capture_output=True, text=True, timeout=120)
    assert out.is_file() and json.loads(out.read_text())["command"].startswith("plan")
    assert "Traceback" not in done.stderr


def test_a_directory_we_cannot_write_into_is_refused_before_the_command_runs(tmp_path: Path, monkeypatch):
    """The atomic write needs a temp file beside the output, so an unwritable directory is bad input up front
    (checked with access(2); as root only a read-only mount says no, so the answer is simulated here)."""
    locked = tmp_path / "locked"
    locked.mkdir()
    (locked / "old.json").write_text("mine")
    real_access = os.access
    monkeypatch.setattr(os, "access", lambda p, mode: False if str(p) == str(locked) else real_access(p, mode))
    for name in ("new.json", "old.json"):
        with pytest.raises(OutputError, match=f"directory {locked} is not writable"):
            check_outputs([locked / name])
    assert (locked / "old.json").read_text() == "mine" and sorted(p.name for p in locked.iterdir()) == ["old.json"]


@pytest.mark.parametrize("argv", [["remedies", "list"], ["profiles", "list"], ["check", "--list"],
                                  ["profiles", "show", "vllm-stable", "--render"]])
def test_a_closed_stdout_ends_a_listing_quietly_with_exit_0(argv: list[str]):
    """`qwen-doctor remedies list | head -1`: exit 1 would read as 'a check failed' under `set -o pipefail`."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        done = subprocess.run([sys.executable, "-m", "doctor", *argv], stdout=write_end, stderr=subprocess.PIPE,
                              text=True, env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=60)
    finally:
        os.close(write_end)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr and "BrokenPipe" not in done.stderr


# ---- a root run in a shared sticky directory (issue 23, item 2) ------------------------------------------
OTHER_UID = 54321


def _sticky(tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o1777)
    return shared


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to give a symlink to another uid")
def test_a_symlink_of_another_user_in_a_sticky_directory_is_not_followed(tmp_path):
    from doctor.outfile import OutputError, write_file

    victim = tmp_path / "victim.conf"
    victim.write_text("theirs\n")
    shared = _sticky(tmp_path)
    link = shared / "report.json"
    link.symlink_to(victim)
    os.lchown(link, OTHER_UID, OTHER_UID)
    with pytest.raises(OutputError, match="owned by uid 54321"):
        write_file(link, "ours\n")
    assert victim.read_text() == "theirs\n" and link.is_symlink()


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to give a symlink to another uid")
def test_the_cli_refuses_it_with_one_line_and_exit_2(tmp_path):
    victim = tmp_path / "victim.conf"
    victim.write_text("theirs\n")
    link = _sticky(tmp_path) / "r.json"
    link.symlink_to(victim)
    os.lchown(link, OTHER_UID, OTHER_UID)
    proc = subprocess.run([sys.executable, "-m", "doctor", "check", "--from", str(FIXTURES / "h200.json"),
                           "-o", str(link)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert victim.read_text() == "theirs\n"


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to give a symlink to another uid")
@pytest.mark.parametrize("tail", ["victim.conf", "sub/../victim.conf", "hop/victim.conf"])
def test_another_users_symlink_as_a_parent_component_is_not_followed(tmp_path, tail):
    """/tmp/evil -> /etc, then `-o /tmp/evil/passwd`: the kernel's path walk would refuse the link, and so do we
    (realpath's readlink is not guarded by protected_symlinks); a link of ours further on changes nothing."""
    from doctor.outfile import OutputError, write_file

    private = tmp_path / "private"
    (private / "sub").mkdir(parents=True)
    (private / "hop").symlink_to(private)
    victim = private / "victim.conf"
    victim.write_text("root's\n")
    evil = _sticky(tmp_path) / "evil"
    evil.symlink_to(private, target_is_directory=True)
    os.lchown(evil, OTHER_UID, OTHER_UID)
    with pytest.raises(OutputError, match="owned by uid 54321"):
        write_file(f"{evil}/{tail}", "ours\n")
    assert victim.read_text() == "root's\n"
    proc = subprocess.run([sys.executable, "-m", "doctor", "check", "--from", str(FIXTURES / "h200.json"),
                           "-o", f"{evil}/{tail}"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert victim.read_text() == "root's\n"


def test_parent_components_resolve_as_realpath_does(tmp_path):
    from doctor.outfile import _physical_dir

    (tmp_path / "a" / "b").mkdir(parents=True)
    (tmp_path / "l").symlink_to(tmp_path / "a" / "b")
    (tmp_path / "a" / "b" / "up").symlink_to("../../a")
    (tmp_path / "a" / "rel").symlink_to("b/up/b")
    for folder in ["l", "l/..", "a/b/up/b", "a/rel", "nope/x", "l/up/../b", "."]:
        path = str(tmp_path / folder)
        assert _physical_dir(path, path, "output") == os.path.realpath(path), folder


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to own a file as another uid")
def test_another_users_file_in_a_sticky_directory_is_not_replaced(tmp_path):
    from doctor.outfile import OutputError, write_file

    theirs = _sticky(tmp_path) / "r.json"
    theirs.write_text("theirs\n")
    os.chown(theirs, OTHER_UID, OTHER_UID)
    with pytest.raises(OutputError, match="protected_symlinks"):
        write_file(theirs, "ours\n")
    assert theirs.read_text() == "theirs\n"


def test_our_own_symlink_in_a_sticky_directory_and_another_users_elsewhere_are_written_through(tmp_path):
    from doctor.outfile import write_file

    target = tmp_path / "target.json"
    target.write_text("old\n")
    link = _sticky(tmp_path) / "mine.json"
    link.symlink_to(target)
    assert write_file(link, "new\n") is True
    assert target.read_text() == "new\n" and link.is_symlink()
    if os.geteuid() == 0:
        plain = tmp_path / "plain"
        plain.mkdir()
        other = plain / "theirs.json"
        other.symlink_to(target)
        os.lchown(other, OTHER_UID, OTHER_UID)
        write_file(other, "again\n")
        assert target.read_text() == "again\n"


def test_a_path_that_appears_while_writing_is_not_replaced(tmp_path, monkeypatch):
    from doctor import outfile

    dest = tmp_path / "new.json"
    real = outfile._create_temp

    def create_then_race(dir_fd, base):
        made = real(dir_fd, base)
        dest.symlink_to(tmp_path / "elsewhere")
        return made

    monkeypatch.setattr(outfile, "_create_temp", create_then_race)
    with pytest.raises(outfile.OutputError, match="changed while being written"):
        outfile.write_file(dest, "x")
    assert dest.is_symlink() and not (tmp_path / "elsewhere").exists()
    assert [p.name for p in tmp_path.iterdir()] == ["new.json"]


def test_a_parent_directory_swapped_for_a_symlink_after_resolving_is_refused(tmp_path, monkeypatch):
    """The race: -o shared/mine/r.json resolved while mine is a directory, then mine becomes a symlink to
    somewhere else before the write: the directory is opened component by component without following."""
    from doctor import outfile

    mine = tmp_path / "mine"
    mine.mkdir()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    real = outfile.check_outputs

    def resolve_then_swap(*args, **kwargs):
        found = real(*args, **kwargs)
        mine.rename(tmp_path / "was-mine")
        mine.symlink_to(elsewhere, target_is_directory=True)
        return found

    monkeypatch.setattr(outfile, "check_outputs", resolve_then_swap)
    with pytest.raises(outfile.OutputError, match="changed into a symlink"):
        outfile.write_file(mine / "r.json", "data\n")
    assert list(elsewhere.iterdir()) == []


@pytest.mark.parametrize("argv", [["check", "--from", str(FIXTURES / "h200.json")], ["plan", "--gpus", "1xH200"]],
                         ids=["check", "plan"])
def test_a_relative_output_in_a_current_directory_that_was_deleted_is_refused_in_one_line(tmp_path: Path, argv):
    gone = tmp_path / "gone"
    gone.mkdir()
    done = subprocess.run([sys.executable, "-m", "doctor", *argv, "-o", "r.json"], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, cwd=gone, timeout=60,
                          preexec_fn=lambda: os.rmdir(gone))
    assert_refused(done, "r.json", "the current directory is gone")
    assert list(tmp_path.iterdir()) == []
