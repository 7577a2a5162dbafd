"""Benchmark: what the `qwen-doctor` launcher (sh, `env --block-signal=INT`, then Python) adds to a command's
start-up, against the Python program run directly, interleaved in one run.

Runs `--version` (the shortest command: start-up is nearly all of it) and `profiles list` --runs times through
each and prints the medians and the ratio launcher / program.
Usage: python bench/startup_cost.py [--runs 40] [--json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path


def seconds(argv: list[str]) -> float:
    started = time.perf_counter()
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True, timeout=120)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=40)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    here = Path(sys.executable).parent
    launcher, program = str(here / "qwen-doctor"), str(here / "qwen-doctor-python")
    rows = {}
    for words in (["--version"], ["profiles", "list"]):
        times: dict[str, list[float]] = {"launcher": [], "program": []}
        for _ in range(args.runs):
            times["launcher"].append(seconds([launcher, *words]))
            times["program"].append(seconds([program, *words]))
        medians = {name: statistics.median(values) * 1000 for name, values in times.items()}
        rows[" ".join(words)] = {"launcher_ms": round(medians["launcher"], 1),
                                 "program_ms": round(medians["program"], 1),
                                 "added_ms": round(medians["launcher"] - medians["program"], 1),
                                 "ratio": round(medians["launcher"] / medians["program"], 3)}
    if args.json:
        print(json.dumps(rows, indent=2))
        return
    print(f"{'command':<16}{'launcher ms':>13}{'program ms':>12}{'added ms':>10}{'ratio':>8}   ({args.runs} runs)")
    for name, row in rows.items():
        print(f"{name:<16}{row['launcher_ms']:>13}{row['program_ms']:>12}{row['added_ms']:>10}{row['ratio']:>8}")


if __name__ == "__main__":
    main()
