"""The infrastructure layer under the server (GPU hardware and driver, containers, Ray, the host): precedence and
the look-alike lines that must not be read as failures."""

from __future__ import annotations

from pathlib import Path

import pytest

from remedies import Matcher, explain_sources, load_catalogue

MATCHER = Matcher(load_catalogue())


def ids(line: str) -> list[str]:
    return [r.id for r in MATCHER.match_line(line)]


def first_named(tmp_path: Path, text: str) -> str | None:
    log = tmp_path / "server.log"
    log.write_text(text, encoding="utf-8")
    findings = explain_sources([log])
    return findings[0].remedy.id if findings else None


def test_vllms_ulimit_warning_quotes_errno_24_without_being_a_failure():
    warning = ("WARNING 06-15 16:52:16 [system_utils.py:299] Found ulimit of 2048 and failed to automatically increase "
               "with error current limit exceeds maximum limit. This can cause fd limit errors like `OSError: [Errno 24] "
               "Too many open files`. Consider increasing with ulimit -n")
    assert ids(warning) == []
    assert ids("OSError: [Errno 24] Too many open files") == ["QD-R-HOST-TOO-MANY-OPEN-FILES"]


@pytest.mark.parametrize(("line", "expected"), [
    ("kernel: NVRM: Xid (PCI:0000:dc:00): 45, pid=1818990, name=python3, Ch 00000001 caused by previous Xid 149",
     ["QD-R-CUDA-XID-NVLINK"]),
    ("kernel: NVRM: Xid (PCI:0000:dc:00): 45, pid=1818990, name=python3, Ch 00000001 caused by previous Xid 13", []),
    ("NVRM: Xid (PCI:0000:43:00): 13, pid='<unknown>', name=<unknown>, Graphics Exception: ESR 0x52e7b0=0x101000e", []),
    ("NVRM: Xid (PCI:0000:07:00): 48, pid='<unknown>', name=<unknown>, An uncorrectable double bit error (DBE) has been",
     ["QD-R-CUDA-XID-MEMORY"]),
    ("NVRM: Xid (PCI:0000:61:00): 119, pid=1, name=nvidia-smi, Timeout waiting for RPC from GSP!",
     ["QD-R-CUDA-XID-FIRMWARE"]),
    ("XID 79(GPU has fallen off the bus) detected on PCI:0000:ae:00", ["QD-R-CUDA-XID-FALLEN-OFF-BUS"]),
])
def test_each_xid_is_read_by_its_code_not_by_the_word_xid(line, expected):
    assert ids(line) == expected


def test_a_pid_or_bus_number_that_looks_like_an_xid_code_is_not_one():
    assert ids("NVRM: Xid (PCI:0000:48:00): 31, pid=94, name=python3, Ch 00000010, intr 00000000") == []


def test_the_kernel_oom_kill_comes_before_the_ray_worker_death_it_caused(tmp_path):
    log = (
        "(raylet) A worker died or was killed while executing a task by an unexpected system error. Worker exit type: "
        "SYSTEM_ERROR Worker exit detail: Worker unexpectedly exits with a connection error code 2. End of file.\n"
        "ray.exceptions.ActorDiedError: The actor died unexpectedly before finishing this task.\n"
        "[26002.109061] Out of memory: Killed process 576419 (python) total-vm:78521468kB, anon-rss:54398260kB, "
        "file-rss:2628kB, shmem-rss:0kB, UID:1000 pgtables:119448kB oom_score_adj:0\n"
    )
    assert first_named(tmp_path, log) == "QD-R-HOST-OOM-KILLER"


def test_a_dead_raylet_comes_before_the_dead_actors_on_its_node(tmp_path):
    log = (
        "ray.exceptions.ActorDiedError: The actor died unexpectedly before finishing this task.\n"
        "2024-05-03 18:48:26,722\tERROR process_watcher.py:116 -- Raylet is terminated. Termination is unexpected. "
        "Possible reasons include: (1) SIGKILL by the user or system OOM killer\n"
    )
    assert first_named(tmp_path, log) == "QD-R-RAY-RAYLET-DIED"


def test_a_permission_error_outside_any_cache_is_not_read_as_a_cache_problem():
    assert ids("PermissionError: [Errno 13] Permission denied: '/models/qwen/config.json'") == []
    assert ids("PermissionError: [Errno 13] Permission denied: '/.cache/huggingface/hub'") == [
        "QD-R-HF-CACHE-NOT-WRITABLE"]


def test_an_integer_that_is_not_a_device_uuid_is_left_to_other_entries():
    assert "QD-R-CUDA-VISIBLE-DEVICES-UUID" not in ids("ValueError: invalid literal for int() with base 10: 'auto'")


@pytest.mark.parametrize(("line", "expected"), [
    ("      Reason:       OOMKilled", ["QD-R-HOST-CONTAINER-OOM"]),
    ('        "OOMKilled": true,', ["QD-R-HOST-CONTAINER-OOM"]),
    ('        "OOMKilled": false,', []),
])
def test_a_container_killed_for_memory_is_named_and_a_healthy_inspect_is_not(line, expected):
    assert ids(line) == expected
