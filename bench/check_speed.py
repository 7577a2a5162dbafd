"""Benchmark: `qwen-doctor check` wall time against `python -m torch.utils.collect_env`, and CLI import time.

Both commands run on the same machine in the same run, alternating, and the medians are compared.
Usage: python bench/check_speed.py [--repeat 5] [--json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time


def wall(argv: list[str], repeat: int) -> list[float]:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
        times.append(time.perf_counter() - t0)
    return times


def import_time(module: str, repeat: int) -> float:
    """Median seconds to import `module` in a fresh interpreter, minus a bare interpreter start."""
    bare = statistics.median(wall([sys.executable, "-c", "pass"], repeat))
    full = statistics.median(wall([sys.executable, "-c", f"import {module}"], repeat))
    return max(0.0, full - bare)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    doctor = [sys.executable, "-m", "doctor", "check", "--format", "json"]
    baseline = [sys.executable, "-m", "torch.utils.collect_env"]
    has_torch = subprocess.run([sys.executable, "-c", "import torch"], capture_output=True).returncode == 0
    d, b = [], []
    for _ in range(args.repeat):
        d += wall(doctor, 1)
        if has_torch:
            b += wall(baseline, 1)
    result = {
        "check_median_s": round(statistics.median(d), 3),
        "collect_env_median_s": round(statistics.median(b), 3) if b else None,
        "ratio_check_over_collect_env": round(statistics.median(d) / statistics.median(b), 3) if b else None,
        "cli_import_s": round(import_time("doctor.cli.main", args.repeat), 4),
        "cli_help_s": round(statistics.median(wall([sys.executable, "-m", "doctor", "--help"], args.repeat)), 3),
        "repeat": args.repeat,
    }
    if args.json:
        print(json.dumps(result))
        return
    print(f"qwen-doctor check       median {result['check_median_s']:.3f} s")
    if b:
        print(f"torch collect_env       median {result['collect_env_median_s']:.3f} s (baseline)")
        print(f"ratio check/collect_env {result['ratio_check_over_collect_env']:.3f}  (goal < 0.2)")
    else:
        print("torch is not installed: no baseline (pip install torch==2.13.0 for the comparison)")
    print(f"CLI module import       {result['cli_import_s'] * 1000:.1f} ms  (goal < 150 ms)")
    print(f"qwen-doctor --help      median {result['cli_help_s']:.3f} s")


if __name__ == "__main__":
    main()
