"""Benchmark: redaction and rendering of one report in every format, and the redaction pass over a long log.

Renders the h200 bundle's `check` report (with its raw facts) per format, then redacts a report carrying N
server-log lines (half of them with a bearer token) with and without --redact-hosts.
Usage: python bench/report_speed.py [--repeat 5] [--lines 20000] [--json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Callable

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from doctor import registry, runner  # noqa: E402
from doctor.context import CheckContext  # noqa: E402
from doctor.facts.model import Facts  # noqa: E402
from doctor.report.model import Report, summarize  # noqa: E402
from doctor.report.outputs import FORMATS, render  # noqa: E402

BUNDLE = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "h200.json"


def median_ms(fn: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return round(statistics.median(times) * 1000, 2)


def check_report() -> Report:
    facts = Facts.load(BUNDLE)
    reg = registry.load(plugins=False)
    results = runner.run_checks(runner.select(reg, None, ()), CheckContext(facts=facts))
    return Report(command="check", results=results, facts_summary=summarize(facts, "bundle"), facts=facts.data)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--lines", type=int, default=20000)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    report = check_report()
    out: dict[str, float] = {"redact_check_report_ms": median_ms(report.redacted, args.repeat)}
    safe = report.redacted()
    for fmt in FORMATS:
        out[f"render_{fmt}_ms"] = median_ms(lambda f=fmt: render(safe, f), args.repeat)
    lines = [f"INFO 12-02 15:55:{i % 60:02d} [engine.py:{i}] throughput 402.7 tokens/s from 10.0.{i % 250}.7"
             + (f" Authorization: Bearer tok{i:08d}" if i % 2 else "") for i in range(args.lines)]
    logged = Report(command="explain", results=[], sections={"logs": [{"source": "server.log", "lines": lines}]})
    out[f"redact_{args.lines}_log_lines_ms"] = median_ms(logged.redacted, max(1, args.repeat // 2))
    out[f"redact_hosts_{args.lines}_log_lines_ms"] = median_ms(lambda: logged.redacted(hosts=True),
                                                               max(1, args.repeat // 2))
    if args.json:
        print(json.dumps(out, indent=1))
    else:
        for key, value in out.items():
            print(f"{key:<36} {value:>10.2f}")


if __name__ == "__main__":
    main()
