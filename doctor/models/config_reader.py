"""Read a Hugging Face `config.json` (Qwen3.5 / Qwen3-Next / Qwen3-MoE / Qwen3) into a ModelSpec.

Field names follow transformers' configuration_qwen3_5_moe.py, configuration_qwen3_next.py,
configuration_qwen3_moe.py and configuration_qwen3.py. Vision-language checkpoints
(`Qwen3_5MoeForConditionalGeneration`) nest the language model under `text_config`
(vllm PR #37068); plain text checkpoints keep it at the top level.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import Any

from doctor.models.errors import ModelConfigError
from doctor.models.spec import (FULL, LINEAR, Attention, GatedDeltaNet, ModelSpec, MoE, Quantization,
                                Vision)

# Module classes a quantization method compresses unless the config excludes them.
QUANTIZABLE = ("attention", "linear_attention", "experts", "shared_experts", "dense_mlp")
# Checkpoint module names -> our module classes. An entry of modules_to_not_convert excludes a
# whole class only when it names the module itself ("...layers.3.linear_attn"), not one of its
# tensors ("...linear_attn.in_proj_ba", "...mlp.shared_expert_gate").
_MODULE_SUFFIXES = (("shared_expert", "shared_experts"), ("experts", "experts"),
                    ("linear_attn", "linear_attention"), ("self_attn", "attention"), ("mlp", "dense_mlp"))


def _int(cfg: dict[str, Any], key: str, default: int | None = None) -> int:
    value = cfg.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int):
        raise ModelConfigError(f"config field {key!r} must be an integer, got {value!r}")
    return value


def _layer_types(text: dict[str, Any], num_layers: int) -> tuple[str, ...]:
    if "layer_types" in text and text["layer_types"]:
        types = tuple(text["layer_types"])
        if len(types) != num_layers:
            raise ModelConfigError(f"layer_types has {len(types)} entries but num_hidden_layers is {num_layers}")
        return types
    interval = text.get("full_attention_interval")
    if interval:
        # transformers' default rule: layer i is full attention when (i + 1) % interval == 0
        return tuple(FULL if (i + 1) % int(interval) == 0 else LINEAR for i in range(num_layers))
    return (FULL,) * num_layers


def _excluded_modules(qcfg: dict[str, Any]) -> set[str]:
    names: list[str] = []
    for key in ("modules_to_not_convert", "ignored_layers", "ignore", "exclude_modules"):
        names += [str(n) for n in (qcfg.get(key) or [])]
    out = set()
    for raw in names:
        name = raw.replace("re:", "").strip("*").rstrip(".*")
        for suffix, group in _MODULE_SUFFIXES:
            if name == suffix or name.endswith("." + suffix) or (raw.endswith("*") and name.endswith(suffix)):
                out.add(group)
                break
    return out


def _int_scheme(bits: int, group: int, symmetric: bool, modules: tuple[str, ...], method: str) -> Quantization:
    if bits not in (2, 3, 4, 8) or group < -1 or group == 0:
        raise ModelConfigError(f"{method}: unsupported bits {bits} / group_size {group}")
    return Quantization("int", bits, group, None, modules, symmetric)


def _compressed_tensors(qcfg: dict[str, Any], modules: tuple[str, ...]) -> Quantization:
    """compressed-tensors (vllm/model_executor/layers/quantization/compressed_tensors): the first
    config group's weight scheme: nvfp4-pack-quantized, float 8-bit (tensor / channel / block) or int
    (w8a8 channel, w4a16 group)."""
    groups = qcfg.get("config_groups") or {}
    if not isinstance(groups, dict) or not groups:
        raise ModelConfigError("compressed-tensors quantization_config has no config_groups")
    weights = next(iter(groups.values())).get("weights") or {}
    bits = int(weights.get("num_bits", 8))
    kind = str(weights.get("type", "int"))
    strategy = str(weights.get("strategy", "tensor"))
    fmt = str(qcfg.get("format", ""))
    if "nvfp4" in fmt or (kind == "float" and bits == 4):
        return Quantization("nvfp4", 4, int(weights.get("group_size") or 16), None, modules)
    if kind == "float" and bits == 8:
        block = weights.get("block_structure")
        return Quantization("fp8", 8, 0, tuple(block) if block else None, modules,
                            per_channel=strategy == "channel")
    group = int(weights.get("group_size") or -1) if strategy == "group" else -1
    return _int_scheme(bits, group, bool(weights.get("symmetric", True)), modules, "compressed-tensors")


def _layer_group(name: str) -> str | None:
    """The module class of one checkpoint layer name ("model.language_model.layers.3.linear_attn.out_proj")."""
    if name.split(".")[-1] == "lm_head":
        return "lm_head"
    parts = name.split(".")
    for suffix, group in _MODULE_SUFFIXES:
        if suffix in parts:
            return group
    return None


def _modelopt_mixed(qcfg: dict[str, Any]) -> Quantization:
    """modelopt MIXED_PRECISION (vllm/model_executor/layers/quantization/modelopt.py ModelOptMixedPrecisionConfig):
    `quantized_layers` names each layer's quant_algo; NVFP4 / W4A16_NVFP4 layers store NVFP4 (group_size of the
    first such entry, else 16), FP8 layers FP8 with per-tensor scales, layers not listed stay unquantized (the
    MTP head too, when no mtp layer is listed)."""
    layers = qcfg.get("quantized_layers") or (qcfg.get("quantization") or {}).get("quantized_layers") or {}
    if not isinstance(layers, dict) or not layers:
        raise ModelConfigError("modelopt MIXED_PRECISION quantization_config has no quantized_layers")
    nvfp4: list[str] = []
    fp8: list[str] = []
    group_size = None
    for name, info in layers.items():
        algo = str((info or {}).get("quant_algo", "")).upper() if isinstance(info, dict) else ""
        group = _layer_group(str(name))
        if group is None:
            continue
        if algo in ("NVFP4", "W4A16_NVFP4"):
            group_size = group_size or int(info.get("group_size") or 16)
            nvfp4.append(group)
        elif algo == "FP8":
            fp8.append(group)
        else:
            raise ModelConfigError(f"modelopt MIXED_PRECISION layer {name!r}: quant_algo {algo!r} is not one "
                                   "the planner knows (NVFP4, W4A16_NVFP4, FP8)")
    nvfp4_groups = tuple(dict.fromkeys(nvfp4))
    fp8_groups = tuple(g for g in dict.fromkeys(fp8) if g not in nvfp4_groups)
    no_mtp = not any("mtp" in str(name).split(".") for name in layers)
    if not nvfp4_groups:
        return Quantization("fp8", 8, 0, None, fp8_groups, mtp_unquantized=no_mtp)
    return Quantization("nvfp4", 4, group_size or 16, None, nvfp4_groups, fp8_modules=fp8_groups,
                        mtp_unquantized=no_mtp)


# Tensors of a class that a per-layer override may keep in 16 bits without the class itself staying so:
# the GDN a/b projections (their own class, never quantized), routers and the shared-expert gate.
_NOT_A_CLASS = ("in_proj_a", "in_proj_b", "in_proj_ba", "gate", "shared_expert_gate")


def _auto_round_overrides(qcfg: dict[str, Any], scheme: Quantization) -> Quantization:
    """AutoRound's per-layer `extra_config` and `block_name_to_quantize` (vllm/model_executor/layers/
    quantization/inc.py INCConfig.get_quant_method: a layer whose extra_config entry has bits >= 16 loads
    unquantized; blocks outside block_name_to_quantize stay unquantized). A class whose projections an entry
    keeps in 16 bits is planned unquantized in every layer; the MTP head stays BF16 when the quantized blocks
    do not name it."""
    extra = qcfg.get("extra_config") or {}
    keep16 = set()
    if isinstance(extra, dict):
        for name, cfg in extra.items():
            bits = cfg.get("bits", 16) if isinstance(cfg, dict) else 16
            if not isinstance(bits, int) or bits < 16 or str(name).split(".")[-1] in _NOT_A_CLASS:
                continue
            group = _layer_group(str(name))
            if group is not None:
                keep16.add(group)
    blocks = qcfg.get("block_name_to_quantize") or qcfg.get("to_quant_block_names")
    names = [blocks] if isinstance(blocks, str) else [str(b) for b in blocks or []]
    names = [n for part in names for n in part.split(",")]
    no_mtp = bool(names) and not any("mtp" in n for n in names)
    return dataclasses.replace(scheme, modules=tuple(m for m in scheme.modules if m not in keep16),
                               mtp_unquantized=no_mtp)


def read_quantization(qcfg: dict[str, Any] | None) -> Quantization:
    """Map a `quantization_config` block to the byte model the planner uses.

    fp8 (block or per-tensor scales), gptq / awq / auto-round (int bits + one fp16 scale, and a packed
    zero point when asymmetric, per group; group_size -1 = per output channel), modelopt (NVFP4: 4 bits +
    one FP8 scale per 16; FP8; MIXED_PRECISION, see _modelopt_mixed), compressed-tensors (see _compressed_tensors).
    """
    if not qcfg:
        return Quantization()
    if not isinstance(qcfg, dict):
        raise ModelConfigError("quantization_config must be a JSON object")
    method = str(qcfg.get("quant_method", "")).lower()
    excluded = _excluded_modules(qcfg)
    modules = tuple(m for m in QUANTIZABLE if m not in excluded)
    if method == "fp8":
        block = qcfg.get("weight_block_size")
        return Quantization("fp8", 8, 0, tuple(block) if block else None, modules)
    if method in ("gptq", "gptq_marlin", "awq", "awq_marlin", "auto-round", "auto_round", "intel/auto-round", "inc"):
        symmetric = bool(qcfg.get("sym", not qcfg.get("zero_point", False)))
        scheme = _int_scheme(_int(qcfg, "bits", 4), _int(qcfg, "group_size", 128), symmetric, modules, method)
        return _auto_round_overrides(qcfg, scheme) if method in ("auto-round", "auto_round", "intel/auto-round",
                                                                  "inc") else scheme
    if method in ("modelopt", "modelopt_fp4", "modelopt_fp8", "modelopt_mixed"):
        algo = str(qcfg.get("quant_algo") or (qcfg.get("quantization") or {}).get("quant_algo") or "").upper()
        if algo == "MIXED_PRECISION" or method == "modelopt_mixed":
            return _modelopt_mixed(qcfg)
        if "FP4" in algo or method == "modelopt_fp4":
            return Quantization("nvfp4", 4, int(qcfg.get("group_size") or 16), None, modules)
        if "FP8" in algo or method == "modelopt_fp8":
            return Quantization("fp8", 8, 0, None, modules)
        raise ModelConfigError(f"modelopt quant_algo {algo!r} is not one the planner knows (NVFP4, FP8)")
    if method == "compressed-tensors":
        return _compressed_tensors(qcfg, modules)
    raise ModelConfigError(f"unsupported quant_method {method!r} (the planner knows fp8, gptq, awq, auto-round, "
                           "modelopt NVFP4/FP8 and compressed-tensors)")


def _vision(cfg: dict[str, Any] | None) -> Vision | None:
    if not cfg:
        return None
    return Vision(
        depth=_int(cfg, "depth"), hidden_size=_int(cfg, "hidden_size"),
        intermediate_size=_int(cfg, "intermediate_size"), num_heads=_int(cfg, "num_heads"),
        out_hidden_size=_int(cfg, "out_hidden_size"), patch_size=_int(cfg, "patch_size", 16),
        temporal_patch_size=_int(cfg, "temporal_patch_size", 2), in_channels=_int(cfg, "in_channels", 3),
        spatial_merge_size=_int(cfg, "spatial_merge_size", 2),
        num_position_embeddings=_int(cfg, "num_position_embeddings", 0),
        deepstack_layers=len(cfg.get("deepstack_visual_indexes") or []),
    )


def spec_from_config(config: dict[str, Any], name: str = "", source: str = "") -> ModelSpec:
    """Build a ModelSpec from a parsed config.json dict."""
    if not isinstance(config, dict):
        raise ModelConfigError("config.json must hold a JSON object")
    text = config.get("text_config") or config
    if not isinstance(text, dict):
        raise ModelConfigError("text_config must be a JSON object")
    try:
        hidden = _int(text, "hidden_size")
        heads = _int(text, "num_attention_heads")
        num_layers = _int(text, "num_hidden_layers")
        head_dim = text.get("head_dim") or hidden // heads
        attention = Attention(heads, _int(text, "num_key_value_heads", heads), int(head_dim),
                              bool(text.get("attn_output_gate", False)))
        types = _layer_types(text, num_layers)
        gdn = None
        if LINEAR in types:
            gdn = GatedDeltaNet(
                _int(text, "linear_num_key_heads"), _int(text, "linear_num_value_heads"),
                _int(text, "linear_key_head_dim"), _int(text, "linear_value_head_dim"),
                _int(text, "linear_conv_kernel_dim", 4), str(text.get("mamba_ssm_dtype", "float32")))
        moe = None
        experts_key = "num_experts" if text.get("num_experts") else "num_local_experts"
        if text.get(experts_key):
            # transformers >= 5 writes Qwen3-MoE's expert count as num_local_experts
            moe = MoE(_int(text, experts_key), _int(text, "num_experts_per_tok"),
                      _int(text, "moe_intermediate_size"), int(text.get("shared_expert_intermediate_size") or 0))
        dtype = str(text.get("dtype") or text.get("torch_dtype") or config.get("dtype")
                    or config.get("torch_dtype") or "bfloat16")
        spec = ModelSpec(
            name=name or str(config.get("_name_or_path") or (config.get("architectures") or ["model"])[0]),
            architecture=str((config.get("architectures") or [config.get("model_type", "unknown")])[0]),
            hidden_size=hidden, vocab_size=_int(text, "vocab_size"), layer_types=types, attention=attention,
            linear_attention=gdn, moe=moe,
            dense_intermediate_size=0 if moe else _int(text, "intermediate_size"),
            tie_word_embeddings=bool(config.get("tie_word_embeddings", text.get("tie_word_embeddings", False))),
            mtp_layers=int(text.get("mtp_num_hidden_layers") or text.get("num_nextn_predict_layers") or 0),
            vision=_vision(config.get("vision_config")),
            max_position_embeddings=_int(text, "max_position_embeddings", 32768),
            dtype=dtype,
            quantization=read_quantization(config.get("quantization_config") or text.get("quantization_config")),
            source=source,
        )
        spec.validate()
    except (KeyError, TypeError, ValueError) as exc:
        if isinstance(exc, ModelConfigError):
            raise
        raise ModelConfigError(f"{name or 'config'}: {exc}") from None
    return spec


def read_config_dir(path: str | Path) -> ModelSpec:
    """Read `<dir>/config.json` (or a config.json path) into a ModelSpec."""
    p = Path(path)
    is_dir = os.path.isdir(p)
    cfg_path = p / "config.json" if is_dir else p
    from doctor.safeio import CONFIG_MAX_BYTES, BadJSON, InputError, load_json, read_bytes

    try:
        config = load_json(read_bytes(cfg_path, "model config", CONFIG_MAX_BYTES), "model config", str(cfg_path))
    except BadJSON as exc:
        raise ModelConfigError(f"{cfg_path} is not valid JSON: {exc.detail}") from None
    except InputError as exc:
        raise ModelConfigError(str(exc)) from None
    return spec_from_config(config, name=str(p if is_dir else p.parent), source=str(cfg_path))
