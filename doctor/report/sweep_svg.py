"""The concurrency sweep as two small inline SVG line charts (no script, no external assets): output throughput
(tok/s) and latency (TTFT p50 / p99 and TPOT p50, ms, log scale) against concurrency (parallel streams, log2
scale), with the knee and the largest concurrency meeting every --slo marked."""

from __future__ import annotations

import math
from html import escape
from typing import Any, Callable

WIDTH, HEIGHT, LEFT, RIGHT, TOP, BOTTOM = 640, 200, 70, 20, 14, 44
SERIES = (("p50_ttft_ms", "TTFT p50", "#2f855a"), ("p99_ttft_ms", "TTFT p99", "#c53030"),
          ("p50_tpot_ms", "TPOT p50", "#2b6cb0"))


def _tick(value: float, unit: str) -> str:
    if unit == "ms":
        return f"{value / 1000:g} s" if value >= 1000 else f"{value:g} ms"
    return f"{value / 1000:g}k" if value >= 1000 else f"{value:g}"


def _frame(xs: list[int], y_of: Callable[[float], float], y_ticks: list[float], y_label: str, unit: str,
           marks: dict[str, int | None]) -> tuple[list[str], Callable[[float], float]]:
    """Axes, ticks, axis titles and the knee / SLO markers; returns the parts and the x mapping."""
    plot_w, bottom = WIDTH - LEFT - RIGHT, HEIGHT - BOTTOM
    lo, hi = math.log2(min(xs)), math.log2(max(xs))
    span = hi - lo or 1.0

    def x(c: float) -> float:
        return LEFT + plot_w * ((math.log2(c) - lo) / span if hi > lo else 0.5)

    parts = [f'<line x1="{LEFT}" y1="{bottom}" x2="{LEFT + plot_w}" y2="{bottom}" stroke="#555"/>',
             f'<line x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{bottom}" stroke="#555"/>']
    for c in xs:
        parts.append(f'<text x="{x(c):.1f}" y="{bottom + 14}" class="tick" text-anchor="middle">{c}</text>')
    for v in y_ticks:
        parts.append(f'<line x1="{LEFT}" y1="{y_of(v):.1f}" x2="{LEFT + plot_w}" y2="{y_of(v):.1f}" stroke="#e2e8f0"/>')
        parts.append(f'<text x="{LEFT - 4}" y="{y_of(v) + 3:.1f}" class="tick" text-anchor="end">'
                     f'{escape(_tick(v, unit))}</text>')
    for label, c in marks.items():
        if c is not None:
            parts.append(f'<line x1="{x(c):.1f}" y1="{TOP}" x2="{x(c):.1f}" y2="{bottom}" stroke="#718096" '
                         f'stroke-dasharray="4 3"><title>{escape(label)} {c}</title></line>')
            right = x(c) > WIDTH * 0.6  # label on the left of a marker near the right edge
            parts.append(f'<text x="{x(c) + (-3 if right else 3):.1f}" y="{TOP + 10 + 11 * (label != "knee")}" '
                         f'class="tick" text-anchor="{"end" if right else "start"}">{escape(label)}</text>')
    parts.append(f'<text x="{LEFT + plot_w / 2:.0f}" y="{HEIGHT - 8}" class="axis" text-anchor="middle">'
                 'concurrency (parallel streams, log scale)</text>')
    parts.append(f'<text x="12" y="{(TOP + bottom) / 2:.0f}" class="axis" text-anchor="middle" '
                 f'transform="rotate(-90 12 {(TOP + bottom) / 2:.0f})">{escape(y_label)}</text>')
    return parts, x


def _svg(parts: list[str], label: str) -> str:
    return (f'<svg class="chart" width="{WIDTH}" height="{HEIGHT}" viewBox="0 0 {WIDTH} {HEIGHT}" role="img" '
            f'aria-label="{escape(label)}">' + "".join(parts) + "</svg>")


def _line(points: list[tuple[float, float]], colour: str, title: str) -> list[str]:
    path = " ".join(f"{px:.1f},{py:.1f}" for px, py in points)
    out = [f'<polyline points="{path}" fill="none" stroke="{colour}" stroke-width="2"><title>{escape(title)}</title>'
           "</polyline>"]
    out += [f'<circle cx="{px:.1f}" cy="{py:.1f}" r="3" fill="{colour}"/>' for px, py in points]
    return out


def _step(top: float) -> float:
    """A 1-2-5 tick step giving at most six ticks up to `top`."""
    for power in range(-2, 12):
        for mult in (1, 2, 5):
            step = mult * 10.0 ** power
            if top / step <= 6:
                return step
    return top


def sweep_charts(levels: list[dict[str, Any]], knee: int | None, slo_max: int | None) -> str:
    """Throughput and latency against concurrency; empty without two levels to draw."""
    levels = [lv for lv in levels if lv.get("completed")]
    if not levels:
        return ""
    xs = [int(lv["concurrency"]) for lv in levels]
    marks = {"knee": knee, "largest meeting --slo": slo_max}
    bottom = HEIGHT - BOTTOM
    top_tput = max(lv["output_throughput"] for lv in levels) * 1.1 or 1.0

    def y_tput(v: float) -> float:
        return bottom - (bottom - TOP) * v / top_tput

    ticks = [i * _step(top_tput) for i in range(0, int(top_tput / _step(top_tput)) + 1)]
    parts, x = _frame(xs, y_tput, ticks, "output throughput (tok/s)", "tok/s", marks)
    parts += _line([(x(c), y_tput(lv["output_throughput"])) for c, lv in zip(xs, levels)], "#2b6cb0",
                   "output throughput (tok/s)")
    throughput = _svg(parts, "output throughput against concurrency")

    values = [lv[k] for lv in levels for k, _, _ in SERIES if lv.get(k, 0) > 0]
    if not values:
        return throughput
    lo, hi = 10 ** math.floor(math.log10(min(values))), 10 ** math.ceil(math.log10(max(values)))
    hi = hi * 10 if hi == lo else hi

    def y_ms(v: float) -> float:
        return bottom - (bottom - TOP) * (math.log10(max(v, lo)) - math.log10(lo)) / (math.log10(hi) - math.log10(lo))

    decades = [lo * 10 ** i for i in range(round(math.log10(hi / lo)) + 1)]
    parts, x = _frame(xs, y_ms, decades, "latency (ms, log scale)", "ms", marks)
    legend_x = LEFT + 8
    for key, label, colour in SERIES:
        pts = [(x(c), y_ms(lv[key])) for c, lv in zip(xs, levels) if lv.get(key, 0) > 0]
        if pts:
            parts += _line(pts, colour, label)
            parts.append(f'<text x="{legend_x}" y="{TOP + 36}" class="lbl" style="fill:{colour}">'
                         f"{escape(label)}</text>")
            legend_x += 80
    return throughput + _svg(parts, "TTFT and TPOT percentiles against concurrency")
