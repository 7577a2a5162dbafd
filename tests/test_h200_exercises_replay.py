"""The H200 rehearsal with every exercise (vLLM 0.26.0, Qwen3.5-35B-A3B BF16 language-model-only, dummy weights,
tools + NEXTN-style MTP speculative decoding, --sweep 1,8,64, --bench), recorded on 2026-12-04:
tests/fixtures/h200-rehearsal/vllm-bf16-exercises.{json,log,html,txt}. Replayed here: what a user reads."""

from __future__ import annotations

import json
import re
from pathlib import Path

from doctor.deploy.follower import LogFollower

HERE = Path(__file__).resolve().parent / "fixtures" / "h200-rehearsal"
REPORT = json.loads((HERE / "vllm-bf16-exercises.json").read_text())
RESULTS = {r["check_id"]: r for r in REPORT["results"]}


def test_the_burst_is_measured_warm_and_the_first_batch_cost_is_reported_on_its_own() -> None:
    warm = RESULTS["QD-DEPLOY-WARMUP"]["evidence"]
    assert warm["seconds"] > 3 * warm["warm_seconds"], "the first 8-wide batch paid a one-time cost"
    burst = RESULTS["QD-DEPLOY-BURST"]
    p50 = float(re.search(r"TTFT p50/p90/p99 (\d+)/", burst["summary"]).group(1))
    assert burst["status"] == "ok" and p50 < 1000 < warm["p50_ttft_ms"]


def test_every_new_exercise_ran_and_named_what_it_saw() -> None:
    for check in ("THINKING-OFF", "TOOLS", "TOOLS-STREAM", "PREFIX-CACHE", "SPEC-DECODE", "SWEEP", "BENCH"):
        assert RESULTS[f"QD-DEPLOY-{check}"]["status"] in ("ok", "warn"), check
    assert RESULTS["QD-DEPLOY-IMAGE"]["status"] == "skip" and "--language-model-only" in RESULTS["QD-DEPLOY-IMAGE"]["summary"]
    assert "dummy weights" in RESULTS["QD-DEPLOY-TOOLS"]["summary"], "no call to judge the parser by, and why"
    assert RESULTS["QD-DEPLOY-SPEC-DECODE"]["summary"].startswith("mtp: acceptance")
    assert RESULTS["QD-DEPLOY-PREFIX-CACHE"]["evidence"]["hit_rate"] == 0


def test_the_sweep_and_the_bench_land_in_the_report_with_a_chart() -> None:
    sweep, bench = REPORT["sections"]["sweep"], REPORT["sections"]["bench"]
    assert [row["name"] for row in sweep["rows"]] == ["concurrency 1", "concurrency 8", "concurrency 64"]
    assert [row["name"] for row in bench["rows"]] == ["concurrency 1", "concurrency 8", "concurrency 64"]
    assert RESULTS["QD-DEPLOY-SWEEP"]["evidence"]["max_concurrency_meeting_slo"] == 64
    html = (HERE / "vllm-bf16-exercises.html").read_text()
    assert html.count("<svg") >= 1 and "concurrency" in html


def test_the_mtp_boot_logs_its_kv_and_the_follower_reads_it() -> None:
    follower = LogFollower("vllm")
    for lineno, line in enumerate((HERE / "vllm-bf16-exercises.log").read_text(errors="replace").splitlines(), 1):
        follower.feed(line, lineno)
    assert follower.kv_tokens == 2_488_825 == RESULTS["QD-DEPLOY-KV"]["evidence"]["logged_tokens"]
    assert follower.remedies == []
