"""The planner takes each engine version's own defaults from the flag schemas extracted from its wheel,
and the rules still hard-coded in doctor/planner agree with those schemas for every covered version."""

from __future__ import annotations

import pytest
from packaging.version import Version

from doctor.flags import flag_default
from doctor.flags.schema import available_versions
from doctor.planner.config import ServeConfig
from doctor.planner.engine_defaults import engine_default, literal_default, vllm_batch_defaults_of
from doctor.planner.hardware import catalogue, get_gpu
from doctor.planner.overhead import vllm_batch_defaults
from doctor.planner.versions import vllm_rules

VLLM = [str(v) for v in available_versions("vllm")]
SGLANG = [str(v) for v in available_versions("sglang")]


@pytest.mark.parametrize("version", VLLM)
def test_hard_coded_vllm_utilisation_agrees_with_the_schema(version: str) -> None:
    found = flag_default("vllm", version, "--gpu-memory-utilization")
    assert found is not None
    rules = vllm_rules(version)
    if found.resolved_at_runtime:
        # 0.34: None on the command line, CacheConfig.resolved_gpu_memory_utilization decides
        assert found.value is None and rules.extensible_kv_cache and rules.gpu_memory_utilization == 1.0
    else:
        assert rules.gpu_memory_utilization == found.value
        assert ServeConfig(backend_version=version).utilization == found.value


@pytest.mark.parametrize("version", VLLM)
def test_hard_coded_large_gpu_batch_tier_agrees_with_the_schema(version: str) -> None:
    tiers = engine_default("vllm", version, "max_num_batched_tokens").tiers
    assert vllm_rules(version).large_gpu_batch_defaults == any(t["min_memory_gib"] == 160 for t in tiers)


@pytest.mark.parametrize(("gpu", "version", "expected"), [
    ("H200", "0.26.0", (8192, 1024)),
    ("H200", "0.28.0", (8192, 1024)),     # torch reports < 160 GiB on an H200
    ("B200", "0.26.0", (8192, 1024)),
    ("B200", "0.28.0", (16384, 1024)),
    ("A100-80G", "0.32.0", (2048, 256)),
    ("RTX3090", "0.26.0", (2048, 256)),
    # GB10: NVML reports no memory, so get_batch_defaults sees 0 bytes before 0.33 (the published GB10 boots of
    # 0.18.1rc1 and 0.22.1rc1 compile range (1, 2048) and capture up to 256); 0.33 names cc 12.1 explicitly
    ("GB10", "0.22.1", (2048, 256)),
    ("GB10", "0.32.0", (2048, 256)),
    ("GB10", "0.33.0", (2048, 256)),
])
def test_batch_defaults_follow_the_version_and_the_gpu(gpu: str, version: str, expected: tuple[int, int]) -> None:
    assert vllm_batch_defaults(get_gpu(gpu), version) == expected


def test_every_covered_vllm_version_has_exact_batch_tiers() -> None:
    for version in VLLM:
        for gpu in set(catalogue().values()):
            assert vllm_batch_defaults_of(version, gpu.usable_bytes, gpu.name, gpu.capability) is not None


@pytest.mark.parametrize("version", SGLANG)
def test_serve_config_sglang_literals_agree_with_the_schema(version: str) -> None:
    assert literal_default("sglang", version, "mamba_full_memory_ratio") == ServeConfig().mamba_full_memory_ratio
    assert literal_default("sglang", version, "kv_cache_dtype") == ServeConfig().kv_cache_dtype


@pytest.mark.parametrize("version", VLLM)
def test_serve_config_vllm_literals_agree_with_the_schema(version: str) -> None:
    assert literal_default("vllm", version, "kv_cache_dtype") == ServeConfig().kv_cache_dtype
    mode = literal_default("vllm", version, "mm_encoder_tp_mode")
    assert mode in (None, ServeConfig().mm_encoder_tp_mode)


@pytest.mark.parametrize("version", SGLANG)
def test_sglang_memory_defaults_are_resolved_where_sglang_rules_says(version: str) -> None:
    """versions.sglang_rules: server_args.py _handle_gpu_memory_settings up to 0.5.18, then
    arg_groups/memory_hook.py handle_gpu_memory_settings."""
    found = engine_default("sglang", version, "mem_fraction_static")
    assert found is not None and found.value is None and found.resolved_at_runtime
    expected = ("sglang/srt/server_args.py::ServerArgs._handle_gpu_memory_settings"
                if Version(version) < Version("0.5.19")
                else "sglang/srt/arg_groups/memory_hook.py::handle_gpu_memory_settings")
    assert found.source[0] == expected
    assert literal_default("sglang", version, "mem_fraction_static") is None
    assert literal_default("sglang", version, "max_num_batched_tokens") is None


def test_unknown_version_falls_back_to_the_nearest_older_schema() -> None:
    assert ServeConfig(backend_version="0.19.9").utilization == 0.9
    assert ServeConfig(backend_version="0.20.3").utilization == 0.92
