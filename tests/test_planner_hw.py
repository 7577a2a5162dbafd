"""The accounting of vLLM on consumer Blackwell and unified-memory machines (doctor/planner/overhead.py)."""

from __future__ import annotations

from doctor.models import get_model
from doctor.planner import ServeConfig
from doctor.planner.bootlog import parse_boot_log
from doctor.planner.moe import moe_workspace

NVFP4 = get_model("nvidia/Qwen3.6-35B-A3B-NVFP4")


def test_vllm_cutlass_fp4_experts_hold_their_workspaces_and_three_shuffled_copies():
    # CutlassExpertsFp4.workspace_shapes: (M topk, max(2I, H)) + (M topk, I) + (M, H); run_cutlass_moe_fp4 keeps the
    # shuffled input, the shuffled output and its weighted product, M topk H each (bf16 activations)
    cfg = ServeConfig(backend_version="0.20.0", moe_backend="cutlass")
    m, topk, h, i = 8192, NVFP4.moe.experts_per_token, NVFP4.hidden_size, NVFP4.moe.intermediate_size
    ws = moe_workspace(NVFP4, cfg, m, (12, 0))
    assert ws.persistent == (m * topk * (max(2 * i, h) + i) + m * h) * 2
    assert ws.peak == ws.persistent + 3 * m * topk * h * 2


def test_flashinfer_cutlass_holds_the_tensorrt_llm_runner_workspace_for_the_call_beside_one_modular_buffer():
    # the oracle's choice on SM120 is FlashInfer CUTLASS: the same figure as asking for it by name
    auto = moe_workspace(NVFP4, ServeConfig(backend_version="0.20.0"), 8192, (12, 0))
    flashinfer = moe_workspace(NVFP4, ServeConfig(backend_version="0.20.0", moe_backend="flashinfer_cutlass"), 8192,
                               (12, 0))
    assert auto == flashinfer
    m, topk, h, i, e = 8192, NVFP4.moe.experts_per_token, NVFP4.hidden_size, NVFP4.moe.intermediate_size, 256
    # vLLM's side: workspace13 and the output share one (M, H) bf16 buffer the WorkspaceManager keeps
    assert auto.persistent == m * h * 2
    # CutlassMoeFCRunner for the call: GEMM inputs (fc2_result, bf16, the largest) + GEMM outputs (glu_inter 2I or
    # fc2_result H, bf16) + blocked_row_to_unpermuted_row (E x M int32) + two k M int32 row maps + the NVFP4 input
    rows = m * topk
    runner = rows * h * 2 + max(rows * 2 * i, rows * h) * 2 + e * m * 4 + 2 * rows * 4 + int(m * h * (0.5 + 1 / 16))
    assert auto.peak - auto.persistent == runner


def test_vllm_s_own_cutlass_fp4_holds_more_than_flashinfer_s_runner():
    # run_cutlass_moe_fp4 keeps three M topk H bf16 copies beside its workspaces; FlashInfer overlaps its buffers
    flashinfer = moe_workspace(NVFP4, ServeConfig(backend_version="0.20.0"), 8192, (12, 0))
    cutlass = moe_workspace(NVFP4, ServeConfig(backend_version="0.20.0", moe_backend="cutlass"), 8192, (12, 0))
    assert cutlass.peak > flashinfer.peak + 2 * 8192 * NVFP4.moe.experts_per_token * NVFP4.hidden_size * 2


def test_a_boot_whose_cache_did_not_fit_logs_negative_figures_and_they_are_read():
    boot = parse_boot_log("\n".join([
        "(EngineCore pid=207) INFO 04-19 09:15:22 [gpu_model_runner.py:5995] Estimated CUDA graph memory: -0.90 GiB total",
        "(EngineCore pid=207) INFO 04-19 09:15:23 [gpu_worker.py:436] Available KV cache memory: -1.09 GiB",
        "(EngineCore pid=207) INFO 04-19 09:13:13 [gpu_model_runner.py:4837] Model loading took 21.88 GiB memory and 4 s",
    ]))
    assert boot.available_gib == -1.09 and boot.graph_estimate_gib == -0.90


def test_dp_with_expert_parallel_runs_the_experts_over_every_dp_rank_s_tokens():
    # allgather_reducescatter (the default all2all backend): M = DP x tokens before the experts
    from doctor.planner.overhead import activation_bytes, dispatched_tokens, gathered_bytes

    spec = get_model("Qwen/Qwen3.5-35B-A3B")
    dp_ep = ServeConfig(dp=8, expert_parallel=True, backend_version="0.26.0")
    assert dispatched_tokens(dp_ep, 8192) == 65536
    assert dispatched_tokens(ServeConfig(dp=8, backend_version="0.26.0"), 8192) == 8192
    assert dispatched_tokens(dp_ep.with_(all2all_backend="deepep_low_latency"), 8192) == 8192
    assert gathered_bytes(spec, dp_ep, 8192) == 65536 * spec.hidden_size * 2 + 65536 * spec.moe.experts_per_token * 8
    assert activation_bytes(spec, dp_ep, 8192, (9, 0)) > activation_bytes(spec, dp_ep.with_(dp=1), 8192, (9, 0))


def test_deepep_high_throughput_buffers_count_as_non_torch_memory():
    from doctor.planner import parse_gpus
    from doctor.planner.overhead import vllm_overhead_terms

    spec, gpu = get_model("Qwen/Qwen3.5-35B-A3B-FP8"), parse_gpus("H200").gpu
    base = ServeConfig(dp=8, expert_parallel=True, backend_version="0.26.0", language_model_only=True)
    deepep = vllm_overhead_terms(spec, base.with_(all2all_backend="deepep_high_throughput"), gpu)
    default = vllm_overhead_terms(spec, base, gpu)
    assert deepep.non_torch - default.non_torch == 1024 << 20


def _h200_plan(**flags):
    from doctor.planner import parse_gpus, plan

    return plan(get_model("Qwen/Qwen3.5-35B-A3B"), parse_gpus("1xH200"),
                ServeConfig(language_model_only=True, **flags))


def test_vllm_0_34_sizes_the_cache_from_the_device_less_a_margin_over_the_peak():
    from doctor.planner.extensible import MARGIN_FLOOR_BYTES, STARTUP_USED_BYTES

    p = _h200_plan(backend_version="0.34.0")
    rank, gpu = p.ranks[0], p.hardware.gpu
    terms = rank.terms
    margin = max(MARGIN_FLOOR_BYTES, int(terms.peak_activation * 0.75))
    assert p.config.utilization == 1.0
    assert rank.cache_bytes == (gpu.usable_bytes - STARTUP_USED_BYTES - margin - rank.weights["total"]
                                - terms.non_torch - terms.cudagraph_estimate - terms.peak_activation)
    assert any("'Memory after warmup:" in note for note in p.notes)


def test_an_old_utilization_under_vllm_0_34_caps_the_cache_and_the_plan_says_how_much_it_keeps_out():
    capped = _h200_plan(backend_version="0.34.0", gpu_memory_utilization=0.9)
    free = _h200_plan(backend_version="0.34.0")
    assert capped.kv_tokens < free.kv_tokens
    (note,) = [n for n in capped.notes if "extensible" in n]
    assert "--gpu-memory-utilization 0.9 now caps it at" in note and "out of the cache" in note


def test_without_the_extensible_cache_0_34_plans_as_before_with_its_0_92_default():
    off = _h200_plan(backend_version="0.34.0", extensible_kv_cache=False)
    assert off.config.utilization == 0.92 and not any("extensible" in n for n in off.notes)
    assert _h200_plan(backend_version="0.33.0").notes == []


def test_int4_and_ampere_fp8_experts_run_on_marlin_with_its_workspaces():
    from doctor.planner.moe import marlin_experts

    int4, fp8 = get_model("Qwen/Qwen3.5-35B-A3B-GPTQ-Int4"), get_model("Qwen/Qwen3.5-35B-A3B-FP8")
    cfg = ServeConfig(tp=2, backend_version="0.26.0")
    assert marlin_experts(int4, cfg, (8, 6)) and marlin_experts(fp8, cfg, (8, 6))
    assert not marlin_experts(fp8, cfg, (9, 0)) and marlin_experts(NVFP4, cfg.with_(moe_backend="marlin"), (12, 1))
    m, topk, h, i = 8192, int4.moe.experts_per_token, int4.hidden_size, int4.moe.intermediate_size / 2
    ws = moe_workspace(int4, cfg, m, (8, 6))
    # MarlinExperts.workspace_shapes: (M topk, max(N, K)) + (M topk max(2N, K)) + (M, K), kept from 0.14
    assert ws.peak == ws.persistent == int((m * topk * (max(i, h) + max(2 * i, h)) + m * h) * 2)


def test_a_0_34_boot_is_read_at_the_size_its_extensible_cache_committed():
    # extensible_kv_cache.py measure_kv_cache_blocks (0.34.0) logs the committed size after warmup; the earlier
    # "Available KV cache memory" is the profiling estimate the cache no longer takes
    boot = parse_boot_log("\n".join([
        "(EngineCore pid=1) INFO [gpu_worker.py:796] Available KV cache memory: 59.11 GiB",
        "(EngineCore pid=1) INFO [extensible_kv_cache.py:693] Memory after warmup: 70.12 GiB free, 0.5 GiB committed "
        "to the KV cache, 4.01 GiB kept for transient activations (4.01 GiB allocated at peak, 0.0 GiB of torch "
        "reservation growth); 12345 KV cache blocks (66.43 GiB) fit within the requested 139.8 GiB. Torch may "
        "reserve up to 80.0 GiB.",
    ]))
    assert boot.available_gib == 66.43
