"""Terminal lines for a deployment, after the generic report text (which already shows the exercises as
QD-DEPLOY-* results, the latency percentiles and the matched remedies): where it ran, phases, the burst's
throughput, the log's last lines when the start failed, and how it stopped."""

from __future__ import annotations

from typing import Any


def render_deployment(sections: dict[str, Any], excerpt_lines: int = 12) -> str:
    """A compact block from a (redacted) report's sections; empty when there was no deployment."""
    section = sections.get("deployment") or {}
    if "start" not in section:
        return ""
    start = section.get("start", {})
    lines = ["", f"Deployment {section.get('profile') or ''} ({section.get('backend')}) at {section.get('url')}",
             f"  start: {start.get('state')} after {start.get('seconds')} s; log: {section.get('log_path')}"]
    phases = section.get("phases") or {}
    if phases:
        lines.append("  phases: " + " → ".join(f"{name} {t:.0f}s" for name, t in phases.items()))
    m = sections.get("metrics") or {}
    if m.get("requests"):
        tput = m.get("throughput") or {}
        errors = int(m.get("errors") or 0)
        lines.append(f"  burst: {m['requests'] - errors} ok / {errors} failed in {m.get('duration_s', 0.0):.2f} s, "
                     f"{tput.get('requests_per_s', 0.0):.2f} req/s, {tput.get('output_tokens_per_s', 0.0):.1f} "
                     f"output tok/s at concurrency {m.get('concurrency', '?')}")
    if start.get("state") != "ready":
        tail = (section.get("log_excerpt") or [])[-excerpt_lines:]
        if tail:
            lines.append("  last log lines:")
            lines += [f"    {line[:200]}" for line in tail]
    lines.append(f"  stop: {section.get('stop')}")
    return "\n".join(lines) + "\n"
