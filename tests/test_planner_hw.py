"""The accounting of vLLM on consumer Blackwell and unified-memory machines (doctor/planner/overhead.py)."""

from __future__ import annotations

from doctor.models import get_model
from doctor.planner import ServeConfig
from doctor.planner.bootlog import parse_boot_log
from doctor.planner.overhead import moe_workspace

NVFP4 = get_model("nvidia/Qwen3.6-35B-A3B-NVFP4")


def test_vllm_cutlass_fp4_experts_hold_their_workspaces_and_three_shuffled_copies():
    # CutlassExpertsFp4.workspace_shapes: (M topk, max(2I, H)) + (M topk, I) + (M, H); run_cutlass_moe_fp4 keeps the
    # shuffled input, the shuffled output and its weighted product, M topk H each (bf16 activations)
    cfg = ServeConfig(backend_version="0.20.0", moe_backend="cutlass")
    m, topk, h, i = 8192, NVFP4.moe.experts_per_token, NVFP4.hidden_size, NVFP4.moe.intermediate_size
    ws = moe_workspace(NVFP4, cfg, m, (12, 0))
    assert ws.persistent == (m * topk * (max(2 * i, h) + i) + m * h) * 2
    assert ws.peak == ws.persistent + 3 * m * topk * h * 2


def test_the_oracle_s_flashinfer_cutlass_keeps_the_estimate_and_only_cutlass_takes_the_source_figure():
    auto = moe_workspace(NVFP4, ServeConfig(backend_version="0.20.0"), 8192, (12, 0))
    flashinfer = moe_workspace(NVFP4, ServeConfig(backend_version="0.20.0", moe_backend="flashinfer_cutlass"), 8192,
                               (12, 0))
    cutlass = moe_workspace(NVFP4, ServeConfig(backend_version="0.20.0", moe_backend="cutlass"), 8192, (12, 0))
    assert auto == flashinfer and cutlass.peak > 3 * auto.peak


def test_a_boot_whose_cache_did_not_fit_logs_negative_figures_and_they_are_read():
    boot = parse_boot_log("\n".join([
        "(EngineCore pid=207) INFO 04-19 09:15:22 [gpu_model_runner.py:5995] Estimated CUDA graph memory: -0.90 GiB total",
        "(EngineCore pid=207) INFO 04-19 09:15:23 [gpu_worker.py:436] Available KV cache memory: -1.09 GiB",
        "(EngineCore pid=207) INFO 04-19 09:13:13 [gpu_model_runner.py:4837] Model loading took 21.88 GiB memory and 4 s",
    ]))
    assert boot.available_gib == -1.09 and boot.graph_estimate_gib == -0.90
