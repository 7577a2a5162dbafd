"""Benchmark: `qwen-doctor plan` wall time (the issue's budget is 300 ms) and its parts.

Reports medians of: a bare interpreter start, `python -m doctor plan ...` end to end (fitting and
non-fitting plans; the latter evaluates every suggestion), and the in-process planning alone.
Usage: python bench/plan_speed.py [--repeat 7] [--json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CASES = {
    "fits": ["--gpus", "2xH100", "--tp", "2"],
    "does-not-fit": ["--gpus", "1xH100"],
    "sglang-pp2": ["--gpus", "4xL40S", "--tp", "2", "--pp", "2", "--model", "fp8", "--backend", "sglang"],
}


def wall(argv: list[str], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False, cwd=ROOT)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def in_process(repeat: int) -> float:
    sys.path.insert(0, str(ROOT))
    from doctor.models import get_model
    from doctor.planner import ServeConfig, parse_gpus, plan
    from doctor.planner.render import render_text

    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        render_text(plan(get_model("Qwen/Qwen3.5-35B-A3B"), parse_gpus("1xH100"), ServeConfig()))
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    result = {"python_start_s": wall([sys.executable, "-c", "pass"], args.repeat)}
    for name, argv in CASES.items():
        result[f"plan_{name}_s"] = wall([sys.executable, "-m", "doctor", "plan", *argv], args.repeat)
    result["plan_in_process_s"] = in_process(args.repeat)
    if args.json:
        print(json.dumps(result, indent=2))
        return
    for key, value in result.items():
        print(f"{key:<28} {value * 1000:8.1f} ms")


if __name__ == "__main__":
    main()
