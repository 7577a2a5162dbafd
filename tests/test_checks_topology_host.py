"""QD-TOPO and QD-HOST: the TP group's interconnect, /dev/shm, open files, disk for the weights."""

from __future__ import annotations

from tests.conftest import facts_with, load_fixture, run, status_of


def test_single_gpu_has_no_tp_traffic_to_judge():
    results = run(load_fixture("h200"), only=("QD-TOPO",))
    assert all(status_of(results, cid) == ["skip"] for cid in results)


def test_dgx_a100_tp8_is_all_nvlink_with_links_up_and_p2p():
    results = run(load_fixture("a100-8x-nvlink"), only=("QD-TOPO",), tp=8)
    assert [status_of(results, c)[0] for c in ("QD-TOPO-001", "QD-TOPO-002", "QD-TOPO-003")] == ["ok"] * 3
    assert "28 TP pairs" in results["QD-TOPO-001"][0].summary
    assert "12 NVLink links active" in results["QD-TOPO-002"][0].summary


def test_link_down_on_one_gpu_fails_naming_the_gpu_and_links():
    result = run(load_fixture("a100-8x-nvlink-degraded"), only=("QD-TOPO-002",))["QD-TOPO-002"][0]
    assert result.status.value == "fail"
    assert result.details == ["GPU3 (NVIDIA A100-SXM4-80GB): 6 of 12 links active (down: 6, 7, 8, 9, 10, 11)"]


def test_degraded_gpu_outside_the_tp_group_is_not_blamed():
    facts = facts_with("a100-8x-nvlink-degraded", env={"CUDA_VISIBLE_DEVICES": "4,5,6,7"})
    assert status_of(run(facts, only=("QD-TOPO-002",), tp=4), "QD-TOPO-002") == ["ok"]


def test_pcie_only_pairs_warn_and_say_what_they_cross():
    result = run(load_fixture("pcie-4x-l40s-docker"), only=("QD-TOPO-001",))["QD-TOPO-001"][0]
    assert result.status.value == "warn"
    assert "6 of 6 TP pairs have no NVLink (some cross CPU sockets)" == result.summary
    assert "GPU0-GPU1: PCIe only, through one PCIe switch" in result.details


def test_p2p_unavailable_fails_but_not_for_a_pair_on_one_switch():
    results = run(load_fixture("pcie-4x-l40s-docker"), only=("QD-TOPO-003",))
    assert status_of(results, "QD-TOPO-003") == ["fail"]
    assert len(results["QD-TOPO-003"][0].details) == 4
    two = facts_with("pcie-4x-l40s-docker", env={"CUDA_VISIBLE_DEVICES": "0,1"})
    assert status_of(run(two, only=("QD-TOPO-003",)), "QD-TOPO-003") == ["ok"]


def test_docker_default_shm_fails_for_multi_gpu_and_warns_for_one():
    four = run(load_fixture("pcie-4x-l40s-docker"), only=("QD-HOST-001",))["QD-HOST-001"][0]
    assert four.status.value == "fail" and "Docker's 64 MB default" in four.summary
    assert "--ipc=host" in four.fix[0]
    one = run(load_fixture("pcie-4x-l40s-docker"), only=("QD-HOST-001",), tp=1)
    assert status_of(one, "QD-HOST-001") == ["warn"]


def test_low_open_file_limit_warns():
    result = run(load_fixture("pcie-4x-l40s-docker"), only=("QD-HOST-002",))["QD-HOST-002"][0]
    assert result.status.value == "warn" and "1024" in result.summary


def test_disk_space_depends_on_the_checkpoint():
    bf16 = run(load_fixture("h200"), only=("QD-HOST-003",))["QD-HOST-003"][0]
    assert bf16.status.value == "fail"  # 64 GiB free on the recorded machine, BF16 needs ~74 GiB
    fp8 = run(load_fixture("h200"), only=("QD-HOST-003",), model="Qwen/Qwen3.5-35B-A3B-FP8")
    assert status_of(fp8, "QD-HOST-003") == ["ok"]


def test_model_already_in_cache_needs_no_space():
    facts = facts_with("h200")
    facts.data["host"]["cached_models"] = ["models--Qwen--Qwen3.5-35B-A3B"]
    result = run(facts, only=("QD-HOST-003",), model="Qwen/Qwen3.5-35B-A3B")["QD-HOST-003"][0]
    assert result.status.value == "ok" and "already in the cache" in result.summary
