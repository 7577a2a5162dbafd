"""Planner arithmetic, pinned against numbers derived by hand from the config and the backends' code."""

from __future__ import annotations

import pytest

from doctor.errors import DoctorError
from doctor.models import get_model
from doctor.planner import ServeConfig, check_divisibility, parse_gpus, plan, valid_tensor_parallel_sizes
from doctor.planner.hardware import GIB, MIB
from doctor.planner.sglang_kv import default_mem_fraction_static, prefill_capture_sizes
from doctor.planner.state import gdn_state_bytes_per_layer, kv_bytes_per_token_per_layer
from doctor.planner.vllm_kv import vllm_capacity, vllm_layout
from doctor.planner.weights import pp_partition, rank_weights

BF16 = get_model("Qwen/Qwen3.5-35B-A3B")
FP8 = get_model("Qwen/Qwen3.5-35B-A3B-FP8")
INT4 = get_model("Qwen/Qwen3.5-35B-A3B-GPTQ-Int4")


def test_kv_cache_per_token_counts_only_the_ten_full_attention_layers():
    # K and V x 2 KV heads x head_dim 256 x 2 bytes (bf16) x 10 layers = 20 KiB (facts: "20 KiB/token")
    per_layer = kv_bytes_per_token_per_layer(BF16, ServeConfig())
    assert per_layer == 2 * 2 * 256 * 2
    assert per_layer * len(BF16.full_attention_layers) == 20 * 1024
    # fp8 KV: one byte per element
    assert kv_bytes_per_token_per_layer(BF16, ServeConfig(kv_cache_dtype="fp8")) == 2 * 2 * 256


@pytest.mark.parametrize("tp, kv_heads_per_rank", [(1, 2), (2, 1), (4, 1), (8, 1)])
def test_kv_heads_are_replicated_when_tp_exceeds_two(tp, kv_heads_per_rank):
    assert kv_bytes_per_token_per_layer(BF16, ServeConfig(tp=tp)) == 2 * kv_heads_per_rank * 256 * 2


def test_gdn_state_per_sequence_is_61_mib_and_independent_of_length():
    # recurrent: 32 value heads x 128 x 128 x 4 B (float32); conv: (2*16*128 + 32*128) x (4-1) x 2 B
    per_layer = 32 * 128 * 128 * 4 + (2 * 2048 + 4096) * 3 * 2
    assert per_layer == 2_146_304
    assert gdn_state_bytes_per_layer(BF16, ServeConfig()) == per_layer
    assert round(30 * per_layer / MIB, 1) == 61.4
    assert gdn_state_bytes_per_layer(BF16, ServeConfig(tp=4)) == per_layer // 4


def test_vllm_raises_the_block_size_so_an_attention_page_holds_a_mamba_state():
    # interface.py _align_hybrid_block_size: 16 * cdiv(mamba_page, 16 * attn_page_1_token)
    assert vllm_layout(BF16, ServeConfig(), 10, 30).block_size == 16 * -(-2_146_304 // (16 * 2048))  # 1056
    assert vllm_layout(BF16, ServeConfig(kv_cache_dtype="fp8"), 10, 30).block_size == 2096
    # TP=4: KV heads replicated (1 per rank, 1024 B/token/layer), GDN state split by 4
    assert vllm_layout(BF16, ServeConfig(tp=4), 10, 30).block_size == 16 * -(-536_576 // (16 * 1024))  # 528


def test_vllm_groups_ten_attention_and_thirty_gdn_layers_into_four_groups_of_ten():
    layout = vllm_layout(BF16, ServeConfig(), 10, 30)
    assert (layout.group_size, layout.attention_groups, layout.mamba_groups) == (10, 1, 3)
    assert layout.bytes_per_block == 1056 * 2048 * 10


def test_vllm_tokens_and_concurrency_from_a_known_kv_budget():
    # 40 GiB for the cache, BF16, max_model_len 32768, prefix caching on ("align": 2 blocks per mamba group)
    cfg = ServeConfig(max_model_len=32768)
    layout = vllm_layout(BF16, cfg, 10, 30)
    cap = vllm_capacity(layout, 40 * GIB, 32768, cfg)
    blocks = 40 * GIB // (1056 * 2048 * 10)                # 1985
    per_request = -(-32768 // 1056) + 3 * 2                # 32 attention blocks + 6 mamba blocks
    assert cap.num_blocks == blocks == 1985
    assert cap.tokens == int(blocks / per_request * 32768)
    assert cap.max_concurrency == pytest.approx(blocks / per_request)


def test_weights_per_rank_bf16_and_quantized():
    w1 = rank_weights(BF16, ServeConfig())
    # 34.66B text params x 2 B + 0.45B vision x 2 B (MTP not loaded without speculative decoding)
    assert round(w1["total"] / GIB, 1) == 65.4
    w2 = rank_weights(BF16, ServeConfig(tp=2))
    assert w2["experts"] == w1["experts"] // 2
    # FP8: experts stored at 1 byte + one fp32 scale per 128x128 block
    experts = 40 * 256 * 3 * 2048 * 512
    assert rank_weights(FP8, ServeConfig())["experts"] == int(experts * (1 + 4 / (128 * 128)))
    # GPTQ int4, group 128: 0.5 B + fp16 scale/128 + packed zero/128 per weight
    assert rank_weights(INT4, ServeConfig())["experts"] == int(experts * (0.5 + 2 / 128 + 0.5 / 128))
    assert rank_weights(BF16, ServeConfig(language_model_only=True)).get("vision", 0) == 0
    assert rank_weights(BF16, ServeConfig(mtp_tokens=1))["mtp"] > 0


def test_expert_parallel_splits_experts_over_tp_times_dp():
    w = rank_weights(BF16, ServeConfig(tp=2, dp=4, expert_parallel=True))
    assert w["experts"] == 40 * 256 * 3 * 2048 * 512 * 2 // 8


def test_pipeline_stages_split_layers_like_vllm():
    assert pp_partition(40, 3) == [(0, 13), (13, 27), (27, 40)]
    assert pp_partition(40, 4) == [(0, 10), (10, 20), (20, 30), (30, 40)]
    first, last = rank_weights(BF16, ServeConfig(pp=2), 0), rank_weights(BF16, ServeConfig(pp=2), 1)
    assert first["embeddings"] == last["embeddings"]       # embed_tokens on the first, lm_head on the last


VLM = 0.95 * (1 - 0.1 * (1152 ** 2 / 1024 ** 2 - 1))   # adjust_mem_fraction_for_vlm for Qwen3.5's ViT


def sglang_fraction(version: str, mib: int, **flags) -> float:
    return default_mem_fraction_static(mib * MIB, ServeConfig(backend="sglang", backend_version=version, **flags), BF16)


def test_sglang_default_mem_fraction_static_of_0_5_9_and_0_5_14():
    # H100 (81559 MiB): reserved = max(512 + 8192*1.5 + 256*2 + 1/8*1024, 10240) = 13440 MiB
    for version in ("0.5.9", "0.5.14"):
        assert sglang_fraction(version, 81559) == pytest.approx(round((81559 - 13440) / 81559, 3) * VLM)
    # 0.5.9: MTP (EAGLE) adds 2 GiB after the floor; 0.5.14 dropped that term
    assert sglang_fraction("0.5.9", 81559, mtp_tokens=3) == pytest.approx(round((81559 - 15488) / 81559, 3) * VLM)
    assert sglang_fraction("0.5.14", 81559, mtp_tokens=3) == sglang_fraction("0.5.14", 81559)


def test_sglang_0_5_18_reserves_8_mb_per_prefill_graph_of_qwen3_5():
    # 58 prefill capture sizes up to chunked_prefill_size 8192: 4..32/4, 48..256/16, 288..512/32, 576..1024/64,
    # 1280..4096/256, 4608..8192/512
    assert len(prefill_capture_sizes(8192)) == 8 + 14 + 8 + 8 + 12 + 8
    assert sglang_fraction("0.5.18", 81559) == pytest.approx(round((81559 - 13440 - 58 * 8) / 81559, 3) * VLM)
    assert sglang_fraction("0.5.18", 81559, enforce_eager=True, language_model_only=True) == \
        round((81559 - 12928) / 81559, 3)


def test_sglang_0_5_20_gives_24_to_35_gib_gpus_a_larger_chunk_and_graph_batch():
    # RTX 4090 (24564 MiB), TP 1: 0.5.19 chunk 2048 / bs 24; 0.5.20 chunk 4096 / bs 48
    old = 512 + 2048 * 1.5 + 24 * 2 + 1024 / 8 + len(prefill_capture_sizes(2048)) * 8
    new = 512 + 4096 * 1.5 + 48 * 2 + 1024 / 8 + len(prefill_capture_sizes(4096)) * 8
    assert sglang_fraction("0.5.19", 24564, language_model_only=True) == round((24564 - old) / 24564, 3)
    assert sglang_fraction("0.5.20", 24564, language_model_only=True) == round((24564 - new) / 24564, 3)


def test_valid_tensor_parallel_sizes():
    assert valid_tensor_parallel_sizes(BF16) == [1, 2, 4, 8, 16]
    assert valid_tensor_parallel_sizes(FP8) == [1, 2, 4]


def test_divisibility_failures_carry_the_backends_own_text():
    msgs = {r.rule: r.message for r in check_divisibility(BF16, ServeConfig(tp=3)) if not r.ok}
    assert msgs["attention-heads-tp"] == "Total number of attention heads (16) must be divisible by tensor parallel size (3)."
    assert msgs["kv-heads-tp"] == "3 is not divisible by 2"
    assert msgs["gdn-key-heads-tp"] == "16 is not divisible by 3"
    fp8 = {r.rule: r.message for r in check_divisibility(FP8, ServeConfig(tp=8)) if not r.ok}
    assert fp8["fp8-block-moe-tp"] == ("The output_size of gate's and up's weight = 64 is not divisible by "
                                       "weight quantization block_n = 128.")
    with_ep = {r.rule for r in check_divisibility(FP8, ServeConfig(tp=8, expert_parallel=True)) if not r.ok}
    assert "fp8-block-moe-tp" not in with_ep and "fp8-block-shared-expert-tp" in with_ep


def test_plan_bf16_on_one_h100_does_not_fit_full_context_and_says_what_would():
    p = plan(BF16, parse_gpus("1xH100"), ServeConfig(backend_version="0.26.0"))
    assert not p.fits
    assert any("max seq len (262144)" in problem for problem in p.problems)
    assert "use the FP8 checkpoint Qwen/Qwen3.5-35B-A3B-FP8" in p.suggestions
    assert any(s.startswith("lower --max-model-len to ") for s in p.suggestions)


def test_plan_fp8_tp8_fails_on_the_block_size_and_suggests_tp4_dp2():
    p = plan(FP8, parse_gpus("8xA100-80G"), ServeConfig(tp=8))
    assert not p.fits
    # expert parallelism alone is not enough: the shared expert (512 / 8 = 64) is still TP-split
    assert p.suggestions == ["use --tensor-parallel-size 4 with --data-parallel-size 2"]


def test_plan_recipe_configurations_fit():
    # vllm recipes: BF16 with TP=2 on H100s, FP8 on one GPU, 262144 context
    assert plan(BF16, parse_gpus("2xH100"), ServeConfig(tp=2)).fits
    assert plan(FP8, parse_gpus("1xH200"), ServeConfig()).fits


def test_plan_needs_enough_gpus():
    p = plan(BF16, parse_gpus("2xH100"), ServeConfig(tp=4))
    assert "TP x PP x DP = 4 GPUs needed, 2 available" in p.problems


@pytest.mark.parametrize("text", ["", "0xH100", "8xWhatever", "ax"])
def test_bad_gpu_notation_is_a_doctor_error(text):
    with pytest.raises(DoctorError):
        parse_gpus(text)


def test_gpu_notation():
    hw = parse_gpus("8xA100-80G")
    assert hw.count == 8 and hw.gpu.memory_bytes == 81920 * MIB and not hw.gpu.native_fp8
    assert parse_gpus("2 x h200").gpu.name == "H200"
    assert parse_gpus("MYGPU:96:9.0").gpu.memory_bytes == 96 * GIB


def test_an_rtx_3090_budget_is_torch_s_23_56_gib_not_nvml_s_24_gib():
    # vLLM multiplies torch's total by --gpu-memory-utilization; on an RTX 3090 it logs
    # "Free memory on device (22.93/23.56 GiB)" (wtdcode/vllm-backport#34), not NVML's 24,576 MiB.
    gpu = parse_gpus("2xRTX3090").gpu
    assert round(gpu.usable_bytes / GIB, 2) == 23.56
    assert gpu.usable_bytes < gpu.memory_bytes


def test_vllm_overhead_terms_reproduce_the_h200_boot_of_vllm_0_26():
    from doctor.planner.overhead import vllm_overhead, vllm_overhead_terms

    h200 = parse_gpus("1xH200").gpu
    cfg = ServeConfig(language_model_only=True, backend_version="0.26.0")
    terms = vllm_overhead_terms(BF16, cfg, h200)
    # logged: peak activation 4.01 GiB, non-torch 0.24 GiB, CUDA-graph estimate 0.64 GiB over 51 + 51 graphs
    assert (terms.max_num_batched_tokens, terms.max_num_seqs, terms.graphs) == (8192, 1024, 102)
    # sampler-bound: the MoE workspace and held hidden states + bytes per logit fitted on the sampler-bound boots
    assert abs(terms.peak_activation / GIB - 4.01) < 0.03
    assert abs(terms.non_torch / GIB - 0.24) < 0.01
    assert abs(terms.cudagraph_estimate / GIB - 0.64) < 0.01
    assert abs(vllm_overhead_terms(FP8, cfg, h200).cudagraph_estimate / GIB - 0.74) < 0.01
    eager = vllm_overhead_terms(BF16, cfg.with_(enforce_eager=True), h200)
    assert eager.cudagraph_estimate == 0 and eager.peak_activation == terms.peak_activation
    # before 0.20.0 the estimate was measured but not subtracted (0.19.2rc1 logs "In v0.19, ... will be enabled")
    assert vllm_overhead_terms(BF16, cfg.with_(backend_version="0.19.2"), h200).cudagraph_estimate == 0
    assert vllm_overhead_terms(BF16, cfg.with_(backend_version="0.20.0"), h200).cudagraph_estimate > 0
    assert vllm_overhead(BF16, ServeConfig(overhead_gib=3), h200) == 3 * GIB


def test_the_sampler_peak_scales_with_max_num_seqs_and_the_forward_with_batched_tokens():
    from doctor.planner.overhead import activation_bytes, vllm_overhead_terms

    h200 = parse_gpus("1xH200").gpu
    few = vllm_overhead_terms(BF16, ServeConfig(max_num_seqs=1, backend_version="0.26.0"), h200)
    assert few.peak_activation >= activation_bytes(BF16, ServeConfig(), 8192)
    assert few.graphs == 2 + 1      # capture sizes 1 and 2 (2 x max_num_seqs) PIECEWISE, FULL only for 1 request


def test_the_encoder_is_profiled_on_full_size_images_within_the_encoder_budget():
    from doctor.planner.overhead import encoder_profile_tokens, image_item_tokens

    # compute_mm_encoder_budget / MultiModalBudget (vLLM 0.20.1-0.32.0): budget = max(max_num_batched_tokens,
    # largest item), items = max(1, min(budget // item, max_num_seqs x items per prompt)). A 16,777,216-pixel
    # image is 16384 merged tokens: the H200 vision boot logs "budget of 16384 tokens, and profiled with 1 image
    # items" at 8192 batched tokens.
    cfg = ServeConfig(max_model_len=262144)
    assert image_item_tokens(BF16) == 16384
    assert encoder_profile_tokens(BF16, cfg, 8192, 1024) == 16384
    assert encoder_profile_tokens(BF16, cfg, 2048, 256) == 16384
    assert encoder_profile_tokens(BF16, cfg, 40000, 1024) == 2 * 16384
    assert encoder_profile_tokens(BF16, cfg.with_(max_model_len=16384), 40000, 1) == 16384   # one image per batch
    assert encoder_profile_tokens(BF16, cfg.with_(language_model_only=True), 8192, 1024) == 0


def test_the_profile_peak_is_the_larger_of_the_encoder_and_the_forward_holding_its_outputs():
    from doctor.planner.coefficients import Coefficients
    from doctor.planner.overhead import OverheadInputs, peak_activation

    coef = Coefficients(sampler_bytes_per_logit=2.0)
    lm_bound = OverheadInputs(forward_bytes=100, logits=10, graphs=0, max_num_batched_tokens=8192, max_num_seqs=1,
                              encoder_bytes=60, encoder_outputs=5)
    assert peak_activation(lm_bound, coef) == 5 + 100
    encoder_bound = OverheadInputs(forward_bytes=40, logits=30, graphs=0, max_num_batched_tokens=8192,
                                   max_num_seqs=1, encoder_bytes=90, encoder_outputs=5)
    assert peak_activation(encoder_bound, coef) == 90


def test_the_graph_estimate_is_the_first_capture_plus_increments_per_mode():
    from doctor.planner.coefficients import Coefficients
    from doctor.planner.overhead import OverheadInputs, cudagraph_estimate, graph_modes

    assert graph_modes(1, 8192) == 2 and graph_modes(1024, 8192) == 2
    coef = Coefficients(graph_bytes_per_graph={"none-tp1": 3.0}, graph_first_capture_bytes=100)

    def inputs(graphs: int, modes: int) -> OverheadInputs:
        return OverheadInputs(0, 0, graphs, 8192, 1, graph_modes=modes)

    assert cudagraph_estimate(inputs(2, 2), coef, False, 1) == 100               # PIECEWISE=1, FULL=1
    assert cudagraph_estimate(inputs(102, 2), coef, False, 1) == 100 + 100 * 3   # PIECEWISE=51, FULL=51
    assert cudagraph_estimate(inputs(0, 0), coef, False, 1) == 0                 # eager


def test_full_graphs_are_captured_only_for_batches_of_at_most_max_num_seqs_decodes():
    from doctor.planner.overhead import capture_sizes, graph_count

    # GB10 boots of vLLM 0.18.1 with 256 sequences log "PIECEWISE=51 (largest=512), FULL=35 (largest=256)";
    # the H200 boots with 1024 sequences capture 51 + 51 (test above).
    assert len(capture_sizes(256, 2048)) == 51 and graph_count(256, 2048) == 51 + 35
    assert graph_count(1024, 8192) == 51 + 51
    assert graph_count(4, 8192) == 4 + 3                    # sizes 1, 2, 4, 8; FULL for 1, 2 and 4 requests
    # speculative decoding: a uniform decode batch holds 1 + k tokens per request, q <= size <= q x max_num_seqs;
    # with FULL decode graphs every size is rounded up to a multiple of q (adjust_cudagraph_sizes_for_spec_decode)
    assert capture_sizes(5, 8192, 2) == [3, 6, 9, 18, 24] and graph_count(5, 8192, 2) == 5 + 3
    # without them (PIECEWISE only) the sizes stay and no FULL graph is captured
    assert capture_sizes(5, 8192, 2, full_decode=False) == [1, 2, 4, 8, 16, 24]
    assert graph_count(5, 8192, 2, full_decode=False) == 6


def test_full_decode_graphs_survive_speculative_decoding_only_on_a_uniform_batch_attention_backend():
    from doctor.planner.overhead import spec_full_decode

    gb10, h200 = parse_gpus("1xGB10").gpu, parse_gpus("1xH200").gpu
    assert spec_full_decode(ServeConfig(mtp_tokens=2, kv_cache_dtype="fp8"), h200)          # FA3 on Hopper
    assert spec_full_decode(ServeConfig(mtp_tokens=2), gb10)                                 # FlashAttention, BF16 KV
    assert not spec_full_decode(ServeConfig(mtp_tokens=2, kv_cache_dtype="fp8"), gb10)      # FlashInfer, no TRT-LLM
    assert spec_full_decode(ServeConfig(kv_cache_dtype="fp8"), gb10)                         # no speculation


def test_an_sglang_plan_says_whether_its_version_s_formula_was_read():
    from doctor.planner.plan import plan
    from doctor.planner.render import band_text

    hw = parse_gpus("1xH200")
    read = band_text(plan(BF16, hw, ServeConfig(backend="sglang", backend_version="0.5.21")))
    unread = band_text(plan(BF16, hw, ServeConfig(backend="sglang", backend_version="0.5.5")))
    assert "error not measured" in read and "as read in its wheel" in read
    assert "SGLang 0.5.5 not read" in unread
    # newer than any covered release: planned with the newest covered one, whose formula was read, and said so
    newer = plan(BF16, hw, ServeConfig(backend="sglang", backend_version="0.5.40"))
    assert "as read in its wheel" in band_text(newer) and "SGLang 0.5.40 is newer" in newer.notes[0]


def test_an_sglang_band_is_measured_only_where_a_logged_boot_chose_its_fraction_and_drafter_the_same_way():
    from doctor.planner.accuracy import sglang_band
    from doctor.planner.plan import plan
    from doctor.planner.render import band_text

    hw = parse_gpus("1xH200")
    chosen = band_text(plan(BF16, hw, ServeConfig(backend="sglang", backend_version="0.5.16",
                                                  mem_fraction_static=0.8)))
    default = band_text(plan(BF16, hw, ServeConfig(backend="sglang", backend_version="0.5.16")))
    mtp = band_text(plan(BF16, hw, ServeConfig(backend="sglang", backend_version="0.5.16", mtp_tokens=3)))
    # the H200 boots include one with the fraction left to SGLang's default and two with NEXTN on the MTP head
    assert chosen.startswith("± ") and default.startswith("± ") and mtp.startswith("± ")
    rel, why = sglang_band(hw.gpu.usable_bytes, 1, "0.5.16", "none", default_fraction=True, speculative="dflash")
    assert rel is None and "speculative decoding by dflash" in why
    rel, why = sglang_band(hw.gpu.usable_bytes, 1, "0.5.16", "none", speculative="none")
    assert rel is not None


def test_limit_mm_per_prompt_caps_the_profiled_images_and_all_zero_is_language_model_only():
    from doctor.planner.errors import PlanInputError
    from doctor.planner.flags import config_kwargs
    from doctor.planner.overhead import encoder_profile_tokens

    # vllm/config/multimodal.py (0.20.2): an unset modality allows 999 items; --language-model-only is "setting
    # all modality limits to 0"; rich options carry the count under "count"; the legacy form is image=N,video=M
    assert config_kwargs(["--limit-mm-per-prompt", '{"image": 2, "audio": 0}']) == {"mm_image_limit": 2}
    assert config_kwargs(["--limit-mm-per-prompt", '{"image": {"count": 1, "width": 512}}']) == {"mm_image_limit": 1}
    assert config_kwargs(["--limit-mm-per-prompt=image=0,video=0"]) == {"mm_image_limit": 0,
                                                                       "language_model_only": True}
    assert "language_model_only" not in config_kwargs(["--limit-mm-per-prompt", '{"image": 0}'])  # video profiled
    assert config_kwargs(["--skip-mm-profiling"]) == {"skip_mm_profiling": True}
    for bad in ('{"image": -1}', '{"image": "many"}', "[1, 2]"):
        with pytest.raises(PlanInputError):
            config_kwargs(["--limit-mm-per-prompt", bad])
    # MultiModalBudget._get_max_items: items = max(1, min(budget // item, max_num_seqs x min(limit, len // item)))
    cfg = ServeConfig(max_model_len=262144)
    assert encoder_profile_tokens(BF16, cfg, 65536, 8) == 4 * 16384                   # the GB10 boots: 4 items
    assert encoder_profile_tokens(BF16, cfg.with_(mm_image_limit=1), 65536, 1) == 16384
    assert encoder_profile_tokens(BF16, cfg.with_(mm_image_limit=1), 65536, 2) == 2 * 16384
    # --skip-mm-profiling: profile_run skips the encoder (gpu_model_runner.py 0.20.2), the tower still loads
    assert encoder_profile_tokens(BF16, cfg.with_(skip_mm_profiling=True), 65536, 8) == 0
