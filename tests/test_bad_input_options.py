"""Bad option values, command by command: one line on stderr naming the option, exit 2, before anything runs, and
the user's existing `-o` file is left byte for byte (what tests/test_output_safety.py and tests/test_input_safety.py
state for paths and files, stated here for values)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.conftest import FIXTURES
from tests.test_cli_check import qd
from tests.test_output_safety import assert_refused, snapshot

USER_REPORT = "PRECIOUS: the user's earlier report\n"

CASES = [
    # float options: a range check lets nan through, and inf is no timeout anyone means
    (["check", "--from", "b.json", "--timeout", "nan"], "'--timeout': 'nan' is not a finite number"),
    (["check", "--from", "b.json", "--node-timeout", "inf"], "'--node-timeout': 'inf' is not a finite number"),
    (["check", "--from", "b.json", "--gpu-memory-utilization", "nan"], "'--gpu-memory-utilization'"),
    (["check", "--from", "b.json", "--mem-fraction-static", "nan"], "'--mem-fraction-static'"),
    (["collect", "--timeout", "nan"], "'--timeout': 'nan' is not a finite number"),
    (["deploy", "--profile", "vllm-stable", "--dry-run", "--timeout", "nan"], "'--timeout': 'nan'"),
    (["probe", "http://127.0.0.1:9", "--request-timeout", "inf"], "'--request-timeout': 'inf'"),
    (["deploy", "--profile", "vllm-stable", "--dry-run", "--slo", "ttft_p99_ms=nan"],
     "--slo ttft_p99_ms: 'nan' is not a finite number"),
    (["deploy", "--profile", "vllm-stable", "--dry-run", "--slo", "error_rate=2"], "--slo error_rate: a fraction"),
    (["probe", "http://127.0.0.1:9", "--slo", "tpot_p50_ms=inf"], "--slo tpot_p50_ms: 'inf' is not a finite number"),
    # versions: checked where given, not only when a flag happens to be judged
    (["lint", "notes.md", "--backend-version", "abc"], "'--backend-version': 'abc' is not a version number"),
    (["profiles", "show", "vllm-stable", "--render", "--backend-version", "abc"], "is not a version number"),
    (["plan", "--gpus", "1xH200", "--backend-version", "abc"], "is not a version number"),
    # engine flags and values
    (["plan", "--gpus", "8xH200", "--flag", "--served-model-name 'unterminated"], "No closing quotation"),
    (["plan", "--gpus", "8xH200", "--kv-cache-memory", "-1"], "--kv-cache-memory must be between 0 and 4096 GiB"),
    (["profiles", "show", "vllm-stable", "--set", "novalue"], "--set expects KEY=VALUE"),
    (["deploy", "--profile", "vllm-stable", "--dry-run", "--python", "b.json"],
     "--python b.json: not an executable file, nor a command on PATH"),
    (["deploy", "--profile", "vllm-stable", "--dry-run", "--python", "/nonexistent/python"], "--python"),
    # --gpus strings
    (["plan", "--gpus", "0xH200"], "the GPU count must be between 1 and 65536"),
    (["plan", "--gpus", "xH200"], "unknown GPU 'xH200'"),
    (["plan", "--gpus", "1xUnknownGPU"], "unknown GPU 'UnknownGPU'"),
    (["plan", "--gpus", "1xA:abc:9.0"], "the memory must be a number of GiB"),
    # profiles
    (["plan", "--gpus", "8xH200", "--profile", "empty.yaml"], "a profile must be a YAML mapping, got an empty document"),
]
WRITES_FILES = {"check", "collect", "plan", "lint", "deploy", "probe"}  # commands with -o


@pytest.fixture
def work(tmp_path: Path) -> Path:
    shutil.copy(FIXTURES / "h200.json", tmp_path / "b.json")
    (tmp_path / "notes.md").write_text("vllm serve Qwen/Qwen3.5-35B-A3B\n")
    (tmp_path / "empty.yaml").write_text("")
    (tmp_path / "report.json").write_text(USER_REPORT)
    return tmp_path


@pytest.mark.parametrize("argv, words", CASES, ids=[" ".join(a) for a, _ in CASES])
def test_a_bad_value_is_one_line_exit_2_and_the_users_report_stays(work: Path, argv: list[str], words: str):
    before = snapshot(work)
    out = ["-o", "report.json"] if argv[0] in WRITES_FILES else []
    assert_refused(qd(*argv, *out, cwd=work), words)
    assert snapshot(work) == before
