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
