"""Render the catalogue as Markdown (docs/remedies.md is generated from it: `python -m remedies.docs`)."""

from __future__ import annotations

import sys
from pathlib import Path

from remedies.loader import Catalogue, load_catalogue
from remedies.model import COMPONENTS, CONTEXT_LINES, Remedy

DOCS_PATH = Path(__file__).resolve().parents[1] / "docs" / "remedies.md"
HEADER = """# Remedy catalogue

Generated from `remedies/catalogue/*.yaml` by `python -m remedies.docs`; do not edit by hand.
`qwen-doctor remedies show ID` prints the same text, `qwen-doctor explain LOG` finds these in logs.

{count} entries: {summary}.
"""


def render_entry(remedy: Remedy) -> str:
    """One entry: what it looks like, why it happens, what to change, where it comes from."""
    lines = [f"### {remedy.id}: {remedy.title}", "",
             f"*{remedy.component} · {remedy.severity}" + (" · wrapper (the cause is reported elsewhere)" if remedy.wrapper else "") + "*",
             "", "**Looks like**", "", "```text", *remedy.samples, "```", "",
             f"Prefilter literal `{remedy.literal}`"
             + "".join(f" or `{literal}`" for literal in remedy.also) + f", pattern `{remedy.pattern}`"
             + (f", only with `{remedy.context}` in the {CONTEXT_LINES} lines before it." if remedy.context else ".")
             + "".join(f" Also `{v.literal}`, pattern `{v.pattern}`, only with `{v.context}` in the {CONTEXT_LINES} "
                       "lines before it." for v in remedy.variants), "",
             "**Why it happens**", "", remedy.why, "", "**Fix**", ""]
    lines += [f"{n}. {step.text}" + (f" *(applies to {step.applies})*" if step.applies else "")
              + (f" *(figures from the log; without them: {step.otherwise})*" if step.otherwise else "")
              for n, step in enumerate(remedy.fix, start=1)]
    if remedy.article_claim:
        lines += ["", f"**Answers the deployment article's claim:** {remedy.article_claim}"]
    lines += ["", "**Source**", "", *[f"- {s}" for s in remedy.source], ""]
    if remedy.versions:
        lines += ["**Source wordings matched** (mined by `scripts/mine_signatures.py`)", "",
                  *[f"- {w.package} `{w.releases}`: `{w.template}`" for w in remedy.versions], ""]
    return "\n".join(lines)


def render_markdown(catalogue: Catalogue) -> str:
    """The whole catalogue, grouped by component in a fixed order."""
    by_component = {c: [r for r in catalogue if r.component == c] for c in COMPONENTS}
    summary = ", ".join(f"{c} {len(rs)}" for c, rs in by_component.items())
    parts = [HEADER.format(count=len(catalogue), summary=summary)]
    for component, remedies in by_component.items():
        parts.append(f"## {component}\n")
        parts += [render_entry(r) for r in remedies]
    return "\n".join(parts).rstrip("\n") + "\n"


def main(argv: list[str] | None = None) -> int:
    """Write the Markdown to the given path (default docs/remedies.md)."""
    target = Path((argv or sys.argv[1:] or [str(DOCS_PATH)])[0])
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(render_markdown(load_catalogue()), encoding="utf-8")
    print(f"wrote {target}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
