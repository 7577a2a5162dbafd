"""QD-GPU and QD-MEM: visible GPUs, bf16/FP8 capability, torch arch list, MIG, memory health, free memory."""

from __future__ import annotations

import pytest

from doctor import registry, runner
from doctor.context import CheckContext
from doctor.planner.versions import known_versions
from profiles import load_profile
from tests.conftest import facts_with, load_fixture, run, status_of


def test_h200_passes_every_gpu_and_memory_check():
    results = run(load_fixture("h200"), only=("QD-GPU", "QD-MEM"))
    assert status_of(results, "QD-MEM-003") == ["skip"]  # unified-memory GPUs only
    del results["QD-MEM-003"]
    assert {cid: status_of(results, cid) for cid in results} == {
        cid: ["ok"] for cid in results
    }, {cid: r[0].summary for cid, r in results.items()}


def test_arch_list_recorded_by_torch_wins_over_the_table():
    result = run(load_fixture("h200"), only=("QD-GPU-004",))["QD-GPU-004"][0]
    assert "as torch reports it" in result.summary


def test_v100_fails_bf16_and_torch_cu130_arch():
    results = run(load_fixture("v100"), only=("QD-GPU",))
    assert status_of(results, "QD-GPU-002") == ["fail"]
    arch = results["QD-GPU-004"][0]
    assert arch.status.value == "fail" and "sm_70" in arch.summary
    assert "no kernel image is available" in arch.details[0]


def test_fp8_on_a100_warns_about_weight_only_marlin():
    result = run(load_fixture("a100-8x-nvlink"), only=("QD-GPU-003",), model="Qwen/Qwen3.5-35B-A3B-FP8")["QD-GPU-003"][0]
    assert result.status.value == "warn"
    assert "Marlin" in result.details[0]


def test_a100_without_fp8_request_mentions_the_fallback_but_passes():
    result = run(load_fixture("a100-8x-nvlink"), only=("QD-GPU-003",))["QD-GPU-003"][0]
    assert result.status.value == "ok" and "Marlin" in result.summary


def test_fp8_on_l40s_is_native():
    result = run(load_fixture("pcie-4x-l40s-docker"), only=("QD-GPU-003",), quantization="fp8")["QD-GPU-003"][0]
    assert result.status.value == "ok" and "FP8 tensor cores" in result.summary


def test_mig_single_gpu_warns_and_tp_across_mig_fails():
    assert status_of(run(load_fixture("mig"), only=("QD-GPU-005",)), "QD-GPU-005") == ["warn"]
    two = facts_with("mig")
    two.data["nvml"]["gpus"].append({**two.data["nvml"]["gpus"][0], "index": 1})
    assert status_of(run(two, only=("QD-GPU-005",), tp=2), "QD-GPU-005") == ["fail"]


def test_tp_larger_than_visible_gpus_fails():
    result = run(load_fixture("h200"), only=("QD-GPU-001",), tp=2)["QD-GPU-001"][0]
    assert result.status.value == "fail" and "needs 2 GPUs" in result.summary


def test_cuda_visible_devices_selects_and_orders_gpus():
    facts = facts_with("a100-8x-nvlink", env={"CUDA_VISIBLE_DEVICES": "6,7"})
    result = run(facts, only=("QD-GPU-001",))["QD-GPU-001"][0]
    assert result.status.value == "ok" and "2 GPU(s) visible of 8" in result.summary
    uuid = facts.gpus[5]["uuid"]
    by_uuid = facts_with("a100-8x-nvlink", env={"CUDA_VISIBLE_DEVICES": uuid})
    assert "1 GPU(s) visible" in run(by_uuid, only=("QD-GPU-001",))["QD-GPU-001"][0].summary


def test_cuda_visible_devices_pointing_nowhere_fails():
    facts = facts_with("h200", env={"CUDA_VISIBLE_DEVICES": "3"})
    result = run(facts, only=("QD-GPU-001",))["QD-GPU-001"][0]
    assert result.status.value == "fail" and "'3' matches no GPU" in result.summary


def test_empty_cuda_visible_devices_hides_every_gpu():
    facts = facts_with("h200", env={"CUDA_VISIBLE_DEVICES": ""})
    assert status_of(run(facts, only=("QD-GPU-001",)), "QD-GPU-001") == ["fail"]


def test_pending_row_remap_fails_memory_health():
    facts = facts_with("h200")
    facts.data["nvml"]["gpus"][0]["remapped_rows"]["pending"] = True
    result = run(facts, only=("QD-GPU-006",))["QD-GPU-006"][0]
    assert result.status.value == "fail" and "pending" in result.details[0]


def test_foreign_process_and_short_free_memory_on_l40s():
    results = run(load_fixture("pcie-4x-l40s-docker"), only=("QD-MEM",))
    assert status_of(results, "QD-MEM-001") == ["fail"]
    # (46068 - 512 - 20480) MiB free of 46068 MiB = 0.544, less a 0.02 margin
    assert any("<= 0.52" in f for f in results["QD-MEM-001"][0].fix)
    foreign = results["QD-MEM-002"][0]
    assert foreign.status.value == "warn" and "pid 4242 python holds 20.0 GiB" in foreign.details[0]


def test_lower_utilization_makes_room_next_to_foreign_process():
    result = run(load_fixture("pcie-4x-l40s-docker"), only=("QD-MEM-001",), gpu_memory_utilization=0.4)
    assert status_of(result, "QD-MEM-001") == ["ok"]


def test_sglang_mem_fraction_static_is_the_share_checked():
    result = run(load_fixture("pcie-4x-l40s-docker"), backend="sglang", only=("QD-MEM-001",), mem_fraction_static=0.88)
    assert "--mem-fraction-static 0.88" in result["QD-MEM-001"][0].details[0]


# QD-MEM-003 on the GB10 fixture: 121.7 GiB shared, MemFree 34 GiB, MemAvailable 112 GiB (76 GiB page cache).
# What the engine compares is per version (doctor/planner/versions.py, read in the wheels): vLLM MemFree up to
# 0.11.0, MemAvailable from 0.11.1; SGLang MemFree up to 0.5.3.post3, MemAvailable from 0.5.4.

def _mem003(backend: str, version: str | None, **options):
    facts = facts_with("gb10-spark", packages={backend: version}) if version else load_fixture("gb10-spark")
    (result,) = run(facts, backend=backend, only=("QD-MEM-003",), **options)["QD-MEM-003"]
    return result


def test_gb10_page_cache_fails_a_vllm_that_reads_memfree_and_names_the_version_rule():
    old = _mem003("vllm", "0.11.0", gpu_memory_utilization=0.7)
    assert old.status.value == "fail"
    assert "vLLM 0.11.0 reads MemFree" in old.summary and "page cache (76.0 GiB)" in old.summary
    assert "MemAvailable from 0.11.1" in " ".join(old.details)
    assert "drop_caches" in old.fix[0] and "upgrade to vLLM >= 0.11.1" in old.fix[1]
    assert old.evidence["reads"] == "MemFree"


@pytest.mark.parametrize("version", ["0.11.1", "0.19.1", "0.32.0"])
def test_gb10_page_cache_passes_a_vllm_that_reads_memavailable(version):
    new = _mem003("vllm", version, gpu_memory_utilization=0.7)
    assert new.status.value == "ok", new.summary
    assert f"vLLM {version} takes MemAvailable" in " ".join(new.details) and "since 0.11.1" in " ".join(new.details)
    assert "112.0 GiB free covers" in new.summary and not new.fix


def test_memavailable_below_the_request_fails_every_vllm_and_asks_for_a_lower_utilization():
    greedy = _mem003("vllm", "0.32.0", gpu_memory_utilization=0.95)
    assert greedy.status.value == "fail" and "only 112.0 GiB of 121.7 GiB is available" in greedy.summary
    assert greedy.fix == ["Lower --gpu-memory-utilization to <= 0.87, or stop host processes that hold memory."]


def test_sglang_reads_memfree_until_0_5_4():
    assert _mem003("sglang", "0.5.3", mem_fraction_static=0.7).status.value == "fail"
    assert "SGLang 0.5.3 reads MemFree" in _mem003("sglang", "0.5.3", mem_fraction_static=0.7).summary
    assert _mem003("sglang", "0.5.4", mem_fraction_static=0.7).status.value == "ok"
    greedy = _mem003("sglang", "0.5.23", mem_fraction_static=0.95)
    assert greedy.status.value == "fail" and "Lower --mem-fraction-static" in greedy.fix[0]


def test_an_unrecorded_version_is_assumed_newest_and_warns_when_memfree_would_fail():
    unknown = _mem003("vllm", None, gpu_memory_utilization=0.7)
    newest = known_versions("vllm")[-1]
    assert unknown.status.value == "warn"
    assert f"assumed {newest}" in unknown.summary and "vLLM >= 0.11.1" in unknown.summary
    assert f"vLLM version unknown, assumed {newest}" in unknown.details[1]
    assert _mem003("vllm", None, gpu_memory_utilization=0.2).status.value == "ok"   # MemFree covers it as well


def test_the_profile_range_decides_when_the_facts_hold_no_version():
    facts = load_fixture("gb10-spark")
    profile = load_profile("vllm-stable")   # backend_version >=0.17.0: every release there reads MemAvailable
    (result,) = run_with_profile(facts, profile, gpu_memory_utilization=0.7)
    assert result.status.value == "ok"
    assert f"every version in the profile's range {profile.backend_version}" in result.details[1]


def test_before_0_20_vllm_recognised_unified_memory_by_compute_capability_only():
    def thor(version: str):
        facts = facts_with("gb10-spark", packages={"vllm": version})
        facts.data["nvml"]["gpus"][0].update(name="NVIDIA Thor", compute_capability="10.1")  # not 8.7, 11.0, 12.1
        (result,) = run(facts, backend="vllm", only=("QD-MEM-003",), gpu_memory_utilization=0.7)["QD-MEM-003"]
        return result

    old = thor("0.19.1")
    assert old.status.value == "fail" and "only on compute capability 8.7, 11.0, 12.1" in old.details[1]
    assert "upgrade to vLLM >= 0.20.0" in old.fix[1]
    assert thor("0.20.0").status.value == "ok"   # is_integrated_gpu: cudaDevAttrIntegrated (vllm PR #35356)


def run_with_profile(facts, profile, **options):
    specs = runner.select(registry.load(plugins=False), profile.backend, ("QD-MEM-003",))
    return runner.run_checks(specs, CheckContext(facts=facts, backend=profile.backend, profile=profile,
                                                 options=options))


def test_nvfp4_is_native_on_blackwell_weight_only_from_7_5_and_impossible_below():
    model = "nvidia/Qwen3.6-35B-A3B-NVFP4"
    assert status_of(run(load_fixture("gb10-spark"), only=("QD-GPU-008",), model=model), "QD-GPU-008") == ["ok"]
    hopper = run(load_fixture("h200"), only=("QD-GPU-008",), model=model)["QD-GPU-008"][0]
    assert hopper.status.value == "warn" and "Marlin" in hopper.details[0]
    assert status_of(run(load_fixture("v100"), only=("QD-GPU-008",), quantization="modelopt_fp4"),
                     "QD-GPU-008") == ["fail"]
    assert run(load_fixture("h200"), only=("QD-GPU-008",))["QD-GPU-008"][0].summary == "NVFP4 not requested"
