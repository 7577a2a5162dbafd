"""Benchmark: `check --from` on synthetic bundles of 8 to 5,000 GPUs, as a ratio to the 8-GPU bundle.

Each bundle is the recorded A100 fixture with GPU0 replicated (topology recorded for the first 64 GPUs); every
size runs in a fresh interpreter, alternating, and the medians are compared. Before the pairwise topology checks
were bounded to one tensor-parallel group, 300 GPUs took 214 s and 5,000 GPUs 166 s with 5.6 GB of memory.
Usage: python bench/check_scale.py [--repeat 3] [--sizes 8,500,5000] [--json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.support.big_bundle import big_bundle  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--sizes", default="8,500,5000")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    times: dict[int, list[float]] = {n: [] for n in sizes}
    with tempfile.TemporaryDirectory() as tmp:
        paths = {}
        for n in sizes:
            paths[n] = Path(tmp) / f"g{n}.json"
            paths[n].write_text(json.dumps(big_bundle(n, topology_gpus=min(n, 64))))
        for _ in range(args.repeat):
            for n in sizes:
                t0 = time.perf_counter()
                subprocess.run([sys.executable, "-m", "doctor", "check", "--from", str(paths[n]), "--format", "json"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
                times[n].append(time.perf_counter() - t0)
    base = statistics.median(times[sizes[0]])
    rows = [{"gpus": n, "median_s": round(statistics.median(times[n]), 3),
             "ratio_to_smallest": round(statistics.median(times[n]) / base, 2)} for n in sizes]
    if args.json:
        print(json.dumps(rows, indent=1))
        return
    for row in rows:
        print(f"{row['gpus']:>6} GPUs  {row['median_s']:7.2f} s  x{row['ratio_to_smallest']}")


if __name__ == "__main__":
    main()
