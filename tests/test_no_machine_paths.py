"""No developer's machine paths in the project's own code, comments, defaults, docs or skip reasons.

Recorded logs and real log excerpts (tests/data, remedies' samples, fixtures) and the vendored recipes snapshot
(profiles/sources, verbatim upstream files) are evidence and keep the paths they were recorded with."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MACHINE_PATH = re.compile(r"(?<![\w.])/(?:work|root|home/[a-z][\w-]*)/")
EVIDENCE = ("tests/data/", "tests/fixtures/", "remedies/catalogue/", "remedies/healthy-sample.txt", "docs/remedies.md",
            "remedies/signatures/", "tests/test_redact", "tests/test_no_machine_paths.py", "profiles/sources/")


def test_no_tracked_file_outside_the_evidence_names_a_machine_path() -> None:
    files = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    offenders = []
    for name in files:
        if name.startswith(EVIDENCE) or not name.endswith((".py", ".md", ".yaml", ".yml", ".toml", ".sh", ".j2", ".txt")):
            continue
        text = (ROOT / name).read_text(encoding="utf-8", errors="replace")
        offenders += [f"{name}:{n}: {line.strip()[:100]}" for n, line in enumerate(text.splitlines(), 1)
                      if MACHINE_PATH.search(line)]
    assert not offenders, "\n".join(offenders)
