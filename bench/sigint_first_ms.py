"""Benchmark: SIGINT in the first milliseconds of `qwen-doctor --version`, the launcher against the Python program
run directly, interleaved in one run.

For each delay in 0..--ms in steps of --step-ms, sends SIGINT to a fresh process `--repeat` times per command
and sorts each ending by window (tests/support/sigint.py). The programs compared: the `qwen-doctor` launcher
beside this interpreter (sh, then `env --block-signal=INT`, then Python) and `qwen-doctor-python` beside it
(Python alone, as the command was before issue 23's launcher). Prints, per command, the endings per window and
the width of each window in ms (the share of trials times the span of delays).
Usage: python bench/sigint_first_ms.py [--ms 12] [--step-ms 0.25] [--repeat 4] [--json]
"""

from __future__ import annotations

import argparse
import json
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.support.sigint import sigint_default, window  # noqa: E402


def ending(command: str, delay: float) -> str:
    proc = subprocess.Popen([command, "--version"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            preexec_fn=sigint_default)
    if delay:
        time.sleep(delay)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    return window(proc.returncode, err.decode("utf-8", "replace"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ms", type=float, default=12.0)
    parser.add_argument("--step-ms", type=float, default=0.25)
    parser.add_argument("--repeat", type=int, default=4)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    here = Path(sys.executable).parent
    commands = {"launcher": str(here / "qwen-doctor"), "python program alone": str(here / "qwen-doctor-python")}
    steps = int(args.ms / args.step_ms) + 1
    delays = [index * args.step_ms / 1000 for index in range(steps)]
    tallies: dict[str, Counter[str]] = {name: Counter() for name in commands}
    for _ in range(args.repeat):
        for delay in delays:
            for name, command in commands.items():
                tallies[name][ending(command, delay)] += 1
    total = len(delays) * args.repeat
    span_ms = args.ms + args.step_ms
    widths = {name: {where: round(count / total * span_ms, 2) for where, count in tally.items()}
              for name, tally in tallies.items()}
    if args.json:
        print(json.dumps({"delays_ms": [0, args.ms], "trials_per_command": total, "endings": tallies,
                          "window_ms": widths}, indent=2))
        return
    print(f"{total} trials per command, SIGINT from 0 to {args.ms} ms after spawn")
    for name, tally in tallies.items():
        print(f"\n{name}:")
        for where, count in tally.most_common():
            print(f"  {where:<48}{count:>5}  ~{widths[name][where]:.2f} ms")


if __name__ == "__main__":
    main()
