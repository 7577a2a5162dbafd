"""QD-DRV: an NVIDIA driver is loaded and is new enough for torch's CUDA runtime."""

from __future__ import annotations

from tests.conftest import facts_with, load_fixture, run, status_of


def test_h200_driver_580_serves_torch_cu130():
    results = run(load_fixture("h200"), only=("QD-DRV",))
    assert status_of(results, "QD-DRV-001") == ["ok"]
    assert status_of(results, "QD-DRV-002") == ["ok"]
    assert "needs >= 580.65.06" in results["QD-DRV-002"][0].summary


def test_machine_without_driver_fails_with_install_hint_and_skips_dependants():
    results = run(load_fixture("no-driver"), only=("QD-DRV",))
    first = results["QD-DRV-001"][0]
    assert first.status.value == "fail"
    assert "NVML library not found" in first.summary
    assert any("--gpus all" in f for f in first.fix)
    assert status_of(results, "QD-DRV-002") == ["skip"]


def test_cuda_12_driver_under_cu130_torch_fails_below_major_floor():
    result = run(load_fixture("old-driver"), only=("QD-DRV-002",))["QD-DRV-002"][0]
    assert result.status.value == "fail"
    assert "CUDA 13.x needs driver >= 580" in result.summary
    assert any("580.65.06" in f for f in result.fix)


def test_driver_between_major_floor_and_toolkit_minimum_fails_on_the_ptx_the_engines_load():
    # vllm#31700: torch 2.9.0+cu128 on driver 550.144.03 -> "the provided PTX was compiled with an unsupported toolchain"
    facts = facts_with("old-driver", packages={"torch": {"version": "2.9.1", "cuda": "12.8", "distribution": "torch"}})
    facts.data["nvml"]["driver_version"] = "550.54.15"
    result = run(facts, only=("QD-DRV-002",))["QD-DRV-002"][0]
    assert result.status.value == "fail"
    assert "570.26" in result.summary
    assert any("unsupported toolchain" in d for d in result.details)


def test_driver_known_only_by_its_cuda_version_is_compared_with_torchs_cuda():
    torch = {"version": "2.4.0+cu121", "cuda": "12.1", "distribution": "torch"}
    facts = facts_with("old-driver", packages={"torch": torch})
    facts.data["nvml"].update(driver_version=None, cuda_driver_version="11.4")
    result = run(facts, only=("QD-DRV-002",))["QD-DRV-002"][0]
    assert result.status.value == "fail"
    assert "supports CUDA 11.4" in result.summary
    facts.data["nvml"]["cuda_driver_version"] = "12.2"
    assert status_of(run(facts, only=("QD-DRV-002",)), "QD-DRV-002") == ["ok"]


def test_torch_that_cannot_initialise_cuda_fails_and_unrecorded_skips():
    facts = facts_with("h200", torch_runtime={"cuda_available": False, "error": "CUDA initialization: Unexpected error "
                                              "from cudaGetDeviceCount(). Error 802: system not yet initialized"})
    result = run(facts, only=("QD-DRV-003",))["QD-DRV-003"][0]
    assert result.status.value == "fail"
    assert result.remedy_ids == ["QD-R-CUDA-SYSTEM-NOT-READY"]
    assert status_of(run(facts_with("h200", torch_runtime={"cuda_available": True}), only=("QD-DRV-003",)),
                     "QD-DRV-003") == ["ok"]
    assert status_of(run(facts_with("h200", torch_runtime={}), only=("QD-DRV-003",)), "QD-DRV-003") == ["skip"]


def test_cpu_build_of_torch_is_not_compared_with_the_driver():
    facts = facts_with(packages={"torch": {"version": "2.13.0+cpu", "cuda": None, "distribution": "torch"}})
    assert status_of(run(facts, only=("QD-DRV-002",)), "QD-DRV-002") == ["skip"]


def test_hung_nvml_probe_is_reported_as_failure():
    facts = facts_with("no-driver", probes={"nvml": {"status": "timeout", "error": "probe 'nvml' did not finish within 10 s"}})
    result = run(facts, only=("QD-DRV-001",))["QD-DRV-001"][0]
    assert result.status.value == "fail"
    assert "did not answer" in result.summary
