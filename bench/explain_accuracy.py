"""First-named-remedy accuracy of `explain` on a corpus of real failing logs, and silence on healthy ones.

A corpus is either a directory with a `manifest.yaml` (`cases: [{file, expect}]`, as tests/data/corpus) or a
directory of `*.log` files whose `# expect:` header names the remedy (`none` for a healthy log, as
tests/data/logs), or a directory of healthy logs (`--healthy`, as tests/data/healthy).

    python bench/explain_accuracy.py tests/data/logs
    python bench/explain_accuracy.py tests/data/corpus --misses
    python bench/explain_accuracy.py tests/data/healthy --healthy
    python bench/explain_accuracy.py tests/data/corpus --carry wrap80   # as a terminal would have cut it

`--carry` rewrites every log as a transport would have delivered it before scoring (in a temporary
directory): `prefix` (docker compose name, docker timestamp, Ray process prefix on every line), `wrap80`
(cut at 80 columns, as a terminal), `webwrap` (wrapped at spaces under 80 columns, as a web page),
`ansi` (coloured), `crlf`, `quote` (Markdown `> `), or `all`: prefix, ansi, wrap80, crlf and quote one
after the other (a coloured compose log cut by a terminal, saved with CRLF, quoted in a Markdown reply).
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import textwrap
from pathlib import Path
from typing import Callable

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


CARRIERS: dict[str, Callable[[str], str]] = {
    "prefix": lambda line: f"vllm-1  | 2026-12-03T10:00:00.123456789Z (EngineCore_DP0 pid=7) {line}",
    "wrap80": lambda line: "\n".join(line[i:i + 80] for i in range(0, len(line), 80)) or line,
    "webwrap": lambda line: "\n".join(textwrap.wrap(line, 78, break_long_words=False, break_on_hyphens=False))
    or line,
    "ansi": lambda line: f"\x1b[31m{line}\x1b[0m",
    "crlf": lambda line: line + "\r",
    "quote": lambda line: f"> {line}",
}


ALL = ["prefix", "ansi", "wrap80", "crlf", "quote"]


def carried(items: list[tuple[Path, str]], carrier: str, into: Path) -> list[tuple[Path, str]]:
    """Copies of the logs as `carrier` would have delivered them."""
    out = []
    for index, (path, expect) in enumerate(items):
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
        lines = [line for line in lines if not line.startswith("# ")]
        target = into / f"{index:04d}-{path.name}"
        target.write_text("\n".join(CARRIERS[carrier](line) for line in lines) + "\n", encoding="utf-8")
        out.append((target, expect))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus", type=Path)
    parser.add_argument("--healthy", action="store_true", help="every log is healthy: count alarms")
    parser.add_argument("--misses", action="store_true", help="list the cases named wrongly")
    parser.add_argument("--carry", choices=[*CARRIERS, "all"], help="score the logs as this transport delivers them")
    args = parser.parse_args(argv)
    items = cases(args.corpus, args.healthy)
    workdir = Path(tempfile.mkdtemp(prefix="qd-accuracy-")) if args.carry else None
    try:
        for carrier in (ALL if args.carry == "all" else [args.carry] if args.carry else []):
            assert workdir is not None
            step = workdir / carrier
            step.mkdir()
            items = carried(items, carrier, step)
        return _score(items, args.misses)
    finally:
        if workdir is not None:
            shutil.rmtree(workdir, ignore_errors=True)


def _score(items: list[tuple[Path, str]], show_misses: bool) -> int:
    failing = right = silent = alarms = healthy = 0
    misses = []
    for path, expect in items:
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
    if show_misses:
        print("\n".join(misses))
    return 0


if __name__ == "__main__":
    sys.exit(main())
