"""A tiny run of bench/explain_speed.py: it generates, times both tools and they agree on what matched."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.skipif(shutil.which("grep") is None, reason="needs grep")
def test_bench_smoke_run_reports_a_ratio_and_both_tools_find_the_same_lines(tmp_path):
    done = subprocess.run([sys.executable, str(ROOT / "bench" / "explain_speed.py"), "--size", "3M",
                           "--error-every", "500", "--dir", str(tmp_path)],
                          capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    grep_lines = int(re.search(r"grep -F -f .*, (\d+) lines", done.stdout).group(1))
    explain_lines = int(re.search(r"explain matcher: .*, (\d+) lines", done.stdout).group(1))
    sprinkled = int(re.search(r"(\d+) error lines sprinkled", done.stdout).group(1))
    assert grep_lines == explain_lines == sprinkled > 0
    assert re.search(r"ratio \(explain throughput / grep throughput\): \d+\.\d\d wall, \d+\.\d\d cpu", done.stdout)
    assert (tmp_path / "bench.log").stat().st_size >= 3 << 20


@pytest.mark.skipif(shutil.which("grep") is None, reason="needs grep")
def test_bench_compares_another_checkout_on_the_same_log_and_prints_this_ones_ratios_to_it(tmp_path):
    done = subprocess.run([sys.executable, str(ROOT / "bench" / "explain_speed.py"), "--size", "2M",
                           "--error-every", "500", "--dir", str(tmp_path), "--compare", str(ROOT), "--repeat", "2"],
                          capture_output=True, text=True, timeout=180, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    sprinkled = int(re.search(r"(\d+) error lines sprinkled", done.stdout).group(1))
    assert "same log, median of 2 interleaved runs" in done.stdout
    assert re.search(rf"  \.: cpu \d+\.\d\d s, wall \d+\.\d\d s, {sprinkled} lines\n", done.stdout)
    assert re.search(rf"  {re.escape(str(ROOT))}: cpu \d+\.\d\d s, wall \d+\.\d\d s, {sprinkled} lines  "
                     r"this / it: cpu \d+\.\d\d, wall \d+\.\d\d", done.stdout)


def test_bench_refuses_a_comparison_with_a_directory_that_is_no_checkout(tmp_path):
    done = subprocess.run([sys.executable, str(ROOT / "bench" / "explain_speed.py"), "--size", "1M",
                           "--dir", str(tmp_path), "--compare", str(tmp_path)],
                          capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert done.returncode == 2 and done.stderr.strip() == f"not a qwen-doctor checkout: {tmp_path}"


def _coverage():
    sys.path.insert(0, str(ROOT / "bench"))
    import explain_coverage

    return explain_coverage


def test_coverage_counts_an_entry_a_source_located_finding_and_a_miss():
    coverage = _coverage()
    from remedies import Matcher

    matcher = Matcher()
    kv = {"template": "The model's max seq len ({}) is larger than the maximum number of tokens that can be stored in "
                      "KV cache ({}). Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when "
                      "initializing the engine.", "kind": "raise:ValueError",
          "sites": [{"module": "vllm/worker/worker.py", "function": "raise_if_cache_size_invalid"}]}
    mamba = {"template": "--mamba-block-size can only be set with --enable-prefix-caching", "kind": "raise:ValueError",
             "sites": [{"module": "vllm/config/vllm.py", "function": "VllmConfig.validate_mamba_block_size"}]}
    unmined = {"template": "the flux capacitor needs {} gigawatts before the engine may start", "kind": "raise:ValueError",
               "sites": [{"module": "vllm/flux.py", "function": "charge"}]}
    assert coverage.outcome(kv, matcher) == "entry"
    assert coverage.outcome(mamba, matcher) == "source"
    assert coverage.outcome(unmined, matcher) == "missed"
