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


def import_times(module: str, repeat: int) -> list[float]:
    """Seconds `module` takes to import in fresh interpreters, measured inside each by `-X importtime`
    (the cumulative time of the module's own line): no interpreter start-up in it, nothing subtracted."""
    times = []
    for _ in range(repeat):
        done = subprocess.run([sys.executable, "-X", "importtime", "-c", f"import {module}"],
                              capture_output=True, text=True, check=True)
        for line in done.stderr.splitlines():
            parts = [p.strip() for p in line.removeprefix("import time:").split("|")]
            if len(parts) == 3 and parts[2] == module:
                times.append(int(parts[1]) / 1e6)
    if not times:
        raise SystemExit(f"-X importtime printed no line for {module}")
    return times


def median_interval(values: list[float]) -> tuple[float, float, float]:
    """Median with a distribution-free ~95% confidence interval from order statistics."""
    ordered = sorted(values)
    n = len(ordered)
    half = 0.98 * n ** 0.5
    low, high = max(0, int(n / 2 - half)), min(n - 1, int(n / 2 + half))
    return statistics.median(ordered), ordered[low], ordered[high]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--import-repeat", type=int, default=30, help="Fresh interpreters for the import time.")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    doctor = [sys.executable, "-m", "doctor", "check", "--format", "json"]
    baseline = [sys.executable, "-m", "torch.utils.collect_env"]
    has_torch = subprocess.run([sys.executable, "-c", "import torch"], capture_output=True).returncode == 0
    imports = median_interval(import_times("doctor.cli.main", args.import_repeat))
    d, b = [], []
    for _ in range(args.repeat):
        d += wall(doctor, 1)
        if has_torch:
            b += wall(baseline, 1)
    result = {
        "check_median_s": round(statistics.median(d), 3),
        "collect_env_median_s": round(statistics.median(b), 3) if b else None,
        "ratio_check_over_collect_env": round(statistics.median(d) / statistics.median(b), 3) if b else None,
        "cli_import_s": round(imports[0], 4),
        "cli_import_ci95_s": [round(imports[1], 4), round(imports[2], 4)],
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
    low, high = result["cli_import_ci95_s"]
    print(f"CLI module import       {result['cli_import_s'] * 1000:.1f} ms, 95% CI {low * 1000:.1f}-{high * 1000:.1f} ms "
          f"over {args.import_repeat} interpreters (-X importtime; goal < 150 ms)")
    print(f"qwen-doctor --help      median {result['cli_help_s']:.3f} s")


if __name__ == "__main__":
    main()
