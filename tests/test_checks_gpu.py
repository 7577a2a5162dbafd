"""QD-GPU and QD-MEM: visible GPUs, bf16/FP8 capability, torch arch list, MIG, memory health, free memory."""

from __future__ import annotations

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
