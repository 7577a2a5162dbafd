"""The third fault campaign's classes (issue 23): inputs that parse but hold what their reader did not expect.
Each is refused in one line with exit 2 (never an internal error), and nothing the user had changes."""

from __future__ import annotations

import shutil
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
