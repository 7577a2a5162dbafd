"""First-named-remedy accuracy of `explain` on a corpus of real failing logs, and silence on healthy ones.

A corpus is either a directory with a `manifest.yaml` (`cases: [{file, expect}]`, as tests/data/corpus) or a
directory of `*.log` files whose `# expect:` header names the remedy (`none` for a healthy log, as
tests/data/logs), or a directory of healthy logs (`--healthy`, as tests/data/healthy).

    python bench/explain_accuracy.py tests/data/logs
    python bench/explain_accuracy.py tests/data/corpus --misses
    python bench/explain_accuracy.py tests/data/healthy --healthy
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from remedies import explain_sources  # noqa: E402


def _header(path: Path, key: str) -> str | None:
    prefix = f"# {key}:"
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines()[:10]:
        if line.startswith(prefix):
            return line[len(prefix):].strip()
    return None


def cases(directory: Path, healthy: bool) -> list[tuple[Path, str]]:
    """(log, expected first remedy id or 'none') for every case of the corpus."""
    manifest = directory / "manifest.yaml"
    if manifest.is_file() and not healthy:
        doc = yaml.safe_load(manifest.read_text(encoding="utf-8"))
        return [(directory / c["file"], c["expect"]) for c in doc["cases"]]
    logs = sorted(directory.glob("*.log"))
    return [(p, "none" if healthy else (_header(p, "expect") or "none")) for p in logs]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus", type=Path)
    parser.add_argument("--healthy", action="store_true", help="every log is healthy: count alarms")
    parser.add_argument("--misses", action="store_true", help="list the cases named wrongly")
    args = parser.parse_args(argv)
    failing = right = silent = alarms = healthy = 0
    misses = []
    for path, expect in cases(args.corpus, args.healthy):
        findings = explain_sources([path])
        first = findings[0].remedy.id if findings else None
        if expect == "none":
            healthy += 1
            alarms += bool(findings)
            if findings:
                misses.append(f"{path.name}: expected nothing, got {first}")
            continue
        failing += 1
        right += first == expect
        silent += not findings
        if first != expect:
            misses.append(f"{path.name}: expected {expect}, got {first}")
    if failing:
        print(f"failing logs: {failing}, first-named remedy right: {right} ({right / failing:.1%}), "
              f"silent: {silent}")
    if healthy:
        print(f"healthy logs: {healthy}, with any finding: {alarms}")
    if args.misses:
        print("\n".join(misses))
    return 0


if __name__ == "__main__":
    sys.exit(main())
