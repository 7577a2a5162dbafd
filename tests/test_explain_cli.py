"""`qwen-doctor explain` as a support engineer and a CI job use it: output, formats, exit codes, bad input."""

from __future__ import annotations

import codecs
import gzip
import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from importlib import resources
from pathlib import Path

import jsonschema
import pytest

ROOT = Path(__file__).resolve().parents[1]
LOGS = ROOT / "tests" / "data" / "logs"
OOM = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.19 GiB"


def qd(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "doctor", *args], capture_output=True, env=env, cwd=ROOT,
                          input=stdin, timeout=60)


def test_text_output_puts_the_root_cause_first_with_context_and_fix():
    done = qd("explain", str(LOGS / "vllm-27508-engine-core-init.log"), str(LOGS / "vllm-17939-sampler-oom.log"))
    out = done.stdout.decode()
    assert done.returncode == 1
    assert out.index("QD-R-VLLM-SAMPLER-WARMUP-OOM") < out.index("QD-R-VLLM-ENGINE-CORE-INIT-FAILED")
    assert "vllm-17939-sampler-oom.log:5" in out
    assert "→ Lower --max-num-seqs" in out
    assert "│      5> " in out and "│      4  " in out


def test_json_output_is_a_report_with_results_and_findings():
    done = qd("explain", "--format", "json", str(LOGS / "llamafactory-7396-watchdog.log"))
    report = json.loads(done.stdout)
    assert done.returncode == 1 and report["schema"] == "qwen-doctor.report" and report["status"] == "fail"
    (result,) = report["results"]
    assert result["check_id"] == result["remedy_ids"][0] == "QD-R-NCCL-WATCHDOG-TIMEOUT"
    (match,) = report["sections"]["remedies"]
    assert match["id"] == "QD-R-NCCL-WATCHDOG-TIMEOUT" and match["count"] == 2
    assert match["first_line"]["line"] == 3 and match["last_line"]["line"] == 4
    assert match["fix"] and match["source"]


def test_a_clean_log_exits_0_and_says_so():
    done = qd("explain", str(LOGS / "healthy-sglang-startup.log"), str(LOGS / "healthy-vllm-gpu-startup.log"))
    assert done.returncode == 0 and "No known errors found." in done.stdout.decode()


def test_warnings_fail_only_with_fail_on_warn(tmp_path):
    log = tmp_path / "retract.log"
    log.write_text("[2026-07-21 20:23:46] KV cache pool is full. Retract requests. #retracted_reqs: 1\n")
    assert qd("explain", str(log)).returncode == 0
    assert qd("explain", "--fail-on", "warn", str(log)).returncode == 1


def test_stdin_gzip_and_binary_content_are_read(tmp_path):
    assert qd("explain", "-", stdin=b"\x00\xff\n" + OOM.encode() + b"\n").returncode == 1
    gz = tmp_path / "server.log.1"
    gz.write_bytes(gzip.compress(OOM.encode()))
    done = qd("explain", "--format", "json", str(gz))
    assert json.loads(done.stdout)["results"][0]["check_id"] == "QD-R-TORCH-CUDA-OOM"


def test_missing_file_and_corrupt_gzip_are_one_line_errors_with_exit_2(tmp_path):
    good = LOGS / "vllm-1465-gcs.log"
    missing = qd("explain", str(good), str(tmp_path / "nope.log"))
    assert missing.returncode == 2 and missing.stdout == b""
    assert missing.stderr.decode().strip() == f"qwen-doctor: error: {tmp_path / 'nope.log'}: cannot open: no such file"
    broken = tmp_path / "broken.gz"
    broken.write_bytes(gzip.compress(OOM.encode() * 500)[:100])
    done = qd("explain", str(broken))
    err = done.stderr.decode().strip()
    assert done.returncode == 2 and len(err.splitlines()) == 1 and "corrupt gzip data" in err


def test_explain_leaves_the_log_untouched(tmp_path):
    log = tmp_path / "server.log"
    log.write_bytes(OOM.encode() + b"\n")
    before = (log.read_bytes(), log.stat().st_mtime_ns)
    qd("explain", str(log))
    assert (log.read_bytes(), log.stat().st_mtime_ns) == before


def test_one_run_writes_html_junit_json_and_markdown_and_the_json_validates(tmp_path):
    outs = [tmp_path / f"r.{ext}" for ext in ("html", "xml", "json", "md")]
    done = qd("explain", str(LOGS / "llamafactory-7396-watchdog.log"), *(a for o in outs for a in ("-o", str(o))))
    assert done.returncode == 1, done.stderr
    assert "QD-R-NCCL-WATCHDOG-TIMEOUT" in done.stdout.decode(), "the terminal keeps explain's own text"
    schema = json.loads(resources.files("doctor.report").joinpath("report.schema.json").read_text())
    assert list(jsonschema.Draft202012Validator(schema).iter_errors(json.loads(outs[2].read_text()))) == []
    html = outs[0].read_text()
    assert "1 problem found" in html and "QD-R-NCCL-WATCHDOG-TIMEOUT" in html
    cases = ET.parse(outs[1]).getroot().findall(".//testcase")
    assert len(cases) == 1, "a finding is one testcase, not a result and a remedy"
    assert "QD-R-NCCL-WATCHDOG-TIMEOUT" in outs[3].read_text()


def test_secrets_in_log_lines_reach_no_output_byte(tmp_path):
    hf, key = "hf_PlantedInLogLine0123456789abcd", "PlantedApiKeyInLog77aa"
    log = tmp_path / "server.log"
    log.write_text(f"export HF_TOKEN={hf}\nvllm serve m --api-key {key}\n{OOM}\nfetching with token {hf}\n")
    outs = [tmp_path / f"r.{ext}" for ext in ("html", "xml", "json", "md", "txt")]
    done = qd("explain", "--context", "3", str(log), *(a for o in outs for a in ("-o", str(o))))
    assert done.returncode == 1 and "QD-R-TORCH-CUDA-OOM" in done.stdout.decode()
    for blob in [done.stdout, done.stderr, *(o.read_bytes() for o in outs)]:
        assert hf.encode() not in blob and key.encode() not in blob
    assert b"[REDACTED]" in done.stdout


def test_redact_hosts_applies_to_the_terminal_text_too(tmp_path):
    log = tmp_path / "server.log"
    log.write_text(f"connecting to gpu-node-17.corp.example:29500\n{OOM}\nworker 10.20.30.40 died\n")
    done = qd("explain", "--redact-hosts", str(log))
    out = done.stdout.decode()
    assert done.returncode == 1 and "10.20.30.40" not in out and "[IP-1]" in out


def test_a_file_that_is_not_a_text_log_is_refused_in_one_line(tmp_path: Path):
    png = tmp_path / "screenshot.log"
    png.write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 64)
    packed = tmp_path / "core.log.gz"
    packed.write_bytes(gzip.compress(bytes(range(256)) * 64))
    for path in (png, packed):
        done = qd("explain", str(path))
        assert done.returncode == 2
        assert done.stderr.decode().count("\n") == 1 and "not a text log" in done.stderr.decode()


def test_a_log_with_some_binary_junk_is_still_explained(tmp_path: Path):
    log = tmp_path / "junk.log"
    log.write_bytes(b"INFO start\n" * 200 + b"\x00\xff\xfe garbage \x01\x02\n" * 20 + OOM.encode() + b"\n")
    done = qd("explain", str(log))
    assert done.returncode == 1 and b"QD-R-TORCH-CUDA-OOM" in done.stdout


@pytest.mark.parametrize("codec", ["utf-16", "utf-16-be", "utf-32", "utf-8-sig"])
def test_a_log_saved_with_a_byte_order_mark_is_read_as_text(tmp_path: Path, codec: str):
    """PowerShell 5.1's `docker logs vllm > vllm.log` writes UTF-16 LE with a BOM."""
    text = "INFO start\n" * 50 + OOM + "\n"
    encoded = text.encode(codec) if codec != "utf-16-be" else codecs.BOM_UTF16_BE + text.encode(codec)
    log = tmp_path / "vllm.log"
    log.write_bytes(encoded)
    packed = tmp_path / "vllm.log.gz"
    packed.write_bytes(gzip.compress(encoded))
    for args, stdin in (((str(log),), None), ((str(packed),), None), (("-",), encoded)):
        done = qd("explain", *args, stdin=stdin)
        assert done.returncode == 1 and b"QD-R-TORCH-CUDA-OOM" in done.stdout, (args, done.stderr)


def test_a_json_line_nested_past_the_decoders_stack_is_not_a_crash(tmp_path: Path):
    log = tmp_path / "deep.log"
    log.write_text('{"error": ' * 5000 + '"x"' + "}" * 5000 + "\n" + OOM + "\n")
    done = qd("explain", str(log))
    assert done.returncode == 1 and b"QD-R-TORCH-CUDA-OOM" in done.stdout and b"internal error" not in done.stderr
