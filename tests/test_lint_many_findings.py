"""A file with thousands of findings (issue 23): the terminal shows a screen per rule and counts the rest, the
JSON report and the exit code keep every finding, and the work grows linearly with the file."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from doctor.flags.schema import load_schema
from doctor.lint.results import SHOWN_PER_RULE


def _script(path: Path, lines: int) -> Path:
    body = "".join(f"vllm serve Qwen/Qwen3.5-35B-A3B --unknwn-flg-{i} 1 --enable-chunk-prefill\n" for i in range(lines))
    path.write_text("#!/bin/sh\n" + body)
    return path


def _lint(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "doctor", "lint", *args], capture_output=True, text=True,
                          timeout=300)


def test_the_terminal_shows_each_rule_up_to_its_cap_and_counts_the_rest_while_json_keeps_all(tmp_path: Path) -> None:
    script = _script(tmp_path / "serve.sh", 150)
    report = tmp_path / "r.json"
    proc = _lint(str(script), "-o", str(report))
    assert proc.returncode == 1
    assert "300 finding(s) in 1 file(s)" in proc.stderr
    shown = [line for line in proc.stdout.splitlines() if "FLAG-unknown_flag" in line and "✗" in line]
    assert len(shown) == SHOWN_PER_RULE
    assert f"… {300 - SHOWN_PER_RULE} more FLAG-unknown_flag finding(s) not shown (300 in all" in proc.stdout
    results = json.loads(report.read_text())["results"]
    assert len(results) == 300 and {r["evidence"]["line"] for r in results} == set(range(2, 152))


def test_a_few_findings_are_all_shown_without_a_count_line(tmp_path: Path) -> None:
    proc = _lint(str(_script(tmp_path / "serve.sh", 3)))
    assert proc.stdout.count("✗ FLAG-unknown_flag") == 6 and "not shown" not in proc.stdout


def test_abbreviation_candidates_by_bisection_equal_a_scan_of_every_spelling() -> None:
    schema = load_schema("vllm")
    names = schema.option_strings()
    for prefix in ["--max", "--enable-chunk", "--tensor-parallel-size", "--zz", "--", "--no-enable-p", "-"]:
        assert schema.starting_with(prefix) == [n for n in names if n.startswith(prefix)]
