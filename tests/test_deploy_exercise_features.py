"""The exercises users feel, against the fake server started with a real backend command line: tool calls,
thinking off, images, speculative decoding, the prefix cache, warm figures and reasoning detection."""

from __future__ import annotations

import asyncio
import time

import pytest

from doctor.deploy.exercise import ExerciseConfig
from doctor.deploy.ports import free_port
from doctor.deploy.probe import ProbeResult, exercise_server
from doctor.deploy.server_traits import ServerTraits, from_deployment
from doctor.deployment import from_argv as deployment_from_argv


def from_argv(argv: list[str], backend: str) -> ServerTraits:
    """The traits deploy gives a server it launches with `argv`."""
    return from_deployment(deployment_from_argv(argv, backend))
from tests.support.fake_server import serve

TOOLS = ("--enable-auto-tool-choice", "--tool-call-parser", "qwen3_coder")


def run(*flags: str, mode: str = "ok", reasoning: bool = False, backend: str = "vllm", known: bool = True,
        burst: int = 4, told: bool | None = None, **cfg_kw) -> ProbeResult:
    """Exercise a fake server started with `flags`; deploy's view of it (known) or probe's (not known, unless
    `told` says whether it has a reasoning parser, as probe's --reasoning / --no-reasoning)."""
    argv = ["vllm", "serve", "/m", *flags] + (["--reasoning-parser", "qwen3"] if reasoning else [])
    port = free_port()
    httpd = serve(port, "tiny", mode, reasoning, backend=backend, argv=argv)
    traits = from_argv(argv, backend) if known else ServerTraits.unknown()
    cfg_kw["reasoning"] = reasoning if known else told
    try:
        cfg_kw.setdefault("burst_tokens", 8)
        cfg = ExerciseConfig(model="tiny", burst=burst, max_tokens=8, request_timeout=30, traits=traits, **cfg_kw)
        return asyncio.run(exercise_server(f"http://127.0.0.1:{port}", cfg))
    finally:
        httpd.shutdown()
        httpd.server_close()


def named(out: ProbeResult) -> dict:
    return {e.name: e for e in out.exercises}


@pytest.mark.parametrize("backend", ["vllm", "sglang"])
def test_tool_calls_arrive_parsed_with_the_parser_the_release_needs(backend) -> None:
    ex = named(run(*TOOLS, reasoning=True, backend=backend))
    for name in ("tools", "tools_stream"):
        assert ex[name].status == "ok", ex[name].summary
        assert 'get_weather({"city": "Paris"})' in ex[name].summary


def test_a_wrong_tool_parser_fails_both_tool_exercises_naming_it_and_the_right_one() -> None:
    ex = named(run("--enable-auto-tool-choice", "--tool-call-parser", "hermes", reasoning=True))
    for name in ("tools", "tools_stream"):
        assert ex[name].status == "fail"
        assert "tool-call parser hermes" in ex[name].summary and "--tool-call-parser qwen3_coder" in ex[name].summary


def test_a_call_written_inside_thinking_is_named_as_lost() -> None:
    ex = named(run(*TOOLS, mode="tool-in-think", reasoning=True))
    assert ex["tools"].status == "fail" and "inside <think>" in ex["tools"].summary and "#39056" in ex["tools"].summary


def test_tool_exercises_skip_with_the_reason_when_no_parser_is_configured_or_the_server_has_none() -> None:
    assert "enables no tool-call parser" in named(run())["tools"].summary
    probed = named(run(known=False))
    assert probed["tools"].status == "skip" and "--enable-auto-tool-choice" in probed["tools"].summary


def test_thinking_off_needs_the_answer_in_content() -> None:
    assert named(run(reasoning=True))["thinking_off"].status == "ok"
    empty = named(run(reasoning=True, mode="thinking-off-empty"))["thinking_off"]
    assert empty.status == "fail"
    assert "arrived as reasoning_content and content is empty" in empty.summary and "#53284" in empty.summary


def test_an_image_is_answered_when_the_vision_tower_is_loaded_and_skipped_with_the_reason_without() -> None:
    assert named(run())["image"].status == "ok"
    skipped = named(run("--language-model-only"))["image"]
    assert skipped.status == "skip" and "--language-model-only" in skipped.summary
    refused = named(run("--language-model-only", known=False))["image"]
    assert refused.status == "skip" and "At most 0 image(s)" in refused.summary


def test_speculative_decoding_reports_acceptance_and_mean_accepted_length_from_metrics(monkeypatch) -> None:
    ex = named(run("--speculative-config", '{"method": "mtp", "num_speculative_tokens": 3}'))["speculative"]
    assert ex.status == "ok" and "mtp: acceptance 70%" in ex.summary
    assert ex.data["short"]["mean_accepted_length"] == pytest.approx(1 + 0.7 * 3, abs=0.05)
    monkeypatch.setenv("FAKE_SERVER_SPEC_ACCEPT", "0.1")
    low = named(run("--speculative-config", '{"method": "mtp"}'))["speculative"]
    assert low.status == "warn" and "acceptance 10%" in low.summary


def test_speculative_decoding_is_read_from_sglangs_gauges() -> None:
    ex = named(run("--speculative-algorithm", "EAGLE", backend="sglang"))["speculative"]
    assert ex.status == "ok" and "EAGLE: acceptance 70%" in ex.summary


def test_the_prefix_cache_hits_a_repeated_prompt_and_the_second_ttft_drops() -> None:
    ex = named(run())["prefix_cache"]
    assert ex.status == "ok" and ex.data["hit_rate"] == 1.0
    assert ex.data["second_ttft_ms"] < ex.data["first_ttft_ms"]
    assert ex.data["prompt_tokens"] > 1000, "longer than the hybrid model's attention block"


def test_no_prefix_cache_hits_on_the_hybrid_model_warn_naming_the_mode() -> None:
    ex = named(run(mode="prefix-miss"))["prefix_cache"]
    assert ex.status == "warn" and "mamba cache mode 'align'" in ex.summary and "#51250" in ex.summary
    assert named(run("--no-enable-prefix-caching"))["prefix_cache"].status == "skip"


def test_a_first_batch_delay_is_reported_as_the_cold_cost_and_kept_out_of_the_burst(monkeypatch) -> None:
    monkeypatch.setenv("FAKE_SERVER_FIRST_BATCH_DELAY", "5")
    out = run(burst=8)
    ex = named(out)
    assert ex["burst"].status == "ok" and ex["burst"].data["p50_ttft_ms"] < 1000
    cold = ex["warmup"]
    assert cold.data["one_time_cost"] and cold.data["seconds"] >= 4.5
    assert cold.summary.startswith("the first 8-wide batch took ") and "kernel compilation / autotuning" in \
        cold.summary
    assert out.server["latency_requests"] == 8, "the server's window holds the warm burst only"


def test_without_the_warm_up_the_burst_pays_the_cold_cost(monkeypatch) -> None:
    monkeypatch.setenv("FAKE_SERVER_FIRST_BATCH_DELAY", "2")
    ex = named(run(burst=8, warmup=False))
    assert "warmup" not in ex and ex["burst"].data["p50_ttft_ms"] > 1500


def test_probe_finds_the_reasoning_parser_from_the_answers_and_passes_json() -> None:
    out = run(reasoning=True, known=False)
    ex = named(out)
    assert ex["structured"].status == "ok" and ex["reasoning"].status == "ok"
    assert out.detected["reasoning_parser"].startswith("detected")


def test_asserting_no_reasoning_on_a_reasoning_server_reproduces_the_empty_json() -> None:
    ex = named(run(reasoning=True, known=False, told=False))
    assert ex["structured"].status == "fail" and "not JSON: ''" in ex["structured"].summary


def test_the_burst_window_is_sampled_often_enough_to_see_its_running_requests() -> None:
    out = run(burst=8, burst_tokens=64)  # ~150 ms: shorter than a real burst of 32 tokens on a GPU
    assert out.server["samples"] >= 2 and out.server["running"]["peak"] >= 1


def test_deploy_reads_the_traits_from_its_command_line() -> None:
    t = from_argv(["vllm", "serve", "m", "--reasoning-parser", "qwen3", *TOOLS, "--language-model-only",
                   "--speculative-config", '{"method":"mtp","num_speculative_tokens":1}',
                   "--no-enable-prefix-caching", "--max-model-len", "4096"], "vllm")
    assert (t.reasoning_parser, t.tool_parser, t.vision, t.speculative, t.prefix_caching, t.cache_mode,
            t.max_model_len) == ("qwen3", "qwen3_coder", False, "mtp", False, "none", 4096)
    bare = from_argv(["vllm", "serve", "m", "--tool-call-parser", "qwen3_coder"], "vllm")
    assert bare.tool_parser is None, "vLLM refuses tool_choice auto without --enable-auto-tool-choice"
    assert (bare.vision, bare.prefix_caching, bare.cache_mode) == (True, True, "align")
    sg = from_argv(["python", "-m", "sglang.launch_server", "--speculative-algo", "NEXTN", "--disable-radix-cache",
                    "--tool-call-parser", "qwen3_coder"], "sglang")
    assert (sg.speculative, sg.prefix_caching, sg.tool_parser, sg.vision) == ("NEXTN", False, "qwen3_coder", None)


def test_a_sweep_reports_each_concurrency_the_knee_and_the_largest_meeting_the_slo() -> None:
    port = free_port()
    httpd = serve(port, "tiny")
    try:
        cfg = ExerciseConfig(model="tiny", burst=2, burst_tokens=8, max_tokens=8, request_timeout=30,
                             sweep=(1, 4, 16))
        t0 = time.perf_counter()
        out = asyncio.run(exercise_server(f"http://127.0.0.1:{port}", cfg, {"ttft_p99_ms": 60_000}))
        assert time.perf_counter() - t0 < 60
    finally:
        httpd.shutdown()
        httpd.server_close()
    sweep = out.sweep
    assert [lv["concurrency"] for lv in sweep["levels"]] == [1, 4, 16]
    assert all(lv["completed"] >= 8 and lv["failed"] == 0 for lv in sweep["levels"])
    assert sweep["knee"] in (1, 4, 16) and sweep["max_concurrency_meeting_slo"] == 16
    assert "knee at" in named(out)["sweep"].summary
    assert out.server["latency_requests"] == 2, "the server's latency window is the burst's, not the sweep's"


def test_the_knee_is_the_last_level_before_throughput_stops_scaling() -> None:
    from doctor.deploy.load import knee

    def level(c: int, tput: float) -> dict:
        return {"concurrency": c, "output_throughput": tput, "completed": c}

    assert knee([level(1, 100), level(8, 700), level(64, 1400), level(256, 1500)]) == 8
    assert knee([level(1, 100), level(2, 200), level(4, 400)]) == 4
    assert knee([]) is None


def test_the_checkpoint_says_whether_there_is_a_vision_tower_and_linear_attention() -> None:
    from doctor.deploy.server_traits import with_checkpoint

    traits = from_argv(["vllm", "serve", "m"], "vllm")
    qwen35 = {"architectures": ["Qwen3_5MoeForConditionalGeneration"], "vision_config": {"depth": 27},
              "text_config": {"layer_types": ["linear_attention", "full_attention"]}}
    assert (with_checkpoint(traits, qwen35).vision, with_checkpoint(traits, qwen35).hybrid) == (True, True)
    text_only = with_checkpoint(traits, {"architectures": ["Qwen3MoeForCausalLM"]})
    assert (text_only.vision, text_only.hybrid) == (False, False)
    assert "no vision_config" in text_only.no_vision_reason
    assert with_checkpoint(traits, None) == traits


def test_an_exercise_that_raises_fails_under_its_own_report_id(monkeypatch) -> None:
    from doctor.deploy import probe
    from doctor.deploy.exercise_ids import EXERCISE_IDS

    async def broken(client, cfg):
        raise ValueError("unexpected answer shape")

    monkeypatch.setattr(probe, "EXERCISES", tuple((name, broken) for name, _ in probe.EXERCISES))
    out = run()
    failed = [e for e in out.exercises if e.status == "fail"]
    assert len(failed) == len(probe.EXERCISES) and all(e.name in EXERCISE_IDS for e in failed)
    assert "ValueError: unexpected answer shape" in failed[0].summary
