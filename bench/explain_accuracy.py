"""First-named-remedy accuracy of `explain` on a corpus of real failing logs, and silence on healthy ones.

A corpus is either a directory with a `manifest.yaml` (`cases: [{file, expect}]`, as tests/data/corpus) or a
directory of `*.log` files whose `# expect:` header names the remedy (`none` for a healthy log, as
tests/data/logs), or a directory of healthy logs (`--healthy`, as tests/data/healthy).

    python bench/explain_accuracy.py tests/data/logs
    python bench/explain_accuracy.py tests/data/corpus --misses
    python bench/explain_accuracy.py tests/data/healthy --healthy
    python bench/explain_accuracy.py tests/data/corpus --carry wrap80   # as a terminal would have cut it
    python bench/explain_accuracy.py tests/data/corpus --sites          # root exception and raise site named

`--sites` also counts the failing logs whose report names the root exception and its raise site, read from
the JSON report's findings (`results[].evidence` of `qwen-doctor explain --format json`, i.e.
`Finding.to_dict()`): the root is `crash.exception` or `root.exception`; the raise site is a traceback frame
(`crash.raised_at`, `root.raised_at`), a mined template's site (`raised_by.sites`, `root.raised_by.sites`), a
site the entry's sources cite (`root.cited`) or an engine bug's (`engine_bug.raised_at`). Any finding of the
report counts; the logs that miss either are listed.

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
from typing import Any, Callable

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
    parser.add_argument("--sites", action="store_true", help="count the logs whose report names root and raise site")
    args = parser.parse_args(argv)
    items = cases(args.corpus, args.healthy)
    workdir = Path(tempfile.mkdtemp(prefix="qd-accuracy-")) if args.carry else None
    try:
        for carrier in (ALL if args.carry == "all" else [args.carry] if args.carry else []):
            assert workdir is not None
            step = workdir / carrier
            step.mkdir()
            items = carried(items, carrier, step)
        return _score(items, args.misses, args.sites)
    finally:
        if workdir is not None:
            shutil.rmtree(workdir, ignore_errors=True)


def names_root(evidence: dict[str, Any]) -> bool:
    """Whether a finding's JSON evidence names the root exception."""
    return any((evidence.get(key) or {}).get("exception") for key in ("crash", "root"))


def names_site(evidence: dict[str, Any]) -> bool:
    """Whether a finding's JSON evidence names where the root exception was raised."""
    crash, root = evidence.get("crash") or {}, evidence.get("root") or {}
    located = [evidence.get("raised_by") or {}, root.get("raised_by") or {}]
    return bool(crash.get("raised_at") or root.get("raised_at") or root.get("cited")
                or any(found.get("sites") for found in located))


def _score(items: list[tuple[Path, str]], show_misses: bool, sites: bool = False) -> int:
    failing = right = silent = alarms = healthy = rooted = sited = 0
    misses, unsited = [], []
    for path, expect in items:
        findings = explain_sources([path])
        if sites and expect != "none":
            evidence = [finding.to_dict() for finding in findings]
            root_ok = any(names_root(e) for e in evidence)
            site_ok = any(names_site(e) for e in evidence)
            rooted += root_ok
            sited += site_ok
            if not (root_ok and site_ok):
                unsited.append(f"{path.name}:{'' if root_ok else ' no root'}{'' if site_ok else ' no raise site'}")
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
    if sites and failing:
        print(f"root exception named: {rooted}/{failing}, raise site named: {sited}/{failing}")
        print("\n".join(unsited))
    if show_misses:
        print("\n".join(misses))
    return 0


if __name__ == "__main__":
    sys.exit(main())
