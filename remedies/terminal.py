"""One catalogue entry as a terminal shows it (`qwen-doctor remedies show ID`): plain text, no Markdown."""

from __future__ import annotations

import textwrap

from doctor.markup import plain
from remedies.model import Remedy

WIDTH = 100


def _wrap(text: str, indent: str) -> list[str]:
    return textwrap.wrap(plain(text), WIDTH, initial_indent=indent, subsequent_indent=indent) or [indent]


def render_entry_terminal(remedy: Remedy) -> str:
    """Title, component and severity, the lines it matches, why it happens, numbered fix steps, sources."""
    lines = [f"{remedy.id}  {plain(remedy.title)}",
             f"  {remedy.component} · {remedy.severity}" + (" · wrapper (the cause is reported elsewhere)"
                                                            if remedy.wrapper else ""),
             "", "  Looks like:"]
    lines += [f"    {sample}" for sample in remedy.samples]
    lines += ["", "  Why it happens:", *_wrap(remedy.why, "    "), "", "  Fix:"]
    for number, step in enumerate(remedy.fix, start=1):
        applies = f" (applies to {step.applies})" if step.applies else ""
        wrapped = _wrap(step.text + applies, "       ")
        lines += [f"    {number}. {wrapped[0].lstrip()}", *wrapped[1:]]
    if remedy.article_claim:
        lines += ["", "  Answers the deployment article's claim:", *_wrap(remedy.article_claim, "    ")]
    lines += ["", "  Sources:", *[f"    - {plain(s)}" for s in remedy.source]]
    lines += ["", f"  Matches: {remedy.pattern}"]
    return "\n".join(lines) + "\n"
