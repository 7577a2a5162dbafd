"""The dummy forward's peak as vLLM's source keeps tensors alive (doctor/planner/forward.py, overhead.forward_peak)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from doctor.models import get_model
from doctor.planner.bootlog import parse_boot_log
from doctor.planner.config import ServeConfig
from doctor.planner.forward import attention_layer, eager_tensors, gdn_layer, moe_tensors, piece_tensors, width
from doctor.planner.hardware import GIB
from doctor.planner.moe import moe_workspace
from doctor.planner.overhead import activation_bytes, encoder_bytes, forward_peak, fused_gdn_spec_decode
from doctor.planner.plan import resolve_config

BF16 = get_model("Qwen/Qwen3.5-35B-A3B")
NVFP4 = get_model("nvidia/Qwen3.6-35B-A3B-NVFP4")
H = 2048
PUBLISHED = Path(__file__).parent / "data" / "published_kv" / "vllm.yaml"


def test_a_gdn_layer_makes_its_projections_and_hands_on_qkvz_and_its_output_buffer():
    # in_proj_qkvz [T, 2 x 16 x 128 + 2 x 32 x 128], b and a [T, 32] each (ba [T, 64] while they are copied),
    # core_attn_out [T, 32 x 128]; z (a view of in_proj_qkvz's output) and core_attn_out go on to the next piece
    gdn = gdn_layer(BF16, 1)
    assert [t.width for t in gdn.made] == [12288, 64, 64, 4096]
    assert width(gdn.handed) == 12288 + 4096


def test_a_gated_attention_layer_makes_qkv_q_k_the_gate_and_its_output_before_the_kv_cache_update():
    # qkv_proj [T, 16 x 256 x 2 + 2 x 2 x 256], q [T, 4096], k [T, 512], gate [T, 4096], output [T, 4096]
    attention = attention_layer(BF16, 1)
    assert [t.width for t in attention.made] == [9216, 4096, 512, 4096, 4096]
    assert width(attention.handed) == 4096 + 4096


def test_the_largest_piece_ends_at_an_attention_layer_after_a_gdn_layer():
    # the GDN layer's hand-on + the residual handed in + the residual made + the attention layer's projections
    assert width(piece_tensors(BF16, 1)) == (12288 + 4096) + 2 * H + (9216 + 4096 + 512 + 4096 + 4096)


def test_tp_shards_the_projections_but_not_the_residual_stream():
    # at TP 4 the two KV heads are replicated, one a rank: k and v are 256 wide each
    attention = (1024 + 1024 + 2 * 256) + 1024 + 256 + 1024 + 1024
    assert width(piece_tensors(BF16, 4)) == (3072 + 1024) + 2 * H + attention
    assert width(gdn_layer(BF16, 4).made) == width(gdn_layer(BF16, 1).made) // 4


def test_nothing_of_the_gdn_core_or_the_attention_kernels_scales_with_the_tokens_beyond_the_projections():
    # profile_run's dummy forward has no attention metadata: the FLA chunk kernels and causal conv1d never run over
    # the batch, so the forward grows by the projections' widths, the MoE block and its workspaces per token only
    cfg = ServeConfig(backend_version="0.26.0")
    per_token = (activation_bytes(BF16, cfg, 32768) - activation_bytes(BF16, cfg, 16384)) / 16384
    kept = moe_workspace(BF16, cfg, 1).persistent
    assert per_token == pytest.approx(kept + width(piece_tensors(BF16, 1)) * 2, rel=1e-6)


def test_eager_mode_holds_no_piece_inputs_and_peaks_lower_than_compiled():
    compiled = activation_bytes(BF16, ServeConfig(backend_version="0.26.0"), 32768)
    eager = activation_bytes(BF16, ServeConfig(backend_version="0.26.0", enforce_eager=True), 32768)
    assert eager < compiled
    assert width(moe_tensors(BF16, 1, compiled=False)) < width(moe_tensors(BF16, 1, compiled=True))
    assert width(eager_tensors(BF16, 1)) < width(piece_tensors(BF16, 1))


def test_flashinfer_s_runner_makes_the_moe_block_the_nvfp4_peak():
    # NVFP4 on SM120 / GB10 (FlashInfer CUTLASS): the runner's k M H buffers outweigh any attention piece
    peak = forward_peak(NVFP4, ServeConfig(backend_version="0.20.2"), 65536, (12, 1))
    assert peak.moment == "the MoE block"
    names = [name for name, _, _ in peak.tensors]
    assert names[0] == "fused-MoE workspace the modular kernel keeps"
    assert "the experts' own workspaces for the call" in names and "router logits" in names
    assert peak.total == activation_bytes(NVFP4, ServeConfig(backend_version="0.20.2"), 65536, (12, 1))


def test_bf16_on_hopper_peaks_at_the_piece_ending_at_an_attention_layer():
    peak = forward_peak(BF16, ServeConfig(backend_version="0.26.0"), 32768)
    assert peak.moment == "a torch.compile piece's end"
    assert [size for _, size, _ in peak.tensors][1:] == [
        w * 32768 * 2 for w in (12288, 4096, H, H, 9216, 4096, 512, 4096, 4096)]


def test_the_held_out_h200_boot_at_32768_tokens_logs_what_the_source_sums_to():
    # h200-vllm-0.26-bf16-mtp1-128-32768 (held out, never fitted on): its sampler phase is far under the peak,
    # so the 4.63 GiB it logs is the forward's; the source's sum: the Triton workspace the modular kernel keeps
    # (2 GiB) + the GDN -> attention piece (2.59 GiB)
    entry = next(e for e in yaml.safe_load(PUBLISHED.read_text())["entries"]
                 if e["id"] == "h200-vllm-0.26-bf16-mtp1-128-32768")
    logged = parse_boot_log("\n".join(entry["log"])).activation_gib * GIB
    cfg = resolve_config(BF16, ServeConfig(backend_version="0.26.0", **entry["flags"]))
    assert entry["held_out"] and cfg.max_num_batched_tokens == 32768
    assert activation_bytes(BF16, cfg, 32768) == pytest.approx(logged, rel=0.02)


def test_the_vision_encoder_holds_its_blocks_locals_per_patch():
    # per patch: position embeddings, residual, the normed input its caller keeps, then attention's 8 D (qkv 3D,
    # the q-k copy and its rotation 2D each, the context D) -- more than the MLP's 2 x 4304
    v = BF16.vision
    tokens = 16384
    per_patch = 4 * v.hidden_size + max(8 * v.hidden_size, 2 * v.intermediate_size)
    assert encoder_bytes(BF16, ServeConfig(), tokens) == tokens * v.spatial_merge_size ** 2 * per_patch * 2
    assert encoder_bytes(BF16, ServeConfig(language_model_only=True), tokens) == 0


def test_from_0_32_speculative_decoding_s_fused_gdn_op_hands_on_only_core_attn_out():
    # vllm::qwen_gdn_attention_core_fused_norm_packed takes mixed_qkvz and ba; out_proj follows it at once
    mtp = ServeConfig(backend_version="0.32.0", mtp_tokens=1)
    assert fused_gdn_spec_decode(BF16, mtp, (9, 0))
    assert not fused_gdn_spec_decode(BF16, mtp.with_(backend_version="0.26.0"), (9, 0))
    assert not fused_gdn_spec_decode(BF16, ServeConfig(backend_version="0.32.0"), (9, 0))
    assert not fused_gdn_spec_decode(BF16, mtp.with_(mamba_ssm_cache_dtype="float16"), (9, 0))
    assert width(piece_tensors(BF16, 1, fused_gdn=True)) == 4096 + 2 * H + (9216 + 4096 + 512 + 4096 + 4096)
    assert activation_bytes(BF16, mtp, 32768) < activation_bytes(BF16, mtp.with_(backend_version="0.26.0"), 32768)


def test_a_dense_mlp_holds_gate_up_and_the_activation_at_once():
    from dataclasses import replace

    dense = replace(BF16, moe=None, dense_intermediate_size=17408)
    names = {t.name: t.width for t in moe_tensors(dense, 2, compiled=False)}
    assert names["gate_up_proj output (or down_proj's after it)"] == 17408 and names["SiluAndMul output"] == 8704
    assert "router logits" not in names
