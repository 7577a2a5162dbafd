"""Throughput of `explain`'s matcher against `grep -F -f <the catalogue's literals>` on one generated log.

Generates a realistic log (healthy vLLM / SGLang / Ray / NCCL lines with catalogue errors sprinkled in),
times the matcher (split across workers as `explain` does for big files) and grep on the same file in the
same run, and prints the worker count and the wall-clock (throughput) and CPU ratios.

    python bench/explain_speed.py --size 1G        # the issue's benchmark
    python bench/explain_speed.py --size 5M        # a smoke run
    python bench/explain_speed.py --size 200M --compare ../base --repeat 3   # against another checkout

`--compare CHECKOUT ...` times each other checkout's `explain` on the same log in the same run (in a child
process that imports that checkout's `remedies`), interleaved with this one's, `--repeat` times each, and
prints the median CPU and wall seconds and this checkout's ratios to each (the machine is shared and noisy, so
only figures measured side by side compare).
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from remedies import Matcher, load_catalogue  # noqa: E402
from remedies.explain import Collector, explain_sources  # noqa: E402
from remedies.parallel import min_bytes, plan_ranges, splittable  # noqa: E402

HEALTHY = (
    "INFO {mm}-{dd} {t} [loader.py:447] Loading weights took {f} seconds",
    "INFO {mm}-{dd} {t} [gpu_model_runner.py:2337] Model loading took {f} GiB and {f} seconds",
    "INFO {mm}-{dd} {t} [kv_cache_utils.py:1087] GPU KV cache size: {n} tokens",
    "INFO {mm}-{dd} {t} [kv_cache_utils.py:1091] Maximum concurrency for 262,144 tokens per request: {f}x",
    "INFO {mm}-{dd} {t} [gpu_worker.py:298] Available KV cache memory: {f} GiB",
    "INFO {mm}-{dd} {t} [loggers.py:123] Engine 000: Avg prompt throughput: {f} tokens/s, Avg generation "
    "throughput: {f} tokens/s, Running: {i} reqs, Waiting: 0 reqs, GPU KV cache usage: {f}%, Prefix cache hit rate: {f}%",
    '(APIServer pid={pid}) INFO:     127.0.0.1:{port} - "POST /v1/chat/completions HTTP/1.1" 200 OK',
    '(APIServer pid={pid}) INFO:     127.0.0.1:{port} - "GET /health HTTP/1.1" 200 OK',
    "(EngineCore_DP0 pid={pid}) INFO {mm}-{dd} {t} [backends.py:548] Compiling a graph for dynamic shape takes {f} s",
    "(EngineCore_DP0 pid={pid}) INFO {mm}-{dd} {t} [gpu_model_runner.py:3480] Graph capturing finished in {i} secs, took {f} GiB",
    "[2026-12-02 {t} TP0] Decode batch, #running-req: {i}, #token: {n}, token usage: 0.{i}, cuda graph: True, "
    "gen throughput (token/s): {f}, #queue-req: 0",
    "[2026-12-02 {t} TP0] Prefill batch, #new-seq: 1, #new-token: {i}, #cached-token: {n}, token usage: 0.{i}, "
    "#running-req: {i}, #queue-req: 0",
    "[2026-12-02 {t}] INFO:     127.0.0.1:{port} - \"POST /generate HTTP/1.1\" 200 OK",
    "[2026-12-02 {t} TP0] Capture cuda graph end. Time elapsed: {f} s. mem usage={f} GB. avail mem={f} GB.",
    "node-{i}:{pid}:{pid} [0] NCCL INFO Channel {i}/24 : 0[0] -> 1[1] via P2P/CUMEM/read",
    "node-{i}:{pid}:{pid} [0] NCCL INFO ncclCommInitRank comm 0x{pid} rank 0 nranks 4 cudaDev 0 busId 18000 - Init COMPLETE",
    "(RayWorkerWrapper pid={pid}, ip=10.0.0.{i}) INFO {mm}-{dd} {t} [parallel_state.py:1165] rank {i} in world size 4 "
    "is assigned as DP rank 0, PP rank 0, TP rank {i}, EP rank {i}",
    "{mm}-{dd} {t},123\tINFO worker.py:1841 -- Connected to Ray cluster. View the dashboard at 127.0.0.1:8265",
)


def parse_size(text: str) -> int:
    """'1G', '512M', '5M', '200k' or bytes."""
    units = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}
    text = text.strip().lower().rstrip("ib")
    return int(float(text[:-1]) * units[text[-1]]) if text[-1] in units else int(text)


def healthy_pool(rng: random.Random, count: int = 20000) -> list[bytes]:
    def fill(template: str) -> str:
        return template.format(
            mm=f"{rng.randint(1, 12):02d}", dd=f"{rng.randint(1, 28):02d}",
            t=f"{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}",
            f=f"{rng.uniform(0, 5000):.2f}", n=f"{rng.randint(1000, 2_000_000):,}", i=rng.randint(0, 64),
            pid=rng.randint(1000, 99999), port=rng.randint(30000, 65000),
        )
    return [(fill(rng.choice(HEALTHY)) + "\n").encode() for _ in range(count)]


def generate(path: Path, size: int, error_every: int, seed: int) -> int:
    """Write about `size` bytes; return how many error lines were sprinkled in."""
    rng = random.Random(seed)
    pool = healthy_pool(rng)
    # Stop markers (`stop: true`) end the report instead of naming a finding, and a sample that names its entry
    # only with the lines before it (a `context`, a repeated line) cannot be told from one line, so neither is
    # sprinkled: every sprinkled line is one the matcher names alone.
    alone = Matcher().match_line
    errors = [(s + "\n").encode() for r in load_catalogue() if not r.stop for s in r.samples if alone(s)]
    written = inserted = 0
    with open(path, "wb") as out:
        while written < size:
            block = rng.choices(pool, k=20000)
            for index in rng.sample(range(len(block)), max(1, len(block) // error_every)):
                block[index] = rng.choice(errors)
                inserted += 1
            data = b"".join(block)
            out.write(data)
            written += len(data)
    return inserted


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def time_grep(log: Path, literals: Path) -> tuple[float, float, int]:
    """Wall seconds, CPU seconds and matching lines of `grep -F -c -f literals log` (C locale)."""
    cpu, start = _children_cpu(), time.perf_counter()
    proc = subprocess.run(["grep", "-F", "-c", "-f", str(literals), str(log)],
                          capture_output=True, text=True, env={**os.environ, "LC_ALL": "C"})
    return time.perf_counter() - start, _children_cpu() - cpu, int(proc.stdout.strip() or 0)


def time_explain(log: Path) -> tuple[float, float, int, int]:
    """Wall seconds, CPU seconds (workers included), matched lines and worker count of explain's scan.

    Runs `explain_sources` as `explain` does: split across worker processes when the file is big enough
    (`remedies.parallel`), with the second pass for unrecognised crashes when no entry named an error.
    """
    matcher, collector = Matcher(), Collector()
    threshold = min_bytes()
    workers = len(plan_ranges(log, min(os.cpu_count() or 1, log.stat().st_size // threshold))) \
        if splittable(log, threshold) and log.stat().st_size // threshold >= 2 else 1
    cpu, start = time.process_time() + _children_cpu(), time.perf_counter()
    explain_sources([log], matcher, collector=collector)
    return time.perf_counter() - start, time.process_time() + _children_cpu() - cpu, collector.matched_lines, workers


CHILD = """
import resource, sys, time
from pathlib import Path
sys.path.insert(0, sys.argv[1])
from remedies import Matcher
from remedies.explain import Collector, explain_sources
def spent():
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + usage.ru_utime + usage.ru_stime
matcher, collector = Matcher(), Collector()
cpu, start = spent(), time.perf_counter()
explain_sources([Path(sys.argv[2])], matcher, collector=collector)
print(time.perf_counter() - start, spent() - cpu, collector.matched_lines)
"""


def time_checkout(checkout: Path, log: Path) -> tuple[float, float, int]:
    """Wall seconds, CPU seconds (workers included) and matched lines of `checkout`'s explain scan of `log`,
    timed as `time_explain` times this one's, in a child process that imports that checkout."""
    done = subprocess.run([sys.executable, "-c", CHILD, str(checkout), str(log)], cwd=checkout,
                          capture_output=True, text=True, check=True)
    wall, cpu, lines = done.stdout.split()
    return float(wall), float(cpu), int(lines)


def compare(log: Path, checkouts: list[Path], repeat: int) -> list[str]:
    """Report lines: each checkout's median CPU and wall seconds over `repeat` interleaved runs on `log` (this
    checkout first, '.'), and this checkout's CPU and wall ratios to each other one."""
    timed = [Path(__file__).resolve().parents[1], *checkouts]
    runs: list[list[tuple[float, float, int]]] = [[] for _ in timed]
    for _ in range(repeat):
        for checkout, found in zip(timed, runs):
            found.append(time_checkout(checkout, log))
    medians = [(statistics.median(r[1] for r in found), statistics.median(r[0] for r in found),
                "/".join(str(n) for n in sorted({r[2] for r in found}))) for found in runs]
    cpu, wall, _ = medians[0]
    lines = [f"same log, median of {repeat} interleaved run{'s' if repeat > 1 else ''} (cpu s, wall s, matched lines):"]
    for index, (checkout, (c_cpu, c_wall, c_lines)) in enumerate(zip(timed, medians)):
        ratio = f"  this / it: cpu {cpu / c_cpu:.2f}, wall {wall / c_wall:.2f}" if index else ""
        lines.append(f"  {checkout if index else '.'}: cpu {c_cpu:.2f} s, wall {c_wall:.2f} s, {c_lines} lines{ratio}")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", default="1G", help="log size, e.g. 1G, 200M, 5M (default 1G)")
    parser.add_argument("--error-every", type=int, default=5000, help="one error line per N lines (default 5000)")
    parser.add_argument("--seed", type=int, default=4)
    parser.add_argument("--dir", help="where to write the log (default: a temporary directory, removed)")
    parser.add_argument("--compare", nargs="+", type=Path, default=[], metavar="CHECKOUT",
                        help="also time these checkouts' explain on the same log (e.g. git worktrees of older commits)")
    parser.add_argument("--repeat", type=int, default=1, help="runs per checkout with --compare, median shown (default 1)")
    args = parser.parse_args(argv)
    missing = [str(c) for c in args.compare if not (c / "remedies" / "explain.py").is_file()]
    if missing:
        print(f"not a qwen-doctor checkout: {', '.join(missing)}", file=sys.stderr)
        return 2
    if args.repeat < 1:
        print("--repeat must be at least 1", file=sys.stderr)
        return 2
    if shutil.which("grep") is None:
        print("grep not found", file=sys.stderr)
        return 2
    workdir = Path(args.dir) if args.dir else Path(tempfile.mkdtemp(prefix="qd-explain-bench-"))
    workdir.mkdir(parents=True, exist_ok=True)
    log, literals = workdir / "bench.log", workdir / "literals.txt"
    try:
        start = time.perf_counter()
        inserted = generate(log, parse_size(args.size), args.error_every, args.seed)
        generated = time.perf_counter() - start
        forms = {f.literal for r in load_catalogue() for f in r.forms()}
        literals.write_text("".join(sorted(literal + "\n" for literal in forms)), encoding="utf-8")
        size = log.stat().st_size
        with open(log, "rb") as warm:
            while warm.read(64 << 20):
                pass
        grep_s, grep_cpu, grep_lines = time_grep(log, literals)
        explain_s, explain_cpu, explain_lines, workers = time_explain(log)
        mib = size / (1 << 20)
        print(f"log: {mib:.1f} MiB, {inserted} error lines sprinkled, generated in {generated:.1f} s")
        print(f"grep -F -f ({len(literals.read_text().splitlines())} literals): {grep_s:.2f} s "
              f"(cpu {grep_cpu:.2f} s), {mib / grep_s:.0f} MiB/s, {grep_lines} lines")
        print(f"explain matcher: {workers} worker{'s' if workers > 1 else ''}, {explain_s:.2f} s "
              f"(cpu {explain_cpu:.2f} s, all workers), {mib / explain_s:.0f} MiB/s, {explain_lines} lines")
        print(f"ratio (explain throughput / grep throughput): {grep_s / explain_s:.2f} wall, "
              f"{grep_cpu / max(explain_cpu, 1e-9):.2f} cpu")
        print("(wall: the throughput a user sees; cpu: grep's CPU seconds / explain's, all workers summed)")
        if args.compare:
            try:
                print("\n".join(compare(log, [c.resolve() for c in args.compare], args.repeat)))
            except subprocess.CalledProcessError as failed:
                print(f"{failed.cmd[3]}: its explain failed: {(failed.stderr.strip().splitlines() or ['?'])[-1]}",
                      file=sys.stderr)
                return 1
        return 0
    finally:
        if not args.dir:
            shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
