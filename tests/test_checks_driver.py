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


def test_driver_between_major_floor_and_toolkit_minimum_warns_minor_version_compatibility():
    facts = facts_with("old-driver", packages={"torch": {"version": "2.9.1", "cuda": "12.8", "distribution": "torch"}})
    facts.data["nvml"]["driver_version"] = "550.54.15"
    result = run(facts, only=("QD-DRV-002",))["QD-DRV-002"][0]
    assert result.status.value == "warn"
    assert "570.26" in result.summary


def test_cpu_build_of_torch_is_not_compared_with_the_driver():
    facts = facts_with(packages={"torch": {"version": "2.13.0+cpu", "cuda": None, "distribution": "torch"}})
    assert status_of(run(facts, only=("QD-DRV-002",)), "QD-DRV-002") == ["skip"]


def test_hung_nvml_probe_is_reported_as_failure():
    facts = facts_with("no-driver", probes={"nvml": {"status": "timeout", "error": "probe 'nvml' did not finish within 10 s"}})
    result = run(facts, only=("QD-DRV-001",))["QD-DRV-001"][0]
    assert result.status.value == "fail"
    assert "did not answer" in result.summary
