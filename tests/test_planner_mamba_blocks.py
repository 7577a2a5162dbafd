"""The plan refuses, as vLLM does, a --max-num-seqs above the hybrid model's Mamba cache blocks when FULL CUDA graphs
are captured (config/compilation.py resolve_cudagraph_mode_and_sizes, vLLM 0.19.0+)."""

from __future__ import annotations

from doctor.models.registry import get_model
from doctor.planner import ServeConfig, parse_gpus, plan

SPEC = get_model("Qwen/Qwen3.5-35B-A3B")
H100 = parse_gpus("1xH100")


def config(**changes) -> ServeConfig:
    base = dict(backend_version="0.26.0", max_model_len=262144, language_model_only=True, max_num_seqs=512,
                max_num_batched_tokens=16384, gpu_memory_utilization=0.95)
    return ServeConfig(**{**base, **changes})


def test_512_sequences_on_an_h100_refuse_like_the_logged_boot():
    # tests/fixtures/h100-rehearsal/vllm-kv/h100-vllm-0.26-bf16-512-16384-u095.log: "max_num_seqs (512) exceeds
    # available Mamba cache blocks (335)"; the plan's pool is within its band of that
    result = plan(SPEC, H100, config())
    assert not result.fits
    blocks = result.ranks[0].mamba_blocks
    assert abs(blocks - 335) <= 0.03 * 335
    assert result.problems[0].startswith(f"max_num_seqs (512) exceeds available Mamba cache blocks ({blocks})")
    assert result.suggestions[0].startswith(f"lower --max-num-seqs to {blocks}")


def test_fewer_sequences_than_blocks_fit():
    assert plan(SPEC, H100, config(max_num_seqs=256)).fits


def test_eager_mode_and_releases_before_the_check_do_not_refuse():
    assert plan(SPEC, H100, config(enforce_eager=True)).fits
    assert not any("Mamba cache blocks" in p for p in plan(SPEC, H100, config(backend_version="0.18.1")).problems)
