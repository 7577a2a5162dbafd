"""Memory other processes hold at start-up (doctor/planner/startup.py): read from facts and boot logs, and planned
as each engine's source treats it."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from doctor.facts.model import Facts
from doctor.models import get_model
from doctor.planner import ServeConfig, plan
from doctor.planner.bootlog import parse_boot_log
from doctor.planner.extensible import STARTUP_USED_BYTES
from doctor.planner.hardware import GIB, Hardware, get_gpu, gpu_from_facts, is_wsl_kernel
from doctor.planner.replan import logged_config, replan
from doctor.planner.startup import busiest_gpu_bytes, other_process_bytes
from doctor.results import Status
from tests.conftest import FIXTURES, facts_with, run

NVFP4 = "nvidia/Qwen3.6-35B-A3B-NVFP4"
# 99sono/DockerBuildFiles inference-containers/vllm/nemotron-cascade-2/test/test_file_01_prompt_v2.md: an RTX 5090
# under WSL2 with the Windows desktop on it, vLLM 0.19.0
WSL_STARTUP = "Free memory on device (30.21/31.84 GiB) on startup. Desired GPU memory utilization is (0.85, 27.07 GiB)."
WSL_OTHERS = int((31.84 - 30.21) * GIB) - STARTUP_USED_BYTES


def wsl(others: int = WSL_OTHERS) -> Hardware:
    return Hardware(get_gpu("RTX5090-WSL"), 1, others)


def test_nvml_free_memory_at_rest_is_torch_total_so_the_h200_rehearsal_machine_held_nothing_else() -> None:
    gpu = json.loads((FIXTURES / "h200-rehearsal" / "facts.json").read_text())["nvml"]["gpus"][0]
    assert other_process_bytes(get_gpu("H200"), gpu["memory"]["free"]) == 0
    assert other_process_bytes(get_gpu("H200"), gpu["memory"]["free"] - 2 * GIB) == pytest.approx(2 * GIB, abs=0.01 * GIB)


def test_a_unified_memory_gpu_counts_what_the_host_has_available_as_vllm_does() -> None:
    gb10 = get_gpu("GB10")
    assert other_process_bytes(gb10, nvml_free=None, host_available=gb10.usable_bytes - 5 * GIB) == 5 * GIB
    assert other_process_bytes(gb10, nvml_free=None, host_available=None) == 0


def test_memory_of_engine_processes_is_the_deployment_itself_not_another_tenant() -> None:
    gpu = get_gpu("H200")
    busy = {"memory": {"free": gpu.usable_bytes - 100 * GIB},
            "processes": [{"pid": 7, "name": "VLLM::EngineCor", "used_memory": 90 * GIB},
                          {"pid": 8, "name": None, "used_memory": 10 * GIB}]}   # a PID from outside the container
    shared = {"memory": {"free": gpu.usable_bytes - 3 * GIB}, "processes": []}
    assert busiest_gpu_bytes([busy], gpu) == 0
    assert busiest_gpu_bytes([busy, shared], gpu) == 3 * GIB


def test_vllm_refuses_to_start_where_the_desktop_leaves_less_than_the_utilization_asks() -> None:
    spec, cfg = get_model(NVFP4), ServeConfig(backend_version="0.20.0", max_model_len=8192, max_num_seqs=4)
    refused = plan(spec, wsl(), cfg.with_(gpu_memory_utilization=0.95))
    assert not refused.fits
    assert refused.problems[-1].startswith(
        "Free memory on device (30.21/31.84 GiB) on startup is less than desired GPU memory utilization (0.95, 30.25 GiB)")
    assert refused.suggestions == ["lower --gpu-memory-utilization to 0.94 (the most that starts beside them), or "
                                   "free the GPU"]
    started = plan(spec, wsl(), cfg.with_(gpu_memory_utilization=0.9))
    assert started.fits and not any("on startup" in p for p in started.problems)


def test_vllm_profiles_from_the_start_up_state_so_memory_already_held_leaves_its_cache_alone() -> None:
    spec, cfg = get_model(NVFP4), ServeConfig(backend_version="0.20.0", max_model_len=8192, gpu_memory_utilization=0.9)
    alone, shared = plan(spec, wsl(0), cfg), plan(spec, wsl(), cfg)
    assert shared.kv_tokens == alone.kv_tokens
    assert any("outside vLLM's KV budget" in n for n in shared.notes)
    assert not any("other processes" in n for n in alone.notes)


def test_the_extensible_kv_cache_and_sglang_pools_lose_what_other_processes_hold() -> None:
    spec = get_model(NVFP4)
    ext = ServeConfig(backend_version="0.34.0", max_model_len=8192)
    alone, shared = plan(spec, wsl(0), ext), plan(spec, wsl(), ext)
    assert alone.ranks[0].cache_bytes - shared.ranks[0].cache_bytes == WSL_OTHERS
    sg = ServeConfig(backend="sglang", max_model_len=8192, mem_fraction_static=0.85)
    alone, shared = plan(spec, wsl(0), sg), plan(spec, wsl(), sg)
    # the pools are rest = free before the load x fraction - the load: they lose others x fraction
    assert alone.ranks[0].cache_bytes - shared.ranks[0].cache_bytes == pytest.approx(WSL_OTHERS * 0.85, rel=0.01)
    assert shared.kv_tokens < alone.kv_tokens


@pytest.mark.parametrize("line, free, total", [
    (WSL_STARTUP, 30.21, 31.84),
    ("ValueError: Free memory on device cuda:0 (30.2/31.84 GiB) on startup is less than desired GPU memory "
     "utilization (0.98, 31.21 GiB).", 30.2, 31.84),
    ("DEBUG [gpu_worker.py:748] Initial free memory: 29.1 GiB; Requested memory: 0.900000 (util), 28.66 GiB", 29.1, None),
])
def test_the_start_up_free_memory_is_read_in_each_form_vllm_logs_it(line: str, free: float, total: float | None) -> None:
    boot = parse_boot_log(line)
    assert (boot.startup_free_gib, boot.total_gib) == (free, total)


def test_plan_from_log_replans_on_a_gpu_that_holds_again_what_the_log_says_it_held() -> None:
    text = "\n".join([WSL_STARTUP.replace("(0.85, 27.07 GiB).", "(0.9, 28.66 GiB). Actual usage is 21.86 GiB for "
                                        "weight, 3.2 GiB for peak activation, 0.16 GiB for non-torch memory."),
                      "Model loading took 21.86 GiB memory", "Available KV cache memory: 2.95 GiB"])
    boot, spec = parse_boot_log(text), get_model(NVFP4)
    logged = logged_config(boot, ServeConfig(backend_version="0.20.0", max_model_len=8192))
    same_gpu = Hardware(replace(get_gpu("RTX5090-WSL"), torch_bytes=int(31.84 * GIB)), 1)
    refused = replan(spec, boot, logged, logged.with_(gpu_memory_utilization=0.95), same_gpu)
    assert "vLLM refuses to start (other processes hold 1.12 GiB" in refused.problems[-1]
    elsewhere = replan(spec, boot, logged, logged.with_(gpu_memory_utilization=0.95), Hardware(get_gpu("RTX5090"), 1))
    assert not any("on startup" in p for p in elsewhere.problems)


def test_a_wsl2_kernel_selects_the_catalogue_entry_of_the_gpu_as_wsl2_reports_it() -> None:
    assert is_wsl_kernel("6.6.87.2-microsoft-standard-WSL2") and not is_wsl_kernel("6.18.44-fc-v973-gpu")
    assert gpu_from_facts("NVIDIA GeForce RTX 5090", 32607 << 20, "12.0", wsl=True) == get_gpu("RTX5090-WSL")
    assert gpu_from_facts("NVIDIA H200", 143771 << 20, "9.0", wsl=True) == get_gpu("H200")


def test_the_fit_check_reads_another_tenant_from_facts_and_warns_that_vllm_would_refuse() -> None:
    data = facts_with("h200", packages={"vllm": "0.26.0"}).data
    gpu = data["nvml"]["gpus"][0]
    gpu["memory"] = {**gpu["memory"], "free": int(100 * GIB)}   # another tenant holds ~40 GiB
    gpu["processes"] = [{"pid": 4242, "name": "trainer", "used_memory": int(40 * GIB)}]
    results = run(Facts(data), only=("QD-PLAN-002",), model="Qwen/Qwen3.5-35B-A3B-FP8", gpu_memory_utilization=0.9)
    r = results["QD-PLAN-002"][0]
    # NVML cannot always tell the deployment's own engine from another process: a refused start is a warning
    assert r.status == Status.WARN and "on startup is less than desired GPU memory utilization (0.9" in r.summary
    assert any("own running engine" in d for d in r.details)


def test_plan_from_a_facts_bundle_plans_its_gpus_with_what_other_processes_held(tmp_path, capsys) -> None:
    from click.testing import CliRunner

    from doctor.cli.main import cli

    data = facts_with("h200").data
    data["nvml"]["gpus"][0]["memory"]["free"] = int(100 * GIB)
    bundle = tmp_path / "facts.json"
    bundle.write_text(json.dumps(data))
    args = ["plan", "--facts", str(bundle), "--tp", "1", "--backend-version", "0.26.0"]
    refused = CliRunner().invoke(cli, args + ["--gpu-memory-utilization", "0.9"])
    assert refused.exit_code == 1 and "on 1xH200" in refused.output
    assert "on startup is less than desired GPU memory utilization (0.9, 125.82 GiB)" in refused.output
    clean = CliRunner().invoke(cli, ["plan", "--facts", str(FIXTURES / "h200.json"), "--tp", "1",
                                     "--backend-version", "0.26.0"])
    assert clean.exit_code == 0 and "other processes" not in clean.output
    from doctor.cli.main import main

    for bad, message in ((["--gpus", "1xH200"], "give --gpus or --facts, not both"),):
        with pytest.raises(SystemExit) as stop:
            main(args + bad)
        assert stop.value.code == 2 and message in capsys.readouterr().err
    for bundle_path, message in ((tmp_path / "missing.json", "cannot read bundle"),
                                 (FIXTURES / "no-driver.json", "the bundle records no GPU with its memory")):
        with pytest.raises(SystemExit) as stop:
            main(["plan", "--facts", str(bundle_path)])
        assert stop.value.code == 2 and message in capsys.readouterr().err


def test_a_gb10_bundle_is_planned_from_the_catalogue_and_the_host_s_available_memory() -> None:
    from doctor.planner.startup import facts_hardware

    facts = facts_with("gb10-spark")       # NVML gives GB10 no memory figure; the host had 112.0 GiB available
    hardware = facts_hardware(facts)
    assert hardware.gpu == get_gpu("GB10") and hardware.count == 1
    available = facts.host["memory"]["available"]
    assert hardware.other_process_bytes == get_gpu("GB10").usable_bytes - available
    # vLLM takes MemAvailable as the free memory there: 0.95 of 121.63 GiB does not start beside 112.0 GiB, as
    # microscaler/cylon-local-infra's two-Spark note logged ("Free memory on device cuda:0 (111.5/119.61 GiB)")
    refused = plan(get_model(NVFP4), hardware, ServeConfig(backend_version="0.26.0", gpu_memory_utilization=0.95))
    assert "vLLM refuses to start (the host holds" in refused.problems[-1]
    assert plan(get_model(NVFP4), hardware, ServeConfig(backend_version="0.26.0", gpu_memory_utilization=0.9)).fits


def _two_h200s(busy_gib: float) -> Facts:
    import copy

    from tests.conftest import fixture_data

    data = fixture_data("h200")
    first = data["nvml"]["gpus"][0]
    second = copy.deepcopy(first)
    second.update(index=1, uuid="GPU-1", pci_bus_id="00000000:00:07.0")
    second["memory"] = {**first["memory"], "free": first["memory"]["free"] - int(busy_gib * GIB)}
    data["nvml"]["gpus"] = [first, second]
    return Facts(data)


def test_sglang_at_tp_2_refuses_to_start_when_one_gpu_has_under_90_percent_of_the_others_free_memory() -> None:
    # model_runner.py init_torch_distributed (0.5.9, 0.5.14) / bootstrap.py _check_tp_memory_balance (0.5.23):
    # every rank compares the world's smallest free memory with 90% of its own, before the weights load
    from doctor.planner.startup import facts_hardware

    spec = get_model("Qwen/Qwen3.5-35B-A3B-FP8")
    cfg = ServeConfig(backend="sglang", backend_version="0.5.16", tp=2, mem_fraction_static=0.8)
    unbalanced = plan(spec, facts_hardware(_two_h200s(20)), cfg)
    assert not unbalanced.fits
    assert unbalanced.problems[0].startswith("The memory capacity is unbalanced. Some GPUs may be occupied by other "
                                             "processes: SGLang 0.5.16 refuses to start at TP 2 with a RuntimeError "
                                             "(GPU 1 has")
    assert "distributed/bootstrap.py _check_tp_memory_balance" in unbalanced.problems[0]
    assert "SGLANG_ENABLE_TP_MEMORY_INBALANCE_CHECK=0 makes it a warning in SGLang 0.5.16" in unbalanced.suggestions[0]
    # 10 GiB of 139 is within the 10%: it starts, with pools sized from the busier GPU
    balanced = plan(spec, facts_hardware(_two_h200s(10)), cfg)
    assert not any("unbalanced" in p for p in balanced.problems)
    assert any("SGLang sizes its pools from the memory free before the load" in n for n in balanced.notes)


def test_the_balance_check_is_sglangs_at_tp_above_1_only() -> None:
    from doctor.planner.startup import facts_hardware

    hardware = facts_hardware(_two_h200s(20))
    spec = get_model("Qwen/Qwen3.5-35B-A3B-FP8")
    vllm = plan(spec, hardware, ServeConfig(backend_version="0.26.0", tp=2))
    assert not any("unbalanced" in p for p in vllm.problems)
    single = ServeConfig(backend="sglang", backend_version="0.5.16", mem_fraction_static=0.8)
    assert not any("unbalanced" in p for p in plan(spec, hardware, single).problems)


@pytest.mark.parametrize("version, exception, relax", [
    ("0.5.0rc2", "ValueError", "SGL_DISABLE_TP_MEMORY_INBALANCE_CHECK=1"),
    ("0.5.6", "ValueError", "SGL_DISABLE_TP_MEMORY_INBALANCE_CHECK=1"),
    ("0.5.7", "RuntimeError", "SGLANG_ENABLE_TP_MEMORY_INBALANCE_CHECK=0"),
    ("0.5.15", "RuntimeError", "SGLANG_ENABLE_TP_MEMORY_INBALANCE_CHECK=0"),
    ("0.5.23", "RuntimeError", "SGLANG_ENABLE_TP_MEMORY_INBALANCE_CHECK=0"),
])
def test_every_sglang_release_from_0_5_0_refuses_an_unbalanced_tp_group_by_default(version: str, exception: str,
                                                                                   relax: str) -> None:
    # model_runner.py init_torch_distributed (0.5.0rc2-0.5.15) / distributed/bootstrap.py (0.5.16-0.5.23)
    from doctor.planner.sglang_balance import balance_rule, refuses

    rule = balance_rule(version)
    assert (rule.exception, rule.relax) == (exception, relax)
    assert refuses(version, {})
    name, value = relax.split("=")
    assert not refuses(version, {name: value})


@pytest.mark.parametrize("version, env, refused", [
    # 0.5.7-0.5.17 copy the old variable over the new one as it is: SGL_DISABLE_...=1 still refuses
    ("0.5.9", {"SGL_DISABLE_TP_MEMORY_INBALANCE_CHECK": "1"}, True),
    ("0.5.17", {"SGL_DISABLE_TP_MEMORY_INBALANCE_CHECK": "0"}, False),
    ("0.5.9", {"SGLANG_ENABLE_TP_MEMORY_INBALANCE_CHECK": "0", "SGL_DISABLE_TP_MEMORY_INBALANCE_CHECK": "1"}, True),
    # 0.5.18-0.5.20 forward SGLANG_DISABLE_... inverted; the SGL_ name is renamed too late to count
    ("0.5.18", {"SGLANG_DISABLE_TP_MEMORY_INBALANCE_CHECK": "1"}, False),
    ("0.5.20", {"SGL_DISABLE_TP_MEMORY_INBALANCE_CHECK": "1"}, True),
    # 0.5.21-0.5.23 read no deprecated name
    ("0.5.21", {"SGLANG_DISABLE_TP_MEMORY_INBALANCE_CHECK": "1"}, True),
    ("0.5.23", {"SGLANG_ENABLE_TP_MEMORY_INBALANCE_CHECK": "false"}, False),
    # 0.5.0-0.5.6 read the old variable with get_bool_env_var: only "true" and "1" are true
    ("0.5.3", {"SGL_DISABLE_TP_MEMORY_INBALANCE_CHECK": "yes"}, True),
    ("0.5.3", {"SGL_DISABLE_TP_MEMORY_INBALANCE_CHECK": "true"}, False),
])
def test_the_old_balance_variables_count_as_each_release_reads_them(version: str, env: dict[str, str],
                                                                   refused: bool) -> None:
    from doctor.planner.sglang_balance import refuses

    assert refuses(version, env) is refused


def test_an_environment_that_relaxes_the_balance_check_plans_a_warning_not_a_refusal() -> None:
    from doctor.planner.flags import env_kwargs
    from doctor.planner.startup import facts_hardware

    spec = get_model("Qwen/Qwen3.5-35B-A3B-FP8")
    relaxed = env_kwargs({"SGLANG_ENABLE_TP_MEMORY_INBALANCE_CHECK": "0"}, "sglang")
    cfg = ServeConfig(backend="sglang", backend_version="0.5.16", tp=2, mem_fraction_static=0.8, **relaxed)
    warned = plan(spec, facts_hardware(_two_h200s(20)), cfg)
    assert not any("unbalanced" in p for p in warned.problems)
    assert any(n.startswith("The memory capacity is unbalanced: SGLang 0.5.16 only warns at TP 2") and
               "pools are then sized from GPU 1's free memory" in n for n in warned.notes)
    # the same variable does nothing for vLLM, and the old name does not relax 0.5.16
    assert "engine_env" not in env_kwargs({"SGLANG_ENABLE_TP_MEMORY_INBALANCE_CHECK": "0"}, "vllm")
    old = ServeConfig(backend="sglang", backend_version="0.5.16", tp=2, mem_fraction_static=0.8,
                      **env_kwargs({"SGL_DISABLE_TP_MEMORY_INBALANCE_CHECK": "1"}, "sglang"))
    assert plan(spec, facts_hardware(_two_h200s(20)), old).problems[0].startswith("The memory capacity is unbalanced.")
