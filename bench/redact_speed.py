"""Benchmark: redaction of 1 MiB adversarial inputs against a trivial baseline (str.replace) in the same run.

Each input repeats the starts of the redaction patterns (flags, assignments, URLs, tokens, PEM headers,
escape sequences, host names) so that a backtracking pattern would rescan it from every start. Prints, per
input, redact_text and the report pass (--redact-hosts, control characters) in ms, their ratio to one
str.replace over the same text, and the growth from 1/4 of the size to the full size (4 means linear,
16 quadratic). Times are the best of --repeat runs (the machine may be shared).
`--logs` instead times redact_text over the repository's multi-line test logs (tests/**/*.log and *.txt), the
texts whose views (joined, unwrapped) are scanned besides the text itself; `--tree DIR` times another source tree
(an export of an older commit) on the same logs, for a before / after.
Usage: python bench/redact_speed.py [--size 1048576] [--repeat 3] [--json] [--logs [--tree DIR]]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Callable

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from doctor.redact import redact_document, redact_text  # noqa: E402
from tests.support.redact_inputs import PIECES, adversarial  # noqa: E402


def best_s(fn: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def measure(piece: str, size: int, repeat: int) -> dict[str, float]:
    text, quarter = adversarial(piece, size), adversarial(piece, size // 4)
    base = best_s(lambda: text.replace("hf_", "[REDACTED]"), repeat)
    red = best_s(lambda: redact_text(text), repeat)
    doc = best_s(lambda: redact_document({"log": [text]}, hosts=True, visible=True), repeat)
    doc_quarter = best_s(lambda: redact_document({"log": [quarter]}, hosts=True, visible=True), repeat)
    return {"baseline_ms": round(base * 1000, 2), "redact_text_ms": round(red * 1000, 1),
            "report_pass_ms": round(doc * 1000, 1), "text_ratio": round(red / base, 1),
            "report_ratio": round(doc / base, 1), "growth_x4": round(doc / doc_quarter, 2)}


def multi_line_logs(tree: Path, repeat: int) -> None:
    """redact_text of `tree` over this repository's multi-line test logs, in a fresh interpreter per tree."""
    import subprocess

    root = Path(__file__).resolve().parents[1]
    texts = sorted(p for pattern in ("tests/**/*.log", "tests/**/*.txt") for p in root.glob(pattern))
    script = ("import sys, time; sys.path.insert(0, sys.argv[1]); from doctor.redact import redact_text; "
              "texts = [open(p, errors='replace').read() for p in sys.argv[3:]]; best = 1e9\n"
              "for _ in range(int(sys.argv[2])):\n t = time.perf_counter(); [redact_text(x) for x in texts]; "
              "best = min(best, time.perf_counter() - t)\n"
              "print(f'{len(texts)} logs, {sum(map(len, texts)) / 1e6:.2f} MB: redact_text {best * 1000:.0f} ms')")
    done = subprocess.run([sys.executable, "-c", script, str(tree), str(repeat), *map(str, texts)],
                          capture_output=True, text=True, check=True)
    print(f"{tree}: {done.stdout.strip()}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=1 << 20)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--logs", action="store_true")
    parser.add_argument("--tree", type=Path, default=Path(__file__).resolve().parents[1])
    args = parser.parse_args()
    if args.logs:
        multi_line_logs(args.tree.resolve(), args.repeat)
        return
    rows = {piece: measure(piece, args.size, args.repeat) for piece in PIECES}
    if args.json:
        print(json.dumps(rows, indent=2))
        return
    print(f"{'input':<26}{'str.replace':>12}{'redact_text':>13}{'report pass':>13}{'ratio':>8}{'growth x4':>11}")
    for piece, r in rows.items():
        print(f"{repr(piece)[:24]:<26}{r['baseline_ms']:>10} ms{r['redact_text_ms']:>10} ms{r['report_pass_ms']:>10} ms"
              f"{r['report_ratio']:>8}{r['growth_x4']:>11}")
    worst = max(rows.values(), key=lambda r: r["report_pass_ms"])
    print(f"worst report pass: {worst['report_pass_ms']} ms per MiB ({worst['report_ratio']}x str.replace), "
          f"max growth for 4x input: {max(r['growth_x4'] for r in rows.values())}")


if __name__ == "__main__":
    main()
