"""Terminal lines for the deployment section of a report: start, remedies, burst metrics, log excerpt."""

from __future__ import annotations

from typing import Any

METRIC_ROWS = (("TTFT", "ttft"), ("TPOT", "tpot"), ("ITL", "itl"), ("E2EL", "e2el"))


def render_deployment(section: dict[str, Any], excerpt_lines: int = 12) -> str:
    """A compact block: where the log is, phases, matched remedies, metrics and the log's last lines."""
    start = section.get("start", {})
    lines = ["", f"Deployment {section.get('profile') or ''} ({section.get('backend')}) at {section.get('base_url')}",
             f"  start: {start.get('state')} after {start.get('seconds')} s; log: {section.get('log_path')}"]
    phases = section.get("phases") or {}
    if phases:
        lines.append("  phases: " + " → ".join(f"{name} {t:.0f}s" for name, t in phases.items()))
    for hit in section.get("remedies") or []:
        lines.append(f"  remedy {hit['id']} (log line {hit['lineno']}): {hit['title']}")
        lines += [f"      → {step}" for step in hit["fix"]]
    m = section.get("metrics") or {}
    if m.get("completed"):
        lines.append(f"  burst: {m['completed']} ok / {m['failed']} failed in {m['duration']:.2f} s, "
                     f"request_throughput {m['request_throughput']:.2f} req/s, "
                     f"output_throughput {m['output_throughput']:.1f} tok/s")
        lines.append(f"  {'(ms)':<6}{'mean':>9}{'p50':>9}{'p90':>9}{'p99':>9}")
        for label, key in METRIC_ROWS:
            lines.append(f"  {label:<6}" + "".join(f"{m.get(f'{s}_{key}_ms', 0.0):>9.1f}"
                                                   for s in ("mean", "p50", "p90", "p99")))
    if start.get("state") != "ready":
        tail = (section.get("log_excerpt") or [])[-excerpt_lines:]
        if tail:
            lines.append("  last log lines:")
            lines += [f"    {line[:200]}" for line in tail]
    lines.append(f"  stop: {section.get('stop')}")
    return "\n".join(lines) + "\n"
