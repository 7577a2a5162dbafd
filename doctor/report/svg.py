"""The latency percentiles as a small inline SVG chart (no script, no external assets)."""

from __future__ import annotations

from html import escape
from typing import Any

from doctor.report.sections import PERCENTILE_METRICS, PERCENTILES

_LABELS = {"ttft_ms": "TTFT", "tpot_ms": "TPOT", "itl_ms": "ITL", "e2el_ms": "E2E latency"}
_COLORS = {"p50": "#2f855a", "p90": "#d69e2e", "p99": "#c53030"}
WIDTH, LABEL_W, BAR_H, GAP = 560, 110, 14, 16


def latency_chart(percentiles: dict[str, Any]) -> str:
    """One block of p50/p90/p99 bars per metric, each scaled to its own p99 (the metrics differ by 100x)."""
    names = [m for m in PERCENTILE_METRICS if m in percentiles] + sorted(m for m in percentiles
                                                                         if m not in PERCENTILE_METRICS)
    rows: list[str] = []
    y = 4
    bar_w = WIDTH - LABEL_W - 90
    for name in names:
        values = {p: v for p, v in (percentiles.get(name) or {}).items() if isinstance(v, (int, float))}
        if not values:
            continue
        top = max(values.values()) or 1.0
        rows.append(f'<text x="0" y="{y + BAR_H * 1.5 + 4:.0f}" class="lbl">{escape(_LABELS.get(name, name))}</text>')
        for p in PERCENTILES:
            if p not in values:
                y += BAR_H
                continue
            w = max(1.0, bar_w * values[p] / top)
            rows.append(f'<rect x="{LABEL_W}" y="{y}" width="{w:.1f}" height="{BAR_H - 2}" fill="{_COLORS[p]}">'
                        f'<title>{escape(name)} {p}: {values[p]:,.1f} ms</title></rect>')
            rows.append(f'<text x="{LABEL_W + w + 4:.1f}" y="{y + BAR_H - 3}" class="val">'
                        f'{p} {values[p]:,.1f} ms</text>')
            y += BAR_H
        y += GAP
    if not rows:
        return ""
    return (f'<svg class="chart" width="{WIDTH}" height="{y}" '
            f'viewBox="0 0 {WIDTH} {y}" role="img" aria-label="latency percentiles">'
            + "".join(rows) + "</svg>")
