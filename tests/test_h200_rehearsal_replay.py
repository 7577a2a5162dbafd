"""Replays of the real `deploy --rehearse` boots of Qwen3.5-35B-A3B on one H200 with vLLM 0.26.0 and SGLang
0.5.16 (tests/fixtures/h200-rehearsal/): phase parsing, KV capacity against the plan, remedy matching on the real
log lines, and the recorded reports and figures agreeing with the logs."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

from doctor.deploy import kv
from doctor.deploy.follower import LogFollower
from doctor.deploy.phases import phase_table
from doctor.facts.model import Facts
from doctor.planner import GPU, Hardware, ServeConfig, plan
from doctor.planner.hardware import GIB
from doctor.planner.sglang_kv import mtp_own_embed_head_bytes
from doctor.models import get_model

HERE = Path(__file__).parent / "fixtures" / "h200-rehearsal"
ALL_PHASES = ["starting", "loading weights", "profiling", "KV cache", "CUDA graphs", "warming up", "ready"]
FIGURES = yaml.safe_load((HERE / "kv.yaml").read_text())


def replay(name: str, stop_at: str | None = None) -> LogFollower:
    """Feed a recorded log to a follower; `stop_at` marks the start of the intended shutdown."""
    follower = LogFollower("vllm")
    for lineno, line in enumerate((HERE / f"{name}.log").read_text(errors="replace").splitlines(), 1):
        if stop_at and stop_at in line:
            follower.mark_shutdown()
        follower.feed(line, lineno)
    return follower


def h200() -> GPU:
    """The GPU of the recorded machine, as its facts describe it."""
    g = Facts(json.loads((HERE / "facts.json").read_text())).gpus[0]
    return GPU(g["name"], int(g["memory"]["total"]), str(g["compute_capability"]))


def assert_planned_within_tolerance(boot: dict, cfg: ServeConfig, gpu: GPU) -> None:
    c = boot["config"]
    predicted = plan(get_model(c["model"]), Hardware(gpu, c["tp"]), cfg).kv_tokens
    status, summary = kv.compare(boot["logged"]["kv_tokens"], kv.KVPrediction(predicted, "replayed plan"))
    assert status == "ok", summary


def report(name: str) -> dict:
    return json.loads((HERE / f"{name}.json").read_text())


def results(name: str) -> dict[str, dict]:
    return {r["check_id"]: r for r in report(name)["results"]}


@pytest.mark.parametrize("name", ["vllm-bf16-vision", "vllm-bf16-lm-only"])
def test_bf16_boots_pass_every_exercise_and_say_the_weights_were_random(name: str) -> None:
    res = results(name)
    for check in ("START", "MODELS", "CHAT", "STREAM", "JSON", "REASONING", "BURST", "ALIVE", "KV", "STOP"):
        assert res[f"QD-DEPLOY-{check}"]["status"] == "ok", check
    assert "random" in res["QD-DEPLOY-REHEARSAL"]["summary"]
    assert report(name)["sections"]["rehearsal"]["load_format"] == "dummy"
    assert json.loads(res["QD-DEPLOY-JSON"]["summary"].split("valid JSON ")[1].split(" in ")[0])["colour"]


@pytest.mark.parametrize("name", ["vllm-bf16-vision", "vllm-bf16-lm-only"])
def test_a_healthy_log_walks_every_phase_and_matches_no_remedy_before_shutdown(name: str) -> None:
    follower = replay(name, stop_at="[shutdown]")
    assert list(follower.phase_times) == ALL_PHASES
    assert follower.phase == "ready"
    assert follower.remedies == []


def test_engine_dead_lines_of_a_clean_shutdown_follow_the_stop_request_and_are_not_matched() -> None:
    # vLLM 0.26 prints an EngineDeadError while it tears down after SIGTERM; even without qwen-doctor's own
    # shutdown mark, its "[shutdown] ... trigger received signal=SIGTERM" line stops the matching
    log = (HERE / "vllm-bf16-vision.log").read_text()
    assert "trigger received signal=SIGTERM" in log and "EngineDead" in log
    assert replay("vllm-bf16-vision").remedies == []


def test_fp8_with_the_vision_tower_dies_in_profiling_and_is_diagnosed_as_an_engine_core_failure() -> None:
    follower = replay("vllm-fp8-vision-failed")
    assert follower.phase == "profiling" and follower.kv_tokens is None
    hits = follower.remedies
    assert {"QD-R-VLLM-ENGINE-CORE-FAILED", "QD-R-VLLM-ENGINE-CORE-INIT-FAILED"} <= {h.id for h in hits}
    assert all(h.fatal for h in hits)
    log = (HERE / "vllm-fp8-vision-failed.log").read_text()
    assert "the last dimension of `x` 4304 must be divisible by `group_size` 128" in log
    assert results("vllm-fp8-vision-failed")["QD-DEPLOY-START"]["status"] == "fail"


def test_fp8_boot_logged_its_kv_then_ran_out_of_time_in_graph_capture() -> None:
    follower = replay("vllm-fp8-lm-only-timeout")
    assert follower.phase == "CUDA graphs" and follower.remedies == []
    assert follower.kv_tokens == 4_662_418
    start = results("vllm-fp8-lm-only-timeout")["QD-DEPLOY-START"]
    assert start["status"] == "fail" and "timeout" in json.dumps(start["evidence"])
    assert "DeepGEMM warmup" in (HERE / "vllm-fp8-lm-only-timeout.log").read_text()


@pytest.mark.parametrize("boot", FIGURES["boots"], ids=lambda b: b["name"])
def test_recorded_figures_are_those_the_log_says(boot: dict) -> None:
    log = (HERE / boot["log"]).read_text(errors="replace")
    table = phase_table("vllm")
    logged = [t for t in map(table.kv_tokens_in, log.splitlines()) if t is not None]
    assert logged == [boot["logged"]["kv_tokens"]]
    assert f"Model loading took {boot['logged']['weights_gib']:.2f} GiB" in log
    assert f"Available KV cache memory: {boot['logged']['available_kv_gib']:.2f} GiB" in log
    assert f"Setting attention block size to {boot['logged']['attention_block_size']} tokens" in log


@pytest.mark.parametrize("boot", FIGURES["boots"], ids=lambda b: b["name"])
def test_kv_logged_matches_the_plan_for_that_vllm_version_within_tolerance(boot: dict) -> None:
    gpu = h200()
    c = boot["config"]
    cfg = ServeConfig(backend="vllm", max_model_len=c["max_model_len"], backend_version=c["backend_version"],
                      language_model_only=not c["vision_tower"])
    assert_planned_within_tolerance(boot, cfg, gpu)


@pytest.mark.parametrize("boot", [b for b in FIGURES["boots"] if b["planned_kv_tokens"]], ids=lambda b: b["name"])
def test_the_reports_recorded_the_kv_comparison_the_figures_hold(boot: dict) -> None:
    recorded = results(boot["name"])["QD-DEPLOY-KV"]["evidence"]
    assert recorded["logged_tokens"] == boot["logged"]["kv_tokens"]
    assert recorded["predicted_tokens"] == boot["planned_kv_tokens"]


def test_the_machine_facts_are_the_h200_the_boots_ran_on() -> None:
    facts = Facts(json.loads((HERE / "facts.json").read_text()))
    assert [g["name"] for g in facts.gpus] == ["NVIDIA H200"]
    assert facts.package_version("vllm") == "0.26.0"
    assert re.match(r"2\.11\.0", facts.package_version("torch") or "")


SGLANG_PHASES = ["starting", "loading weights", "KV cache", "CUDA graphs", "ready"]


def replay_sglang(name: str) -> LogFollower:
    """A recorded SGLang log fed to a follower, shutdown marked where qwen-doctor's SIGTERM arrived."""
    follower = LogFollower("sglang")
    for lineno, line in enumerate((HERE / f"{name}.log").read_text(errors="replace").splitlines(), 1):
        if "SIGTERM received" in line:
            follower.mark_shutdown()
        follower.feed(line, lineno)
    return follower


@pytest.mark.parametrize("name", ["sglang-bf16-vision", "sglang-fp8-vision", "sglang-default-fraction", "sglang-mtp",
                                  "sglang-mtp-32k"])
def test_sglang_boots_pass_every_exercise(name: str) -> None:
    res = results(name)
    for check in ("START", "MODELS", "CHAT", "STREAM", "JSON", "REASONING", "BURST", "ALIVE", "STOP"):
        assert res[f"QD-DEPLOY-{check}"]["status"] == "ok", check
    assert report(name)["sections"]["rehearsal"]["load_format"] == "dummy"


@pytest.mark.parametrize("boot", FIGURES["sglang_boots"], ids=lambda b: b["name"])
def test_a_healthy_sglang_log_walks_every_phase_and_logs_its_kv(boot: dict) -> None:
    follower = replay_sglang(boot["name"])
    assert list(follower.phase_times) == SGLANG_PHASES
    assert follower.kv_tokens == boot["logged"]["kv_tokens"]
    assert follower.remedies == []


@pytest.mark.parametrize("boot", FIGURES["sglang_boots"], ids=lambda b: b["name"])
def test_recorded_sglang_figures_are_those_the_log_says(boot: dict) -> None:
    log = (HERE / boot["log"]).read_text(errors="replace")
    got = boot["logged"]
    assert f"mem usage={got['weights_gib']:.2f} GB." in log
    assert (f"Mamba Cache is allocated. max_mamba_cache_size: {got['mamba_slots']}, conv_state size: "
            f"{got['conv_state_gib']:.2f}GB, ssm_state size: {got['ssm_state_gib']:.2f}GB") in log
    assert f"#tokens: {got['kv_tokens']}, K size: {got['k_gib']:.2f} GB, V size: {got['v_gib']:.2f} GB" in log
    assert f"max_total_num_tokens={got['kv_tokens']}," in log
    assert f"max_running_requests={got['max_running_requests']}," in log
    fraction = boot["config"]["mem_fraction_static"] or got["mem_fraction_static"]   # null: SGLang's default
    assert f"mem_fraction_static={fraction}," in log


@pytest.mark.parametrize("boot", FIGURES["sglang_boots"], ids=lambda b: b["name"])
def test_sglang_kv_logged_matches_the_plan_for_that_version_within_tolerance(boot: dict) -> None:
    gpu = h200()
    c = boot["config"]
    assert_planned_within_tolerance(boot, sglang_config(c), gpu)


def sglang_config(c: dict) -> ServeConfig:
    """The planner's view of a recorded SGLang boot's flags (NEXTN: the checkpoint's MTP head, steps tokens)."""
    spec = c.get("speculative") or {}
    return ServeConfig(backend="sglang", max_model_len=c["context_length"], backend_version=c["backend_version"],
                       mem_fraction_static=c["mem_fraction_static"], language_model_only=not c["vision_tower"],
                       max_num_seqs=c.get("max_running_requests"), mtp_tokens=spec.get("num_steps", 0),
                       speculative_method=spec.get("algorithm", "").lower() or None)


MTP_BOOTS = [b for b in FIGURES["sglang_boots"] if b["config"].get("speculative")]


@pytest.mark.parametrize("boot", MTP_BOOTS, ids=lambda b: b["name"])
def test_an_sglang_mtp_boot_is_planned_to_its_slots_running_requests_and_a_fifth_of_a_percent(boot: dict) -> None:
    c, got = boot["config"], boot["logged"]
    p = plan(get_model(c["model"]), Hardware(h200(), c["tp"]), sglang_config(c))
    rank = p.ranks[0]
    assert (rank.mamba_slots, rank.max_running_requests) == (got["mamba_slots"], got["max_running_requests"])
    assert abs(rank.kv_tokens / got["kv_tokens"] - 1) < 0.002
    # the MTP head's own load: its layer plus the embedding and lm_head it builds before taking the target's
    log = (HERE / boot["log"]).read_text(errors="replace")
    assert "type=Qwen3_5ForCausalLMMTP, avail mem=" in log and f"mem usage={got['mtp_load_gib']:.2f} GB." in log
    own = rank.weights["mtp"] + mtp_own_embed_head_bytes(get_model(c["model"]), sglang_config(c))
    assert abs(own / GIB - got["mtp_load_gib"]) < 0.01
    # the draft worker's KV pool: the target's token count over the MTP layer, outside the fraction
    assert abs(rank.drafter_kv_bytes / GIB - got["draft_kv_gib"]) < 0.01


def test_the_sglang_runs_pinned_the_transformers_and_tokenizers_sglang_asks_for() -> None:
    first = (HERE / "sglang-transformers-5.17.log").read_text()
    assert "'qwen3_asr' is already used by a Transformers config" in first
    assert "found tokenizers==0.23.2" in (HERE / "sglang-tokenizers-pin.log").read_text()
    assert "KeyError: 'rope_theta'" in (HERE / "sglang-rope-keyerror.log").read_text()
    assert "output_partition_size = 32 is not divisible by weight quantization block_n = 128" in (
        HERE / "sglang-fp8-gdn-gate-block.log").read_text()


def test_preflight_named_the_transformers_pin_the_forced_start_then_crashed_on() -> None:
    res = results("sglang-transformers-5.17")
    assert res["QD-VER-003"]["status"] == "fail" and "5.12.1" in res["QD-VER-003"]["summary"]
    assert res["QD-DEPLOY-START"]["status"] == "fail"
    assert "is already used by a Transformers config" in (HERE / "sglang-transformers-5.17.log").read_text()
