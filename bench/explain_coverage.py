"""Share of the engines' raise templates that `explain` turns into an entry or a source-located finding.

Every mined raise template (remedies/signatures/<package>.json: `raise X("...")` and `assert ..., "..."`) is
rendered with sample values as the traceback Python prints for it (header, the raising frame, the exception
line `ValueError: <message>`), run through the real scanner and collector, and counted as

- entry: a catalogue entry is named first;
- source: QD-R-UNKNOWN that names the template's own raise site (module, function, condition), or the site
  of a template the line cannot be told apart from (it matches both equally well);
- missed: nothing, or a finding that does not name the template's site.

Printed per package and release (the templates that release prints), overall and for the user-fixable ones
(scripts/mine_signatures.USER_FIXABLE), with the counts of entries vs source-only findings.

    python bench/explain_coverage.py                   # vllm and sglang
    python bench/explain_coverage.py vllm --misses     # list what is missed
"""

from __future__ import annotations

import argparse
import io
import json
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from packaging.version import Version  # noqa: E402

from mine_signatures import user_fixable  # noqa: E402
from remedies import Matcher  # noqa: E402
from remedies.explain import Collector  # noqa: E402
from remedies.model import UNKNOWN_ID  # noqa: E402
from remedies.templates import SIGNATURES_DIR, skeleton  # noqa: E402
from remedies.templates import match as template_match  # noqa: E402

SAMPLE = "42"


def exception_line(template: dict[str, object]) -> str:
    """The line a user sees for this raise: `<ExceptionName>: <message with sample values>`."""
    name = str(template["kind"]).split(":", 1)[1]
    return f"{name}: {str(template['template']).replace('{}', SAMPLE)}"


def traceback(template: dict[str, object]) -> str:
    """What Python prints for the raise: the header, the raising frame (its first site) and the exception line."""
    sites = template.get("sites") or [{"module": (template.get("modules") or ["?"])[0], "function": "?"}]  # type: ignore[index]
    site = sites[0]  # type: ignore[index]
    frame = f'  File "/usr/lib/python3.12/site-packages/{site["module"]}", line 1, in {site["function"] or "<module>"}'
    return f"Traceback (most recent call last):\n{frame}\n{exception_line(template)}\n"


def outcome(template: dict[str, object], matcher: Matcher) -> str:
    """'entry', 'source' or 'missed' for one template's exception line."""
    collector = Collector()
    for match in matcher.scan(io.BytesIO(traceback(template).encode()), crashes=True, catalogue=True):
        collector.add(match, "rendered")
    findings = collector.findings()
    if not findings:
        return "missed"
    first = findings[0]
    if first.remedy.id != UNKNOWN_ID:
        return "entry"
    located = first.located
    if located is None:
        return "missed"
    sites = {(s.get("module"), s.get("function")) for s in template.get("sites", [])}  # type: ignore[union-attr]
    own = template_match(tuple(skeleton(p) for p in str(template["template"]).split("{}")), skeleton(exception_line(template)))
    indistinguishable = own is not None and own == (located.hit.matched, located.hit.whole)
    same = indistinguishable or any((s.module, s.function) in sites for s in located.sites)
    return "source" if same else "missed"


def share(counts: Counter[str]) -> str:
    total = sum(counts.values())
    good = counts["entry"] + counts["source"]
    pct = 100 * good / total if total else 0.0
    return f"{good}/{total} ({pct:.1f}%): {counts['entry']} entry, {counts['source']} source-only, {counts['missed']} missed"


def report(package: str, matcher: Matcher, misses: bool) -> bool:
    """Print one package's coverage; True when every raise template leads somewhere."""
    data = json.loads((SIGNATURES_DIR / f"{package}.json").read_text(encoding="utf-8"))
    raises = [t for t in data["templates"] if str(t["kind"]).startswith("raise:")]
    results = {t["template"] + "\0" + t["kind"]: outcome(t, matcher) for t in raises}
    overall = Counter(results.values())
    fixable = Counter(results[t["template"] + "\0" + t["kind"]] for t in raises if user_fixable(t))
    print(f"{package}: raise templates {share(overall)}")
    print(f"{package}: user-fixable raise templates {share(fixable)}")
    for release in sorted(data["releases"], key=Version):
        counts = Counter(results[t["template"] + "\0" + t["kind"]] for t in raises if release in t["releases"])
        print(f"  {package} {release}: {share(counts)}")
    if misses:
        for t in raises:
            if results[t["template"] + "\0" + t["kind"]] == "missed":
                print(f"  missed: {exception_line(t)[:160]}")
    return overall["missed"] == 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("packages", nargs="*", default=["vllm", "sglang"])
    parser.add_argument("--misses", action="store_true", help="list the templates that lead nowhere")
    args = parser.parse_args(argv)
    matcher = Matcher()
    complete = [report(package, matcher, args.misses) for package in args.packages]
    return 0 if all(complete) else 1


if __name__ == "__main__":
    sys.exit(main())
