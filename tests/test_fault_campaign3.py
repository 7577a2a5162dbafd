"""The third fault campaign's classes (issue 23): inputs that parse but hold what their reader did not expect.
Each is refused in one line with exit 2 (never an internal error), and nothing the user had changes."""

from __future__ import annotations

import json
import os
import pty
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import FIXTURES
from tests.test_cli_check import qd
from tests.test_output_safety import assert_refused, snapshot

ROOT = Path(__file__).resolve().parents[1]
USER_REPORT = "PRECIOUS: the user's earlier report\n"


@pytest.fixture
def work(tmp_path: Path) -> Path:
    shutil.copy(FIXTURES / "h200.json", tmp_path / "b.json")
    (tmp_path / "report.json").write_text(USER_REPORT)
    stable = (ROOT / "profiles" / "vllm-stable.yaml").read_text()
    # A valued engine option written as a switch: YAML `true` renders a bare `--reasoning-parser`.
    (tmp_path / "bare.yaml").write_text(stable.replace("reasoning-parser: qwen3", "reasoning-parser: true"))
    multinode = (ROOT / "profiles" / "sglang-multinode.yaml").read_text()
    (tmp_path / "bare-multinode.yaml").write_text(multinode.replace('dist-init-addr: "{head_address}:20000"',
                                                                    "dist-init-addr: true"))
    return tmp_path


VALUED_AS_SWITCH = [
    (["deploy", "--profile", "bare.yaml", "--dry-run"], "--reasoning-parser needs a value"),
    (["profiles", "show", "bare.yaml", "--render"], "--reasoning-parser needs a value"),
    (["profiles", "show", "bare-multinode.yaml", "--render"], "--dist-init-addr needs a value"),
    (["deploy", "--profile", "bare-multinode.yaml", "--dry-run"], "--dist-init-addr needs a value"),
    (["deploy", "--profile", "vllm-stable", "--dry-run", "--flag", "reasoning-parser"],
     "--reasoning-parser needs a value"),
    (["deploy", "--profile", "vllm-stable", "--dry-run", "--flag", "served-model-name"],
     "--served-model-name needs a value"),
]


@pytest.mark.parametrize("argv, words", VALUED_AS_SWITCH, ids=[" ".join(a) for a, _ in VALUED_AS_SWITCH])
def test_a_valued_engine_option_given_as_a_switch_is_a_bad_profile(work: Path, argv: list[str], words: str):
    before = snapshot(work)
    assert_refused(qd(*argv, cwd=work), words)
    assert snapshot(work) == before


def _record(runs: Path, name: str, **fields: object) -> Path:
    runs.mkdir(parents=True, exist_ok=True)
    record = {"pid": 4_000_001, "create_time": 5.0, "host": "127.0.0.1", "port": 8000, "profile": "p",
              "backend": "vllm", "log": "l", "started_at": "s", **fields}
    path = runs / name
    path.write_text(json.dumps(record))
    return path


def test_a_stale_record_is_removed_whatever_its_file_is_named(tmp_path: Path):
    """A record copied or renamed by hand is still the record --stop says it removed."""
    renamed = _record(tmp_path / "runs", "copied-by-hand.json")
    done = qd("deploy", "--stop", "all", env={"QWEN_DOCTOR_STATE_DIR": str(tmp_path)})
    assert done.returncode == 0 and "4000001: already gone (stale record removed)" in done.stderr, done.stderr
    assert not renamed.exists()


def test_deploy_status_shows_a_records_control_characters_escaped_even_on_a_terminal(tmp_path: Path):
    """click strips ANSI only from a pipe: on a terminal, a hand-edited record must not repaint the screen."""
    _record(tmp_path / "runs", "r.json", host="h\x1b[2J", profile="p\x9b31m", log="l\u202e")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "QWEN_DOCTOR_STATE_DIR": str(tmp_path), "NO_COLOR": "1"}
    main, child = pty.openpty()
    try:
        done = subprocess.run([sys.executable, "-m", "doctor", "deploy", "--status"], stdout=child,
                              stderr=subprocess.PIPE, env=env, timeout=60)
        shown = os.read(main, 1 << 16).decode()
    finally:
        os.close(main)
        os.close(child)
    assert done.returncode == 0 and "4000001  stale  h:8000" in shown, (shown, done.stderr)
    assert not set(shown) & {"\x1b", "\x9b", "\u202e"}, shown
