"""Helpers for the deploy tests: a shim interpreter that runs the fake server, launch specs, process checks."""

from __future__ import annotations

import os
import stat
import sys
import time
from pathlib import Path

import psutil

from doctor.deploy.ports import free_port
from doctor.deploy.spec import LaunchSpec, from_argv

FAKE_SERVER = Path(__file__).with_name("fake_server.py")


def python_shim(directory: Path) -> Path:
    """An executable that behaves like the backend's python: `-m MODULE ...` runs the fake server,
    anything else runs this interpreter."""
    shim = directory / "fake-python"
    shim.write_text(f'#!/bin/sh\nif [ "$1" = "-m" ]; then exec "{sys.executable}" "{FAKE_SERVER}" "$@"; fi\n'
                    f'exec "{sys.executable}" "$@"\n')
    shim.chmod(shim.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return shim


def fake_spec(directory: Path, backend: str = "vllm", mode: str = "ok", reasoning: bool = False,
              extra: tuple[str, ...] = (), **env: str) -> LaunchSpec:
    """A LaunchSpec that starts the fake server on a free port, like the backend's launcher would."""
    module = "sglang.launch_server" if backend == "sglang" else "vllm.entrypoints.openai.api_server"
    model_flag = "--model-path" if backend == "sglang" else "--model"
    argv = [str(python_shim(directory)), "-m", module, model_flag, "/m", "--host", "127.0.0.1",
            "--port", str(free_port()), "--served-model-name", "tiny"]
    if reasoning:
        argv += ["--reasoning-parser", "qwen3"]
    argv += list(extra)
    return from_argv(argv, {"FAKE_SERVER_MODE": mode, **env}, backend, "fake")


def descendants(pid: int) -> list[psutil.Process]:
    try:
        return psutil.Process(pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return []


def wait_gone(procs: list[psutil.Process], timeout: float = 10.0) -> list[psutil.Process]:
    """The processes still running (not zombies) after waiting up to `timeout` s."""
    deadline = time.monotonic() + timeout
    alive = procs
    while time.monotonic() < deadline:
        alive = [p for p in procs if _running(p)]
        if not alive:
            return []
        time.sleep(0.1)
    return alive


def _running(p: psutil.Process) -> bool:
    try:
        return p.is_running() and p.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def kill_all(procs: list[psutil.Process]) -> None:
    """Test cleanup: SIGKILL whatever a failed test left behind (only processes the test started)."""
    for p in procs:
        try:
            p.kill()
        except psutil.NoSuchProcess:
            pass


def env_without(*names: str) -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k not in names}
