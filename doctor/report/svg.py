"""The latency percentiles as a small inline SVG chart (no script, no external assets).

Every metric's p50/p90/p99 bars share one logarithmic millisecond axis, drawn with labelled ticks at each
decade, so that TTFT and ITL (often 100x apart) can be compared at a glance and read off the axis.
"""

from __future__ import annotations

import math
from html import escape

from doctor.report.sections import PERCENTILES

_COLORS = {"p50": "#2f855a", "p90": "#d69e2e", "p99": "#c53030"}
WIDTH, LABEL_W, BAR_H, GAP, AXIS_H, RIGHT = 640, 130, 12, 10, 34, 20


def _ms_label(value: float) -> str:
    return f"{value / 1000:g} s" if value >= 1000 else f"{value:g} ms"


def latency_chart(rows: list[tuple[str, dict[str, float]]]) -> str:
    """Bars for (label, {p50, p90, p99} in ms) rows on one labelled log axis; empty without values."""
    values = [v for _, row in rows for p, v in row.items() if p in PERCENTILES and isinstance(v, (int, float))
              and v > 0]
    if not values:
        return ""
    lo = 10 ** math.floor(math.log10(min(values)))
    hi = 10 ** math.ceil(math.log10(max(values)))
    hi = hi * 10 if hi == lo else hi
    span = math.log10(hi) - math.log10(lo)
    plot_w = WIDTH - LABEL_W - RIGHT

    def x(v: float) -> float:
        return LABEL_W + plot_w * (math.log10(max(v, lo)) - math.log10(lo)) / span

    parts: list[str] = []
    y = 4
    for label, row in rows:
        present = [p for p in PERCENTILES if isinstance(row.get(p), (int, float))]
        if not present:
            continue
        parts.append(f'<text x="0" y="{y + BAR_H * len(present) / 2 + 4:.0f}" class="lbl">{escape(label)}</text>')
        for p in present:
            v = float(row[p])
            w = max(1.0, x(v) - LABEL_W)
            parts.append(f'<rect x="{LABEL_W}" y="{y}" width="{w:.1f}" height="{BAR_H - 2}" fill="{_COLORS[p]}">'
                         f'<title>{escape(label)} {p} {v:,.1f} ms</title></rect>')
            y += BAR_H
        y += GAP
    axis_y = y
    parts.append(f'<line x1="{LABEL_W}" y1="{axis_y}" x2="{LABEL_W + plot_w}" y2="{axis_y}" stroke="#555"/>')
    decade = lo
    while decade <= hi * 1.0001:
        tx = x(decade)
        parts.append(f'<line x1="{tx:.1f}" y1="2" x2="{tx:.1f}" y2="{axis_y + 4}" stroke="#ccc"/>')
        parts.append(f'<text x="{tx:.1f}" y="{axis_y + 16}" class="tick" text-anchor="middle">'
                     f'{escape(_ms_label(decade))}</text>')
        decade *= 10
    parts.append(f'<text x="{LABEL_W + plot_w / 2:.0f}" y="{axis_y + 30}" class="axis" text-anchor="middle">'
                 'latency (log scale) · bars: p50 green, p90 amber, p99 red</text>')
    height = axis_y + AXIS_H
    return (f'<svg class="chart" width="{WIDTH}" height="{height}" viewBox="0 0 {WIDTH} {height}" role="img" '
            'aria-label="latency percentiles on one logarithmic axis">' + "".join(parts) + "</svg>")
