"""The model registry and the config.json reader."""

from __future__ import annotations

import json

import pytest

from doctor.errors import DoctorError
from doctor.models import ModelConfigError, count_parameters, get_model, known_models, read_config_dir
from doctor.models.registry import build_registry
from doctor.models.spec import FULL, LINEAR

H, V, L = 2048, 248320, 40


def test_registry_holds_the_official_checkpoints_and_nvidias_nvfp4_export():
    assert known_models() == ["Qwen/Qwen3.5-35B-A3B", "Qwen/Qwen3.5-35B-A3B-FP8", "Qwen/Qwen3.5-35B-A3B-GPTQ-Int4",
                              "Qwen/Qwen3.6-35B-A3B", "Qwen/Qwen3.6-35B-A3B-FP8", "nvidia/Qwen3.6-35B-A3B-NVFP4"]
    assert get_model("fp8").name == "Qwen/Qwen3.5-35B-A3B-FP8"
    assert get_model("QWEN/QWEN3.5-35B-A3B-GPTQ-INT4").quantization.bits == 4


def test_qwen35_layout_is_ten_full_attention_layers_among_forty():
    spec = get_model("Qwen/Qwen3.5-35B-A3B")
    assert spec.num_layers == 40
    assert spec.full_attention_layers == tuple(range(3, 40, 4))
    assert len(spec.linear_attention_layers) == 30
    assert (spec.attention.num_heads, spec.attention.num_kv_heads, spec.attention.head_dim) == (16, 2, 256)
    assert spec.moe.num_experts == 256 and spec.moe.experts_per_token == 8
    assert spec.is_hybrid and spec.is_multimodal and spec.mtp_layers == 1


def test_parameter_count_matches_a_hand_derivation():
    # Derivation from the config (names as in the HF checkpoint):
    embed = V * H                                            # embed_tokens; lm_head is the same size
    full_attn = (H * 16 * 256 * 2                            # q_proj with the output gate (x2)
                 + H * 2 * 2 * 256                           # k_proj + v_proj (2 KV heads)
                 + 16 * 256 * H                              # o_proj
                 + 2 * 256)                                  # q_norm, k_norm
    key_dim, value_dim = 16 * 128, 32 * 128
    gdn = (H * (2 * key_dim + 2 * value_dim)                 # in_proj_qkvz
           + H * 2 * 32                                      # in_proj_ba
           + (2 * key_dim + value_dim) * 4                   # conv1d (kernel 4)
           + 2 * 32 + 128                                    # A_log, dt_bias, gated RMSNorm
           + value_dim * H)                                  # out_proj
    moe = H * 256 + 256 * 3 * H * 512 + 3 * H * 512 + H      # router, experts, shared expert, its gate
    norms = 2 * H
    text = 2 * embed + 10 * full_attn + 30 * gdn + L * (moe + norms) + H
    mtp = H * 2 * H + 4 * H + full_attn + moe + 2 * H        # fc, 4 norms... one decoder layer
    counts = count_parameters(get_model("Qwen/Qwen3.5-35B-A3B"))
    assert counts["text"] == text
    assert abs(counts["mtp"] - mtp) / mtp < 0.001
    # reference/qwen35-facts.md: 35.95B total = 34.66B text + 0.85B MTP + 0.45B vision
    assert round(counts["text"] / 1e9, 2) == 34.66
    assert round(counts["vision"] / 1e9, 2) == 0.45
    assert round(counts["total"] / 1e9, 2) == 35.95


def write_config(tmp_path, config) -> str:
    (tmp_path / "config.json").write_text(json.dumps(config))
    return str(tmp_path)


def test_reads_nested_text_config_of_the_vision_language_checkpoint(tmp_path):
    cfg = {"architectures": ["Qwen3_5MoeForConditionalGeneration"], "model_type": "qwen3_5_moe",
           "text_config": {"hidden_size": 1024, "num_hidden_layers": 8, "full_attention_interval": 4,
                           "num_attention_heads": 8, "num_key_value_heads": 2, "head_dim": 128,
                           "linear_num_key_heads": 8, "linear_num_value_heads": 16, "linear_key_head_dim": 64,
                           "linear_value_head_dim": 64, "num_experts": 64, "num_experts_per_tok": 4,
                           "moe_intermediate_size": 256, "shared_expert_intermediate_size": 256,
                           "vocab_size": 1000, "max_position_embeddings": 4096, "dtype": "bfloat16"},
           "quantization_config": {"quant_method": "fp8", "weight_block_size": [128, 128],
                                   "modules_to_not_convert": ["lm_head", "model.layers.0.mlp.gate",
                                                              "model.layers.0.linear_attn.in_proj_ba"]}}
    spec = read_config_dir(write_config(tmp_path, cfg))
    assert spec.layer_types == (LINEAR, LINEAR, LINEAR, FULL) * 2
    assert spec.linear_attention.conv_dim == 2 * 8 * 64 + 16 * 64
    assert spec.quantization.method == "fp8" and spec.quantization.weight_block_size == (128, 128)
    # naming single tensors does not exclude their module class
    assert set(spec.quantization.modules) >= {"experts", "linear_attention", "attention"}


def test_a_whole_module_in_modules_to_not_convert_stays_unquantized(tmp_path):
    cfg = json.loads(json.dumps(get_model_config_qwen3_moe()))
    cfg["quantization_config"] = {"quant_method": "fp8", "weight_block_size": [128, 128],
                                  "modules_to_not_convert": ["model.layers.0.self_attn"]}
    spec = read_config_dir(write_config(tmp_path, cfg))
    assert "attention" not in spec.quantization.modules and "experts" in spec.quantization.modules


def get_model_config_qwen3_moe() -> dict:
    # what transformers 5 writes for Qwen3-MoE: the expert count is num_local_experts
    return {"architectures": ["Qwen3MoeForCausalLM"], "model_type": "qwen3_moe", "hidden_size": 64,
            "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 32,
            "num_local_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 32,
            "intermediate_size": 128, "vocab_size": 385, "max_position_embeddings": 256,
            "tie_word_embeddings": True, "dtype": "bfloat16"}


def test_reads_plain_qwen3_moe_and_dense_qwen3(tmp_path):
    moe = read_config_dir(write_config(tmp_path, get_model_config_qwen3_moe()))
    assert moe.moe.num_experts == 4 and not moe.is_hybrid and moe.full_attention_layers == (0, 1)
    dense = get_model_config_qwen3_moe()
    del dense["num_local_experts"], dense["moe_intermediate_size"], dense["num_experts_per_tok"]
    (tmp_path / "d").mkdir()
    spec = read_config_dir(write_config(tmp_path / "d", dense))
    assert spec.moe is None and spec.dense_intermediate_size == 128


@pytest.mark.parametrize("content, fragment", [
    (b"{not json", "not valid JSON"),
    (b"\x00\x01\xff\xfe binary", "not valid JSON"),
    (b"[1, 2]", "JSON object"),
    (b'{"hidden_size": "big", "num_attention_heads": 4}', "hidden_size"),
    (b'{"hidden_size": 64}', "num_attention_heads"),
])
def test_bad_config_json_is_one_clear_error(tmp_path, content, fragment):
    (tmp_path / "config.json").write_bytes(content)
    with pytest.raises(ModelConfigError, match=fragment) as info:
        read_config_dir(tmp_path)
    assert isinstance(info.value, DoctorError)
    assert "\n" not in str(info.value)


def test_unknown_model_name_is_a_doctor_error():
    with pytest.raises(DoctorError, match="unknown model 'Qwen/Qwen9'"):
        get_model("Qwen/Qwen9")


@pytest.mark.parametrize("text, fragment", [
    ("schema: 2\nmodels: {}", "schema: 1"),
    ("schema: 1\nmodels:\n  a: {config: {}}", "a"),
    ("schema: 1\nmodels:\n  a: {base: b, source: x}", "base 'b'"),
    ("schema: 1\nmodels:\n  a: {source: x, config: {}, colour: red}", "unknown keys"),
    ("schema: [", "not valid YAML"),
])
def test_registry_data_is_validated_at_load(text, fragment):
    with pytest.raises(ModelConfigError, match=fragment):
        build_registry(text)
