"""flag_default: each engine version's own default for a flag, as extracted from its wheel."""

from __future__ import annotations

import pytest

from doctor.flags import flag_default
from doctor.flags.schema import available_versions, load_schema


@pytest.mark.parametrize(("version", "expected"), [("0.17.0", 0.9), ("0.19.1", 0.9), ("0.20.0", 0.92),
                                                    ("0.26.0", 0.92), ("0.33.0", 0.92)])
def test_vllm_gpu_memory_utilization_per_version(version: str, expected: float) -> None:
    found = flag_default("vllm", version, "gpu_memory_utilization")
    assert found is not None and found.value == expected and not found.resolved_at_runtime


def test_vllm_034_resolves_the_utilisation_at_startup() -> None:
    found = flag_default("vllm", "0.34.0", "--gpu-memory-utilization")
    assert found is not None and found.flag == "--device-memory-utilization"
    assert found.value is None and found.resolved_at_runtime
    assert any("resolved_gpu_memory_utilization" in s for s in found.source)


def test_a_version_between_two_schemas_takes_the_older_one() -> None:
    found = flag_default("vllm", "0.19.5", "--gpu-memory-utilization")
    assert found is not None and found.version == "0.19.1" and found.value == 0.9


@pytest.mark.parametrize("flag", ["max_num_batched_tokens", "max_num_seqs", "block_size"])
def test_vllm_batch_and_block_defaults_are_rules_not_literals(flag: str) -> None:
    for version in available_versions("vllm"):
        found = flag_default("vllm", str(version), flag)
        assert found is not None and found.value is None and found.resolved_at_runtime, (version, flag)


def test_sglang_memory_defaults_are_rules_with_their_source() -> None:
    for version in available_versions("sglang"):
        for flag in ("--mem-fraction-static", "--chunked-prefill-size"):
            found = flag_default("sglang", str(version), flag)
            assert found is not None and found.value is None and found.resolved_at_runtime, (version, flag)
            assert any("gpu_memory_settings" in s for s in found.source)


def test_sglang_aliases_and_literals() -> None:
    assert flag_default("sglang", "0.5.9", "--tp-size").value == 1
    assert flag_default("sglang", "0.5.23", "--mamba-full-memory-ratio").value == 0.9


def test_unknown_flag_has_no_default() -> None:
    assert flag_default("vllm", "0.26.0", "--radix-size") is None


def test_every_shipped_schema_records_nearly_every_default() -> None:
    from doctor.flags.schema import NOT_RECORDED

    for backend in ("vllm", "sglang"):
        for version in available_versions(backend):
            flags = [f for f in load_schema(backend, str(version)).flags.values() if f.action != "help"]
            known = [f for f in flags if f.default is not NOT_RECORDED or f.default_rule]
            assert len(known) >= 0.97 * len(flags), (backend, str(version), len(known), len(flags))
