"""Terminal text for `explain`: one block per finding, root cause first, the fix under each."""

from __future__ import annotations

from typing import Sequence

from remedies.explain import Finding

SYMBOL = {"error": "✗", "warning": "!", "info": "•"}
COLOR = {"error": "31", "warning": "33", "info": "90"}


def _paint(text: str, severity: str, color: bool) -> str:
    return f"\x1b[{COLOR[severity]}m{text}\x1b[0m" if color else text


def render_findings(findings: Sequence[Finding], sources: Sequence[str], verbose: bool = False,
                    color: bool = False) -> str:
    """The findings with context and fix steps; a one-line verdict at the end."""
    names = ", ".join(sources)
    if not findings:
        return f"qwen-doctor explain · {names}\n\nNo known errors found.\n"
    lines = [f"qwen-doctor explain · {names} · {len(findings)} known message(s), root cause first", ""]
    for finding in findings:
        lines += _finding_lines(finding, verbose, color)
    tally = {s: sum(1 for f in findings if f.remedy.severity == s) for s in SYMBOL}
    lines.append(f"{tally['error']} error(s), {tally['warning']} warning(s), {tally['info']} info.")
    return "\n".join(lines) + "\n"


def _finding_lines(finding: Finding, verbose: bool, color: bool) -> list[str]:
    remedy = finding.remedy
    where = str(finding.first) if finding.count == 1 else f"{finding.first} … {finding.last}, {finding.count}×"
    head = f"{SYMBOL[remedy.severity]} {remedy.id} [{remedy.component}] {remedy.title}"
    out = [_paint(head, remedy.severity, color), f"    at {where}" + ("  (wrapper: the cause is reported above)" if remedy.wrapper else "")]
    first = finding.first.line
    out += [f"    │ {first - len(finding.before) + i:>6}  {text}" for i, text in enumerate(finding.before)]
    out.append(f"    │ {first:>6}> {finding.line}")
    out += [f"    │ {first + 1 + i:>6}  {text}" for i, text in enumerate(finding.after)]
    out.append(f"    why: {remedy.why}")
    out += [f"    → {step.render()}" for step in remedy.fix]
    if verbose:
        out += [f"    source: {s}" for s in remedy.source]
    out += [f"    see: qwen-doctor remedies show {remedy.id}", ""]
    return out
