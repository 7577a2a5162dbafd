"""Benchmark: `qwen-doctor lint` of shell scripts full of unknown flags (~41k findings per MiB), this tree
against a baseline commit in the same run.

Each input line is a `vllm serve` with eight distinct unknown flags and one misspelt one, so every finding
is a different string (nothing can be answered from one cached line). The baseline (default a048b25, before
issue 23's lint work) is exported with `git archive` and run the same way (`python -m doctor` from its
folder). Prints the CPU seconds of each (user + system of the child), the ratio baseline / current and the
growth of the current code from the smallest to the largest size (linear: the size ratio).
Usage: python bench/lint_speed.py [--sizes 262144,1048576,4190000] [--baseline-sizes 262144,1048576]
                                  [--baseline a048b25] [--json]
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import subprocess
import sys
import tarfile
import tempfile
from io import BytesIO
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def script(size: int, seed: int = 5) -> str:
    pick = random.Random(seed)
    lines, total = ["#!/bin/sh\n"], 0
    while total < size:
        flags = " ".join(f"--unknwn-flg-{pick.randrange(10 ** 6)} 1" for _ in range(8))
        line = f"vllm serve Qwen/Qwen3.5-35B-A3B --enable-chunk-prefill {flags}\n"
        lines.append(line)
        total += len(line)
    return "".join(lines)


def cpu_s(tree: Path, path: Path) -> tuple[float, str]:
    """CPU seconds of `python -m doctor lint PATH` run from `tree`, and its stderr's last line."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    proc = subprocess.run([sys.executable, "-m", "doctor", "lint", str(path)], cwd=tree, capture_output=True,
                          text=True, timeout=3600)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    spent = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return spent, (proc.stderr.strip().splitlines() or [""])[-1]


def export(commit: str, into: Path) -> Path:
    data = subprocess.run(["git", "-C", str(ROOT), "archive", commit], capture_output=True, check=True).stdout
    with tarfile.open(fileobj=BytesIO(data)) as tar:
        tar.extractall(into)
    return into


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="262144,1048576,4190000")
    parser.add_argument("--baseline-sizes", default="262144,1048576")
    parser.add_argument("--baseline", default="a048b25")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    base_sizes = {int(s) for s in args.baseline_sizes.split(",") if s}
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        base = export(args.baseline, Path(tmp) / "baseline") if base_sizes else None
        for size in sizes:
            path = Path(tmp) / f"lint-{size}.sh"
            path.write_text(script(size))
            now, line = cpu_s(ROOT, path)
            row = {"size": size, "findings": line, "current_s": round(now, 2)}
            if base is not None and size in base_sizes:
                before, _ = cpu_s(base, path)
                row |= {"baseline_s": round(before, 2), "ratio": round(before / now, 1)}
            rows.append(row)
    growth = rows[-1]["current_s"] / rows[0]["current_s"]
    size_ratio = sizes[-1] / sizes[0]
    if args.json:
        print(json.dumps({"rows": rows, "growth": round(growth, 2), "size_ratio": size_ratio}, indent=2))
        return
    print(f"{'size':>10}  {'findings':<32}{'baseline':>10}{'current':>10}{'ratio':>8}")
    for r in rows:
        base_s = f"{r['baseline_s']:.1f} s" if "baseline_s" in r else "-"
        ratio = f"{r['ratio']}x" if "ratio" in r else "-"
        print(f"{r['size']:>10}  {r['findings']:<32}{base_s:>10}{r['current_s']:>8.1f} s{ratio:>8}")
    print(f"growth {sizes[0]} -> {sizes[-1]} bytes: {growth:.1f}x for {size_ratio:.0f}x the size")


if __name__ == "__main__":
    main()
