"""A plan on a WSL2 GPU says which part of its KV cache the Windows host decides, and where to read it back."""

from __future__ import annotations

import pytest

from doctor.models import get_model
from doctor.planner import ServeConfig, parse_gpus, plan
from doctor.planner.hardware import GIB

NVFP4 = "nvidia/Qwen3.6-35B-A3B-NVFP4"


def _plan(gpus: str, **flags):
    # 64 sequences: the default 256 exceed the 245 Mamba cache blocks of this cache, which vLLM refuses with FULL
    # CUDA graphs (tests/test_planner_mamba_blocks.py)
    cfg = ServeConfig(max_model_len=65536, kv_cache_dtype="fp8", **{"max_num_seqs": 64, **flags})
    return plan(get_model(NVFP4), parse_gpus(gpus), cfg)


def _wsl_notes(p) -> list[str]:
    return [n for n in p.notes if "under WSL2" in n]


def test_a_wsl2_plan_names_the_host_s_share_its_measured_spread_and_the_line_to_read_back():
    from doctor.planner.coefficients import calibration

    spread = calibration()["classes"]["consumer Blackwell under WSL2"]["run_to_run_gib"]
    [note] = _wsl_notes(_plan("1xRTX5090-WSL", backend_version="0.20.0"))
    assert "not known before the boot" in note
    assert f"{spread:.2f} GiB" in note
    assert "qwen-doctor plan --from-log" in note and '"Available KV cache memory"' in note


def test_native_linux_plans_of_the_same_card_carry_no_wsl2_note():
    assert _wsl_notes(_plan("1xRTX5090", backend_version="0.20.0")) == []


def test_the_line_to_read_back_follows_the_engine_and_vllm_0_34_s_extensible_cache():
    [sglang] = _wsl_notes(_plan("1xRTX5090-WSL", backend="sglang"))
    assert "SGLang sizes its pools" in sglang and '"KV Cache is allocated"' in sglang
    [extensible] = _wsl_notes(_plan("1xRTX5090-WSL", backend_version="0.34.0"))
    assert '"Memory after warmup"' in extensible


def test_a_re_plan_from_a_log_does_not_ask_for_the_log_again():
    from doctor.planner.plan import Measured

    p = plan(get_model(NVFP4), parse_gpus("1xRTX5090-WSL"),
             ServeConfig(max_model_len=65536, kv_cache_dtype="fp8", backend_version="0.20.0"),
             Measured(weights_bytes=int(21.86 * GIB), overhead_bytes=int(4 * GIB)))
    assert _wsl_notes(p) == []


def test_a_class_band_is_never_narrower_than_the_engine_s_own_run_to_run_spread(monkeypatch):
    import doctor.planner.bands as bands

    # a class whose few boots happened to land close, though one configuration booted twice moved 0.5 GiB
    classes = {"consumer Blackwell under WSL2": {"boots": 5, "gap_gib": 0.05, "meets_target": True,
                                                 "run_to_run_gib": 0.5, "features": ["nvfp4 checkpoints"]}}
    monkeypatch.setattr(bands, "calibration", lambda: {"classes": classes, "terms": {}})
    p = _plan("1xRTX5090-WSL", backend_version="0.20.0")
    rel, why = bands.plan_band(p)
    cache = min(r.cache_bytes for r in p.ranks)
    assert rel == pytest.approx(0.5 * GIB / cache)
    assert "± 0.50 GiB" in why


def test_the_shipped_run_to_run_spread_is_the_widest_of_every_repeated_wsl2_configuration():
    import importlib.util
    from pathlib import Path

    from doctor.planner.accuracy import partial_residuals
    from doctor.planner.coefficients import calibration

    path = Path(__file__).resolve().parent.parent / "bench" / "plan_accuracy.py"
    spec = importlib.util.spec_from_file_location("plan_accuracy", path)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    entries = bench.load_entries()
    repeats = [(name, label, logged) for name, label, logged in
               bench.repeated_boots(entries, partial_residuals(entries)) if name.endswith("under WSL2")]
    # the Qwen3.6 pair of the published boots, and the pairs of two other models booted on the same WSL2 machine
    assert len(repeats) >= 3 and all(len(logged) >= 2 and None not in logged for _, _, logged in repeats)
    widest = max(max(logged) - min(logged) for _, _, logged in repeats)
    assert calibration()["classes"]["consumer Blackwell under WSL2"]["run_to_run_gib"] == pytest.approx(widest, abs=0.005)


def _non_torch_gib(gpus: str, version: str, **flags) -> float:
    p = _plan(gpus, backend_version=version, **flags)
    return p.ranks[-1].terms.non_torch / GIB


def test_vllm_0_30_s_v2_runner_keeps_its_token_ids_on_a_wsl2_gpu_without_pinned_memory():
    # buffer_utils.py StagedWriteTensor (0.30.0-0.34.0): a UVA tensor lives on the device where pinned memory is off;
    # RequestState.all_token_ids is max_num_seqs x max_model_len int32
    extra = _non_torch_gib("1xRTX5090-WSL", "0.30.0", max_num_seqs=64) - _non_torch_gib("1xRTX5090-WSL", "0.28.0",
                                                                                           max_num_seqs=64)
    assert extra == pytest.approx(64 * 65536 * 4 / GIB, abs=1e-6)
    # native Linux keeps it in pinned host memory: the same plan on the same card carries none of it
    assert _non_torch_gib("1xRTX5090", "0.30.0", max_num_seqs=64) == pytest.approx(
        _non_torch_gib("1xRTX5090", "0.28.0", max_num_seqs=64))


def test_from_0_32_the_m_rope_prefill_positions_join_the_token_ids_and_scale_with_sequences_and_length():
    base = _non_torch_gib("1xRTX5090", "0.32.0", max_num_seqs=64)
    at_64 = _non_torch_gib("1xRTX5090-WSL", "0.32.0", max_num_seqs=64)
    at_128 = _non_torch_gib("1xRTX5090-WSL", "0.32.0", max_num_seqs=128)
    assert at_128 - at_64 == pytest.approx(64 * 65536 * (1 + 3) * 4 / GIB, abs=1e-6)
    assert at_64 > base
    [note] = [n for n in _plan("1xRTX5090-WSL", backend_version="0.32.0", max_num_seqs=64).notes if "V2 model runner" in n]
    assert f"{64 * 65536 * 16 / GIB:.2f} GiB" in note and "VLLM_WSL2_ENABLE_PIN_MEMORY=1" in note and "VLLM_USE_V2_MODEL_RUNNER=0" in note
    # 0.34 has no V1 runner to fall back to: only pinned memory keeps the state off the GPU
    [note] = [n for n in _plan("1xRTX5090-WSL", backend_version="0.34.0", max_num_seqs=64).notes if "V2 model runner" in n]
    assert "VLLM_USE_V2_MODEL_RUNNER" not in note


def test_vllm_0_29_s_v2_runner_does_not_start_under_wsl2_and_the_plan_names_both_ways_out():
    p = _plan("1xRTX5090-WSL", backend_version="0.29.0")
    assert not p.fits
    assert any("UVA is not available" in problem for problem in p.problems)
    assert "VLLM_WSL2_ENABLE_PIN_MEMORY=1" in p.suggestions[0] and "VLLM_USE_V2_MODEL_RUNNER=0" in p.suggestions[0]
    # the V1 runner (0.28) and native Linux start
    assert _plan("1xRTX5090-WSL", backend_version="0.28.0").fits
    assert _plan("1xRTX5090", backend_version="0.29.0").fits


def test_a_wsl2_bundle_that_enables_pinned_memory_keeps_the_v2_runner_s_state_off_the_gpu():
    from dataclasses import replace

    from doctor.planner.wsl import wsl_pins_memory

    assert wsl_pins_memory({"VLLM_WSL2_ENABLE_PIN_MEMORY": "1"}) and not wsl_pins_memory({})
    assert not wsl_pins_memory({"VLLM_WSL2_ENABLE_PIN_MEMORY": "yes"})   # vLLM's int() would refuse it
    cfg = ServeConfig(max_model_len=65536, kv_cache_dtype="fp8", backend_version="0.29.0", max_num_seqs=64)
    wsl = parse_gpus("1xRTX5090-WSL")
    assert plan(get_model(NVFP4), replace(wsl, pinned_memory=True), cfg).fits
    pinned = plan(get_model(NVFP4), replace(wsl, pinned_memory=True), cfg.with_(backend_version="0.32.0"))
    default = plan(get_model(NVFP4), wsl, cfg.with_(backend_version="0.32.0"))
    assert pinned.ranks[-1].cache_bytes > default.ranks[-1].cache_bytes
    assert not [n for n in pinned.notes if "V2 model runner" in n]


@pytest.mark.parametrize("env, pins", [({"VLLM_WSL2_ENABLE_PIN_MEMORY": "1"}, True), ({}, False)])
def test_a_wsl2_facts_bundle_carries_whether_vllm_gets_pinned_memory(env, pins):
    from tests.conftest import facts_with

    from doctor.facts.model import Facts
    from doctor.planner.startup import facts_hardware

    data = facts_with("h200", env=env).data
    data["host"]["kernel"] = "6.6.87.2-microsoft-standard-WSL2"
    gpu = data["nvml"]["gpus"][0]
    gpu.update(name="NVIDIA GeForce RTX 5090", compute_capability="12.0",
               memory={"total": 32607 << 20, "free": 30 << 30, "used": 2 << 30})
    hardware = facts_hardware(Facts(data))
    assert hardware.gpu.virtualised and hardware.pins_memory is pins


def test_a_re_plan_of_a_boot_that_logged_no_pinned_memory_moves_the_device_state_with_the_sequences():
    from doctor.planner.bootlog import parse_boot_log
    from doctor.planner.hardware import Hardware, get_gpu
    from doctor.planner.replan import logged_config, replan

    lines = ["Free memory on device (30.21/31.84 GiB) on startup. Desired GPU memory utilization is (0.9, 28.66 GiB).",
             "Model loading took 21.86 GiB memory", "Available KV cache memory: 2.95 GiB"]
    # buffer_utils.py NonUvaBuffer's warning (0.30+): the V2 runner's state went to the device
    fallback = "WARNING [buffer_utils.py:46] Pinned memory is not available on this platform; falling back to " \
               "device memory for UVA buffers."
    spec, gpu = get_model(NVFP4), Hardware(get_gpu("RTX5090"), 1)
    base = ServeConfig(backend_version="0.32.0", max_model_len=65536, kv_cache_dtype="fp8", max_num_seqs=64)

    def grown(text: str) -> int:
        boot = parse_boot_log(text)
        logged = logged_config(boot, base)
        return (replan(spec, boot, logged, logged.with_(max_num_seqs=128), gpu).ranks[-1].overhead_bytes
                - replan(spec, boot, logged, logged, gpu).ranks[-1].overhead_bytes)

    assert parse_boot_log(fallback).no_pinned_memory
    assert grown("\n".join([fallback, *lines])) - grown("\n".join(lines)) == pytest.approx(64 * 65536 * 16, abs=1)


@pytest.mark.parametrize("env, expected", [({}, "fail"), ({"VLLM_WSL2_ENABLE_PIN_MEMORY": "1"}, "ok"),
                                           ({"VLLM_USE_V2_MODEL_RUNNER": "0"}, "ok")])   # the other way out
def test_check_plans_a_wsl2_machine_with_the_pinned_memory_and_runner_its_environment_gives_vllm(env, expected):
    from doctor.facts.model import Facts
    from tests.conftest import facts_with, run

    data = facts_with("h200", packages={"vllm": "0.29.0"}, env=env).data
    data["host"]["kernel"] = "6.6.87.2-microsoft-standard-WSL2"
    data["nvml"]["gpus"][0].update(name="NVIDIA GeForce RTX 5090", compute_capability="12.0",
                                   memory={"total": 32607 << 20, "free": 31 << 30, "used": 1 << 30}, processes=[])
    [result] = run(Facts(data), only=("QD-PLAN-002",), model=NVFP4, max_model_len=65536, kv_cache_dtype="fp8",
                   max_num_seqs=64)["QD-PLAN-002"]
    assert result.status.value == expected
    if expected == "fail":
        assert "UVA is not available" in result.summary
