"""`qwen-doctor remedies list|show` and the generated Markdown catalogue."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from remedies import load_catalogue
from remedies.docs import DOCS_PATH, render_markdown

ROOT = Path(__file__).resolve().parents[1]


def qd(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "doctor", *args], capture_output=True, text=True, env=env,
                          cwd=ROOT, timeout=60)


def test_list_prints_one_line_per_entry_and_filters_by_component():
    assert len(qd("remedies", "list").stdout.splitlines()) == len(load_catalogue())
    spark = qd("remedies", "list", "--component", "spark").stdout.splitlines()
    assert spark and all(" spark " in line for line in spark)


def test_show_prints_samples_fix_and_sources_and_json_uses_the_entry_schema():
    text = qd("remedies", "show", "qd-r-sglang-cuda-graph-capture").stdout
    assert "Capture cuda graph failed" in text and "--cuda-graph-max-bs-decode" in text and "sglang>=0.5.23" in text
    (entry,) = json.loads(qd("remedies", "show", "QD-R-SGLANG-KV-POOL-FULL", "--format", "json").stdout)
    assert entry == load_catalogue().get("QD-R-SGLANG-KV-POOL-FULL").to_dict()
    assert "RadixAttention table full" in entry["article_claim"]


def test_show_of_an_unknown_id_is_a_one_line_error_with_exit_2():
    done = qd("remedies", "show", "QD-R-NOPE")
    assert done.returncode == 2 and done.stderr.strip().count("\n") == 0 and "QD-R-NOPE" in done.stderr


def test_generated_docs_are_up_to_date():
    assert DOCS_PATH.read_text(encoding="utf-8") == render_markdown(load_catalogue()), \
        "run: python -m remedies.docs"


def test_docs_have_every_section_for_every_entry():
    doc = render_markdown(load_catalogue())
    for remedy in load_catalogue():
        section = doc.split(f"### {remedy.id}:")[1].split("\n### ")[0]
        for heading in ("**Looks like**", "**Why it happens**", "**Fix**", "**Source**"):
            assert heading in section, (remedy.id, heading)


def test_show_in_the_terminal_prints_no_raw_markdown():
    from remedies.terminal import render_entry_terminal

    for remedy in load_catalogue():
        sample_lines = {part.strip() for sample in remedy.samples for part in sample.splitlines()}
        shown = [line for line in render_entry_terminal(remedy).splitlines()
                 if not line.lstrip().startswith(("Matches:", "- ")) and line.strip() not in sample_lines]
        text = "\n".join(shown)
        assert "###" not in text and "**" not in text and "```" not in text and "`" not in text, remedy.id
