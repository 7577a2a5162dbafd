"""Checkpoint formats users serve: each quantization_config maps to the bytes vLLM loads."""

from __future__ import annotations

import copy
import json
from importlib import resources

import pytest

from doctor.errors import DoctorError
from doctor.models import get_model, spec_from_config
from doctor.models.registry import _load_entries, _resolve
from doctor.planner import ServeConfig
from doctor.planner.hardware import GIB
from doctor.planner.weights import rank_weights

BASE = "Qwen/Qwen3.5-35B-A3B"


def config_with(qcfg: dict) -> dict:
    """The registry's Qwen3.5-35B-A3B config.json with this quantization_config."""
    entries = _load_entries(resources.files("doctor.models").joinpath("registry.yaml").read_text())
    config = copy.deepcopy(_resolve(BASE, entries))
    config["quantization_config"] = qcfg
    return config


def with_quant(qcfg: dict) -> object:
    return spec_from_config(config_with(qcfg), name="test")


def experts_gib(qcfg: dict) -> float:
    return rank_weights(with_quant(qcfg), ServeConfig(language_model_only=True))["experts"] / GIB


BF16_EXPERTS = rank_weights(get_model(BASE), ServeConfig(language_model_only=True))["experts"] / GIB

NVFP4 = {"quant_method": "modelopt", "quant_algo": "NVFP4", "group_size": 16,
         "exclude_modules": ["lm_head", "*linear_attn*", "*self_attn*", "*mlp.gate", "*shared_expert_gate"]}
AUTOROUND = {"quant_method": "auto-round", "bits": 4, "group_size": 128, "sym": True, "packing_format": "auto_round:auto_gptq"}


def test_nvfp4_stores_half_a_byte_and_one_fp8_scale_per_16_weights():
    assert experts_gib(NVFP4) == pytest.approx(BF16_EXPERTS * (0.5 + 1 / 16) / 2, rel=1e-6)
    spec = with_quant(NVFP4)
    assert "linear_attention" not in spec.quantization.modules and "attention" not in spec.quantization.modules


def test_autoround_awq_and_gptq_store_int4_with_fp16_scales_per_group():
    per_param = 0.5 + 2 / 128 + 0.5 / 128
    assert experts_gib(AUTOROUND) == pytest.approx(BF16_EXPERTS * per_param / 2, rel=1e-6)
    awq = {"quant_method": "awq", "bits": 4, "group_size": 64, "zero_point": True}
    assert experts_gib(awq) == pytest.approx(BF16_EXPERTS * (0.5 + 2 / 64 + 0.5 / 64) / 2, rel=1e-6)


def test_compressed_tensors_w8a8_w4a16_and_nvfp4():
    w8a8 = {"quant_method": "compressed-tensors", "format": "int-quantized",
            "config_groups": {"group_0": {"weights": {"num_bits": 8, "type": "int", "strategy": "channel",
                                                      "symmetric": True}}}}
    assert experts_gib(w8a8) == pytest.approx(BF16_EXPERTS * (1 + 2 / 2048) / 2, rel=1e-6)
    w4a16 = {"quant_method": "compressed-tensors", "format": "pack-quantized",
             "config_groups": {"group_0": {"weights": {"num_bits": 4, "type": "int", "strategy": "group",
                                                       "group_size": 32, "symmetric": True}}}}
    assert experts_gib(w4a16) == pytest.approx(BF16_EXPERTS * (0.5 + 2 / 32 + 0.5 / 32) / 2, rel=1e-6)
    fp4 = {"quant_method": "compressed-tensors", "format": "nvfp4-pack-quantized",
           "config_groups": {"group_0": {"weights": {"num_bits": 4, "type": "float", "group_size": 16}}}}
    assert with_quant(fp4).quantization.method == "nvfp4"


def test_fp8_per_tensor_scales_cost_almost_nothing_and_blocks_one_float_per_block():
    per_tensor = experts_gib({"quant_method": "fp8", "activation_scheme": "dynamic"})
    block = experts_gib({"quant_method": "fp8", "weight_block_size": [128, 128]})
    assert per_tensor == pytest.approx(BF16_EXPERTS / 2, rel=1e-4)
    assert block == pytest.approx(BF16_EXPERTS / 2 * (1 + 4 / 128 ** 2), rel=1e-6)


def test_nvfp4_and_autoround_checkpoints_are_planned_from_a_checkpoint_directory(tmp_path):
    from click.testing import CliRunner

    from doctor.cli.main import cli

    for name, q in (("nvfp4", NVFP4), ("autoround", AUTOROUND)):
        folder = tmp_path / name
        folder.mkdir()
        (folder / "config.json").write_text(json.dumps(config_with(q)))
        result = CliRunner().invoke(cli, ["plan", "--gpus", "1xRTX5090", "--model", str(folder), "--tp", "1",
                                          "--max-model-len", "32768", "--language-model-only"])
        assert result.exit_code == 0, result.output
        assert "fits:" in result.output


def test_an_unknown_quant_method_is_one_clear_error():
    with pytest.raises(DoctorError, match="unsupported quant_method 'bitsandbytes'"):
        with_quant({"quant_method": "bitsandbytes"})
