"""The share of GPU memory `check` holds free memory against is the engine version's own default."""

from __future__ import annotations

from packaging.version import Version

from doctor.cli.check import GPU_MEMORY_UTILIZATION_HELP
from doctor.flags.schema import available_versions, flag_default
from doctor.planner.config import ASSUMED_VLLM_VERSION
from tests.conftest import facts_with, run
from tests.test_cli_check import qd


def _mem001(backend: str = "vllm", vllm: str | None = None, **options):
    facts = facts_with("h200", packages={"vllm": vllm} if vllm else {"vllm": None})
    (result,) = run(facts, backend=backend, only=("QD-MEM-001",), **options)["QD-MEM-001"]
    return result


def test_help_states_the_default_every_shipped_vllm_schema_records():
    for version in available_versions("vllm"):
        default = flag_default("vllm", str(version), "--gpu-memory-utilization")
        if version < Version("0.20"):
            assert default.value == 0.9 and not default.resolved_at_runtime, version
        elif version < Version("0.34"):
            assert default.value == 0.92 and not default.resolved_at_runtime, version
        else:
            assert default.resolved_at_runtime, version
    assert flag_default("vllm", ASSUMED_VLLM_VERSION, "--gpu-memory-utilization").value == 0.92
    for phrase in ("0.9 up to 0.19", "0.92 from 0.20", "decided at startup from 0.34", "0.26's 0.92"):
        assert phrase in GPU_MEMORY_UTILIZATION_HELP
    assert "default 0.9)" not in qd("check", "--help").stdout


def test_free_memory_is_held_against_the_installed_vllms_own_default():
    old = _mem001(vllm="0.19.1")
    assert old.summary == "free memory covers --gpu-memory-utilization 0.9 on 1 GPU(s)"
    assert "--gpu-memory-utilization 0.9: the default of vLLM 0.19.1." in old.details
    new = _mem001(vllm="0.26.0")
    assert new.summary == "free memory covers --gpu-memory-utilization 0.92 on 1 GPU(s)"
    assert "--gpu-memory-utilization 0.92: the default of vLLM 0.26.0." in new.details
    unknown = _mem001()
    assert any(f"vLLM {ASSUMED_VLLM_VERSION} (version not recorded" in d for d in unknown.details)


def test_a_default_decided_at_startup_is_not_guessed_and_a_given_share_wins():
    resolved = _mem001(vllm="0.34.0")
    assert resolved.status.value == "skip" and "resolves its default at startup" in resolved.summary
    given = _mem001(vllm="0.34.0", gpu_memory_utilization=0.5)
    assert given.status.value == "ok" and any("0.5: as given" in d for d in given.details)
    sglang = _mem001(backend="sglang")
    assert sglang.status.value == "skip" and "--mem-fraction-static" in sglang.summary
