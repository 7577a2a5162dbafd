"""A secret split over the lines of a log excerpt (issue 23): explain shows a matched line with the lines
around it as separate strings, so the excerpt is redacted as one text before it is split into them."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from doctor.redact import REDACTED, redact_lines, redact_text

TOKEN = "sk-ant-api03-Zq8xWv3Lm9Np2Rt5Yb7Kc4Hd6Fj1Gs0Ae3BZq8xWv3Lm9Np2Rt5Yb7Kc4Hd6Fj1Gs0Ae3B-AA"
PASSWORD = "Tr0ub4dor-and-3-horses"


@pytest.mark.parametrize("lines", [
    ["Authorization: Bearer " + TOKEN[:30], TOKEN[30:], "next line"],
    ["RuntimeError: CUDA error: out of memory password: >", "  " + PASSWORD[:10], "  " + PASSWORD[10:], "INFO ok"],
    ["loading config", '{"api_key":', f'  "{PASSWORD}"}}'],
    ["secret: |", "  " + PASSWORD],
])
def test_a_secret_over_several_lines_of_an_excerpt_goes_whole(lines: list[str]) -> None:
    out = redact_lines(lines)
    assert len(out) == len(lines)
    flat = "".join(out)
    assert PASSWORD[10:] not in flat and TOKEN[30:] not in flat and PASSWORD[:10] not in flat
    assert REDACTED in flat


def test_lines_without_secrets_are_unchanged_and_a_pem_block_falls_back_to_each_line() -> None:
    plain = ["INFO starting", "  model: >", "    Qwen/Qwen3.5-35B-A3B"]
    assert redact_lines(plain) == plain
    pem = ["-----BEGIN PRIVATE KEY-----", "MIIEvQIBADANBgkqhkiG9w0BAQEFAASC", "-----END PRIVATE KEY-----"]
    assert len(redact_lines(pem)) == 3 and "MIIEvQIBADANBgkqhkiG9w0BAQEFAASC" not in "".join(redact_lines(pem))


def test_a_yaml_block_scalar_quoted_after_other_words_is_hidden() -> None:
    text = f"ERROR bad profile password: >\n  {PASSWORD[:10]}\n  {PASSWORD[10:]}\n"
    assert PASSWORD[10:] not in redact_text(text) and PASSWORD[:10] not in redact_text(text)


def test_explain_reports_hide_a_wrapped_token_in_the_context_lines(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_text(f"RuntimeError: CUDA error: out of memory Authorization: Bearer {TOKEN[:40]}\n{TOKEN[40:]}\n")
    for fmt in ("json", "text", "md"):
        proc = subprocess.run([sys.executable, "-m", "doctor", "explain", str(log), "--format", fmt],
                              capture_output=True, text=True, timeout=120)
        assert TOKEN[40:] not in proc.stdout and TOKEN[40:] not in proc.stderr, fmt
    data = json.loads(subprocess.run([sys.executable, "-m", "doctor", "explain", str(log), "--format", "json"],
                                     capture_output=True, text=True, timeout=120).stdout)
    assert "explain" in json.dumps(data["command"]) or data["results"]


def test_a_report_list_of_lines_hides_a_token_wrapped_from_one_item_onto_the_next() -> None:
    """deploy's `log_excerpt` (and any list of strings in a report) is read as consecutive lines."""
    from doctor.redact import redact_document

    doc = redact_document({"deployment": {"log_excerpt": ["INFO Authorization: Bearer " + TOKEN[:40], TOKEN[40:]],
                                          "argv": ["vllm", "serve", "Qwen/Qwen3.5-35B-A3B", "--port", "8000"]}})
    assert TOKEN[40:] not in str(doc) and TOKEN[:40] not in str(doc)
    assert doc["deployment"]["argv"] == ["vllm", "serve", "Qwen/Qwen3.5-35B-A3B", "--port", "8000"]
