"""The fourth fault campaign's classes: bad input that used to change the user's files, hide their words, or
reach past what a reader expects. Each is refused in one line with exit 2, or read as it is, and nothing the user
had changes."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
USER_REPORT = "PRECIOUS: the user's earlier report\n"


def _deploy(tmp_path: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "doctor", "deploy", "--profile", "vllm-stable", "--dry-run", *argv],
                          capture_output=True, text=True, timeout=180, cwd=tmp_path,
                          env={**os.environ, "PYTHONPATH": str(ROOT), "QWEN_DOCTOR_STATE_DIR": str(tmp_path / "s")})


BAD_DEPLOY_INPUT = [
    (["--flag", "nosuch-flag=1"], "nosuch-flag"),
    (["--flag", "max-model-len=abc"], "invalid int value"),
    (["--set", "novalue"], "--set expects NAME=VALUE"),
    (["--flag", "reasoning-parser"], "--reasoning-parser needs a value"),
]


@pytest.mark.parametrize("argv, words", BAD_DEPLOY_INPUT, ids=[" ".join(a) for a, _ in BAD_DEPLOY_INPUT])
@pytest.mark.parametrize("target", [["-o", "report.json"], ["--output", "report.html"], ["--report", "report.md"]])
def test_bad_deploy_input_leaves_the_users_report_file_as_it_was(tmp_path: Path, argv: list[str], words: str,
                                                                  target: list[str]) -> None:
    report = tmp_path / target[1]
    report.write_text(USER_REPORT)
    done = _deploy(tmp_path, *argv, *target)
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and words in done.stderr, done.stderr
    assert report.read_text() == USER_REPORT
    assert sorted(p.name for p in tmp_path.iterdir()) == [report.name]


SHORT_VALUE_THEN_A_WORD = {
    "password: 1\nretry": "password: [REDACTED]\nretry",
    "api_key=x\nnext step": "api_key=[REDACTED]\nnext step",
    "token: ab\ncd ef": "token: [REDACTED]\ncd ef",
    "passwd: abc\nRetry now": "passwd: [REDACTED]\nRetry now",
    "secret=12\n  then\nok": "secret=[REDACTED]\n  then\nok",
}


@pytest.mark.parametrize("text", SHORT_VALUE_THEN_A_WORD)
def test_a_short_secret_value_at_a_line_end_keeps_the_next_lines_word(text: str) -> None:
    from doctor.redact import redact_text

    assert redact_text(text) == SHORT_VALUE_THEN_A_WORD[text]


@pytest.mark.parametrize("head, tail", [("hf_Zx81kQ2mP9", "vB7nL3cR5tY0wE"), ("password: Zx81kQ", "2mP9vB7nL3"),
                                        ("Bearer sk-ant-api03-Zq8xWv3Lm9Np2Rt5Yb7Kc", "4Hd6Fj1Gs0Ae3B")])
def test_a_token_cut_by_a_line_width_is_still_hidden_whole(head: str, tail: str) -> None:
    from doctor.redact import redact_text

    out = redact_text(f"the key was {head}\n{tail} (rotated)")
    assert tail not in out and head.split()[-1] not in out and out.endswith("\n[REDACTED] (rotated)"), out
