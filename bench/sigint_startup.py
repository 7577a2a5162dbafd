"""Benchmark: SIGINT at random moments of the installed `qwen-doctor` command, from 0 ms to the end.

Spawns the command (the launcher beside this interpreter, or --script: `--script .../qwen-doctor-python` runs the
Python program without the launcher's blocked start, as before issue 23's launcher) for several commands, sends SIGINT
after a delay drawn uniformly from 0 to 1.1x the command's own (measured) duration (every other trial from
0 to --startup-ms, where the interpreter's and our imports run), and sorts every ending into the window it
came from:

- handled: exit 130 and one line `qwen-doctor: interrupted...` (last, after any progress lines the command
  printed before the signal; deploy names the stage it stopped);
- finished: the command ended before the signal came (its own exit code, no interrupted line);
- default action (before SIGINT is blocked) / traceback in site or the script / in our code: see
  tests/support/sigint.py;
- other: anything else.

`subprocess.Popen` returns only once the child has exec'd (its error pipe closes on exec), so 0 ms is the
first instant of the new program. Prints a table per window and per command; exits 1 when a trial
printed a traceback from our code or ended otherwise.
Usage: python bench/sigint_startup.py [--trials 60] [--seed 23] [--startup-ms 80] [--script PATH] [--json]
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.support.sigint import sigint_default, window  # noqa: E402


def commands() -> dict[str, list[str]]:
    """The commands tried: every family of start-up (check, explain, lint, plan, profiles, deploy)."""
    return {
        "check": ["check", "--from", str(ROOT / "tests/fixtures/h200.json")],
        "explain": ["explain", str(ROOT / "tests/data/logs/nccl-525-shm.log")],
        "lint": ["lint", str(ROOT / "tests/data/lint/serve.sh")],
        "plan": ["plan", "--gpus", "1xH200"],
        "profiles list": ["profiles", "list"],
        "deploy --dry-run": ["deploy", "--profile", "vllm-stable", "--dry-run"],
        "--version": ["--version"],
    }


def find_script(given: str | None) -> str:
    if given:
        return given
    beside = Path(sys.executable).with_name("qwen-doctor")
    found = str(beside) if beside.exists() else shutil.which("qwen-doctor")
    if not found:
        sys.exit("bench: no qwen-doctor console script (pip install -e . first, or pass --script)")
    return found


def duration_s(script: str, args: list[str]) -> float:
    started = time.monotonic()
    subprocess.run([script, *args], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=300)
    return time.monotonic() - started


def trial(script: str, args: list[str], delay: float) -> tuple[int, str]:
    proc = subprocess.Popen([script, *args], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            preexec_fn=sigint_default)
    time.sleep(delay)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=300)
    return proc.returncode, err.decode("utf-8", "replace")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=60)
    parser.add_argument("--seed", type=int, default=23)
    parser.add_argument("--startup-ms", type=float, default=80.0)
    parser.add_argument("--script")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    script = find_script(args.script)
    cmds = commands()
    lengths = {name: duration_s(script, argv) for name, argv in cmds.items()}
    pick = random.Random(args.seed)
    rows = []
    names = list(cmds)
    for index in range(args.trials):
        name = names[index % len(names)]
        end = args.startup_ms / 1000 if index % 2 else 1.1 * lengths[name]
        delay = pick.uniform(0.0, end)
        code, err = trial(script, cmds[name], delay)
        rows.append({"command": name, "delay_ms": round(delay * 1000, 1), "returncode": code,
                     "window": window(code, err), "stderr_lines": len(err.splitlines()),
                     "stderr_tail": err.strip().splitlines()[-1] if err.strip() else ""})
    bad = [r for r in rows if r["window"].startswith(("traceback", "other"))]
    if args.json:
        print(json.dumps({"script": script, "durations_ms": {k: round(v * 1000) for k, v in lengths.items()},
                          "trials": rows, "bad": len(bad)}, indent=2))
        sys.exit(1 if any(r["window"] in ("traceback: our code", "other") for r in bad) else 0)
    print(f"script: {script}")
    print("command durations (ms): " + ", ".join(f"{k} {v * 1000:.0f}" for k, v in lengths.items()))
    print(f"\n{'window':<48}{'trials':>7}{'delays (ms)':>22}")
    by_window: dict[str, list[float]] = {}
    for r in rows:
        by_window.setdefault(r["window"], []).append(r["delay_ms"])
    for where, delays in sorted(by_window.items(), key=lambda kv: min(kv[1])):
        print(f"{where:<48}{len(delays):>7}{min(delays):>11.1f} - {max(delays):<8.1f}")
    print("\nexit codes: " + ", ".join(f"{k}: {v}" for k, v in sorted(Counter(r['returncode'] for r in rows).items())))
    for r in bad:
        print(f"BAD {r['command']} at {r['delay_ms']} ms: rc {r['returncode']}, {r['stderr_lines']} lines, "
              f"{r['window']}: {r['stderr_tail'][:120]}")
    ours = [r for r in bad if r["window"] in ("traceback: our code", "other")]
    print(f"\n{len(rows)} trials, {len(bad)} with a traceback or another ending: {len(ours)} in our code, "
          f"{len(bad) - len(ours)} in the interpreter before our first statement")
    sys.exit(1 if ours else 0)


if __name__ == "__main__":
    main()
