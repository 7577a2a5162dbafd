"""Terminal text for `explain`: one block per matched remedy, root cause first, the fix under each.

It renders `sections.remedies` of the (redacted) report, so what the terminal shows is exactly what every
report file shows, secrets and, with --redact-hosts, hostnames replaced.
"""

from __future__ import annotations

from typing import Any, Sequence

from doctor.report.sections import fix_text
from doctor.textsafe import one_line

SYMBOL = {"error": "✗", "warning": "!", "info": "•"}
COLOR = {"error": "31", "warning": "33", "info": "90"}


def _paint(text: str, severity: str, color: bool) -> str:
    return f"\x1b[{COLOR.get(severity, '90')}m{text}\x1b[0m" if color else text


def render_findings(matches: Sequence[dict[str, Any]], sources: Sequence[str], verbose: bool = False,
                    color: bool = False) -> str:
    """The matched remedies (`sections.remedies` entries) with context and fix steps; a verdict at the end."""
    names = ", ".join(one_line(source) for source in sources)  # a name with a newline must not forge a line
    if not matches:
        return f"qwen-doctor explain · {names}\n\nNo known errors found.\n"
    lines = [f"qwen-doctor explain · {names} · {len(matches)} finding(s), root cause first", ""]
    for match in matches:
        lines += _match_lines(match, verbose, color)
    tally = {s: sum(1 for m in matches if m.get("severity") == s) for s in SYMBOL}
    lines.append(f"{tally['error']} error(s), {tally['warning']} warning(s), {tally['info']} info.")
    return "\n".join(lines) + "\n"


def _where(loc: dict[str, Any] | None) -> str:
    return one_line(f"{loc.get('source')}:{loc.get('line')}") if loc else "?"


def _match_lines(m: dict[str, Any], verbose: bool, color: bool) -> list[str]:
    severity, count = str(m.get("severity")), int(m.get("count") or 1)
    where = _where(m.get("first_line"))
    if count > 1:
        where = f"{where} … {_where(m.get('last_line'))}, {count}×"
    head = f"{SYMBOL.get(severity, '•')} {m.get('id')} [{m.get('component')}] {m.get('title')}"
    out = [_paint(head, severity, color),
           f"    at {where}" + ("  (wrapper: the cause is reported above)" if m.get("wrapper") else "")]
    first = int((m.get("first_line") or {}).get("line") or 0)
    ctx = m.get("context") or {}
    before, after = ctx.get("before") or [], ctx.get("after") or []
    out += [f"    │ {first - len(before) + i:>6}  {text}" for i, text in enumerate(before)]
    out.append(f"    │ {first:>6}> {m.get('line', '')}")
    out += [f"    │ {first + 1 + i:>6}  {text}" for i, text in enumerate(after)]
    out.append(f"    why: {m.get('why', '')}")
    out += [f"    → {fix_text(step)}" for step in m.get("fix") or []]
    if verbose:
        out += [f"    source: {s}" for s in m.get("source") or []]
    out += [f"    see: qwen-doctor remedies show {m.get('id')}", ""]
    return out
