"""`profiles suggest` ranks the profiles that fit a machine and says why each other one does not;
`profiles show` prints every profile's provenance and planned KV tokens."""

from __future__ import annotations

import pytest

from doctor.suggest import judge, machine_from_facts, machine_from_gpus, suggest
from profiles import list_profiles, load_profile, profile_names
from tests.conftest import FIXTURES, load_fixture
from tests.test_profiles_cli import run


def test_rtx5090_gets_an_nvfp4_profile_first_and_bf16_is_rejected_for_memory(
        capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "profiles", "suggest", "--gpus", "1xRTX5090", "--all")
    assert code == 0
    first = out.splitlines()[1]
    assert "nvfp4" in first.lower() and "rtx5090" in first
    bf16 = next(line for line in out.splitlines() if "recipe-qwen3.6-bf16-h200:" in line)
    assert "too little memory" in bf16 and "31.8 GiB" in bf16


def test_a_single_dgx_spark_is_offered_the_spark_profile() -> None:
    verdicts = suggest(machine_from_gpus("1xGB10"), list_profiles())
    assert verdicts[0].profile.hardware.gpu == "GB10" and verdicts[0].fits
    two = next(v for v in verdicts if v.profile.name == "vllm-dgx-spark-2x")
    assert not two.fits and "spans 2 nodes" in two.reasons[0]


@pytest.mark.parametrize("gpus, profile, reason", [
    ("1xA100-80G", "vllm-fp8", "no native FP8"),
    ("1xH100", "recipe-qwen3.6-nvfp4-b200", "no NVFP4 support"),
    ("1xH100", "vllm-stable", "too few GPUs: needs 2, the machine has 1"),
    ("1xRTX5090", "sglang-stable", "too little memory"),
])
def test_each_rejection_names_its_cause(gpus: str, profile: str, reason: str) -> None:
    verdict = judge(load_profile(profile), machine_from_gpus(gpus))
    assert not verdict.fits and any(reason in r for r in verdict.reasons)


def test_an_installed_engine_outside_the_range_is_a_rejection() -> None:
    machine = machine_from_gpus("1xH200", {"sglang": "0.5.9", "vllm": None})
    verdict = judge(load_profile("cookbook-qwen3.6-fp8-h200"), machine)
    assert any("engine version out of range: sglang 0.5.9" in r for r in verdict.reasons)
    assert judge(load_profile("recipe-qwen3.6-fp8-h200"), machine).fits


def test_facts_give_the_machine_and_check_profile_auto_picks_from_them(capsys: pytest.CaptureFixture[str]) -> None:
    machine = machine_from_facts(load_fixture("h200"))
    assert machine is not None and machine.gpu.name == "H200" and machine.count == 1
    code, out, err = run(capsys, "check", "--profile", "auto", "--from", str(FIXTURES / "h200.json"),
                         "--only", "QD-PROF-001")
    assert code == 0 and "--profile auto: " in err and "check --profile recipe-" in out


def test_no_gpu_means_auto_cannot_pick(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "check", "--profile", "auto", "--from", str(FIXTURES / "no-driver.json"))
    assert code == 2 and "no NVIDIA GPU found" in err and len(err.strip().splitlines()) == 1


def test_every_profile_shows_provenance_and_planned_kv_tokens(capsys: pytest.CaptureFixture[str]) -> None:
    for name in profile_names():
        code, out, err = run(capsys, "profiles", "show", name)
        assert code == 0, (name, err)
        provenance = next(line for line in out.splitlines() if line.startswith("provenance: "))
        planned = next(line for line in out.splitlines() if line.startswith("planned: "))
        assert "imported from" in provenance or "hand-written from" in provenance
        if name != "cpu-tiny":
            assert " KV tokens on " in planned and planned.endswith("fits"), (name, planned)


def _held(packages: dict[str, str | None], held_gib: float):
    """The H200 fixture with another tenant holding `held_gib` of the GPU when the facts were taken."""
    from doctor.facts.model import Facts
    from doctor.planner.hardware import GIB, get_gpu
    from tests.conftest import facts_with

    data = facts_with("h200", packages=packages).data
    gpu = data["nvml"]["gpus"][0]   # NVML's free memory at rest is torch's total (doctor/planner/startup.py)
    gpu["memory"] = {**gpu["memory"], "free": get_gpu("H200").usable_bytes - int(held_gib * GIB)}
    gpu["processes"] = [{"pid": 4242, "name": "trainer", "used_memory": int(held_gib * GIB)}]
    return Facts(data)


def test_suggest_plans_a_profile_on_what_plan_facts_reads_the_memory_other_processes_hold() -> None:
    from doctor.planner.startup import facts_hardware
    from doctor.profile_plan import plan_profile

    profile = load_profile("sglang-fp8")   # SGLang's pools are a share of the memory free before the load
    clean, busy = (_held({"vllm": None, "sglang": None}, gib) for gib in (0, 40))
    verdicts = [judge(profile, machine_from_facts(facts)) for facts in (clean, busy)]
    assert all(v.fits for v in verdicts) and verdicts[1].kv_tokens < verdicts[0].kv_tokens
    assert verdicts[1].kv_tokens == plan_profile(profile, facts_hardware(busy)).kv_tokens


def test_suggest_rejects_a_vllm_profile_that_would_not_start_beside_another_tenant() -> None:
    machine = machine_from_facts(_held({"vllm": "0.26.0", "sglang": None}, 40))
    verdict = judge(load_profile("recipe-qwen3.6-fp8-h200"), machine)
    assert not verdict.fits
    assert "on startup is less than desired GPU memory utilization" in verdict.reasons[0]
    assert "other processes hold 40.00 GiB of each H200 at start-up" in verdict.reasons[0]
