"""The cache's root: the user's choice first, never a home directory the tool would have to create."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from doctor.cachedir import cache_home

ROOT = Path(__file__).resolve().parents[1]


def test_qwen_doctor_cache_then_xdg_then_the_home_cache(tmp_path: Path) -> None:
    assert cache_home({"QWEN_DOCTOR_CACHE": str(tmp_path / "q"), "XDG_CACHE_HOME": "/x"}) == tmp_path / "q"
    assert cache_home({"XDG_CACHE_HOME": str(tmp_path)}) == tmp_path / "qwen-doctor"


def test_a_command_run_with_a_home_that_does_not_exist_creates_nothing_there(tmp_path: Path) -> None:
    home = tmp_path / "nonexistent"
    env = {k: v for k, v in os.environ.items() if k not in ("XDG_CACHE_HOME", "QWEN_DOCTOR_CACHE")}
    done = subprocess.run([sys.executable, "-m", "doctor", "check", "--from", str(ROOT / "tests/fixtures/h200.json")],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path,
                          env={**env, "HOME": str(home), "PYTHONPATH": str(ROOT)})
    assert done.returncode in (0, 1), done.stderr
    assert not home.exists()
