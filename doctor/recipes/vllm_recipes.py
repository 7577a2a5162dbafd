"""vllm-project/recipes model files resolved to `vllm serve` commands, as the recipes site builds them
(src/lib/command-synthesis.js resolveCommand), for the single-node strategies.

Argument order, as the site's: base_args, variant extra_args (+ its exact-hardware override), strategy
vllm_args + the parallel flag, strategy_overrides, hardware overrides (strategy by generation, else recipe +
variant by generation, then strategy exact-hardware), features; then the last `--flag` of each name wins.
"""

from __future__ import annotations

import json
import re
from typing import Any

from doctor.deployment.table import option
from doctor.recipes.candidate import Candidate, Skipped, dedupe_last_wins
from doctor.recipes.catalogue import catalogue_gpu, gpu_known, min_capability
from doctor.recipes.sources import Origin, RecipeError, Sources, refuse_unknown

SINGLE_NODE = ("single_node_tp", "single_node_tep", "single_node_dep")
GIB_PER_GB = 1e9 / (1 << 30)

# Fields understood, and fields that do not change the command (kept out of the profile).
_TOP = {"meta", "model", "features", "opt_in_features", "variants", "compatible_strategies", "hardware_overrides",
        "strategy_overrides", "guide", "strategy_hardware", "hardware_opt_in_features"}
_TOP_IGNORED = {"dependencies", "kv_offload_support", "default_strategy", "strategy_min_gpus", "hardware_notes"}
_MODEL = {"model_id", "min_vllm_version", "architecture", "parameter_count", "active_parameters", "context_length",
          "base_args", "base_env"}
_MODEL_IGNORED = {"docker_image", "install", "docker_source", "supports_dcp", "flashinfer_autotune"}
_VARIANT = {"precision", "vram_minimum_gb", "description", "model_id", "min_vllm_version", "tp", "extra_args",
            "extra_env", "hardware_overrides", "supported_hardware", "default_modes", "precision_hardware", "label"}
_VARIANT_IGNORED = {"docker_image"}
_OVERRIDE = {"extra_args", "extra_env"}
_OVERRIDE_IGNORED = {"docker_image", "install_note"}
_FEATURE = {"description", "args", "modes", "default_mode", "hardware_overrides", "strategies", "label", "hardware"}
_MODE = {"label", "description", "args", "variants", "hardware", "hardware_overrides"}
_STRATEGY_OVERRIDE = {"tp", "extra_args", "vllm_args", "env", "extra_env", "hardware_overrides"}


def check_recipe(where: str, recipe: dict[str, Any]) -> None:
    """Refuse, with one line naming the field, any field that would change the command and is not understood."""
    refuse_unknown(where, recipe, _TOP, _TOP_IGNORED)
    if recipe.get("omni"):
        raise RecipeError(f"{where}: field 'omni': a vllm-omni recipe, not a `vllm serve` LLM recipe")
    model = recipe.get("model") or {}
    refuse_unknown(where, model, _MODEL, _MODEL_IGNORED, "model")
    if model.get("nightly_required"):
        raise RecipeError(f"{where}: field 'model.nightly_required': needs a vLLM nightly build, so there is no "
                          "release range to validate its flags against")
    for key, variant in (recipe.get("variants") or {}).items():
        refuse_unknown(where, variant, _VARIANT, _VARIANT_IGNORED, f"variants.{key}")
        for hw, override in (variant.get("hardware_overrides") or {}).items():
            refuse_unknown(where, override, _OVERRIDE, _OVERRIDE_IGNORED, f"variants.{key}.hardware_overrides.{hw}")
    for hw, override in (recipe.get("hardware_overrides") or {}).items():
        refuse_unknown(where, override, _OVERRIDE, _OVERRIDE_IGNORED, f"hardware_overrides.{hw}")
    for key, feature in (recipe.get("features") or {}).items():
        refuse_unknown(where, feature, _FEATURE, set(), f"features.{key}")
        modes = feature.get("modes")
        if modes is not None:
            if not isinstance(modes, dict) or not modes:
                raise RecipeError(f"{where}: field 'features.{key}.modes': must be a non-empty mapping of modes")
            for name, mode in modes.items():
                refuse_unknown(where, mode, _MODE, set(), f"features.{key}.modes.{name}")
    for name, override in (recipe.get("strategy_overrides") or {}).items():
        if name in SINGLE_NODE:
            refuse_unknown(where, override, _STRATEGY_OVERRIDE, set(), f"strategy_overrides.{name}")


def _generation(profile: dict[str, Any]) -> str | None:
    gen = profile.get("generation") or profile.get("gpu_generation")
    return gen[0] if isinstance(gen, list) and gen else gen


def _keyed(mapping: Any, profile: dict[str, Any], hw_id: str) -> Any:
    """A hardware-keyed value: exact id > generation > brand > default (command-synthesis.js hardwareKeyedValue)."""
    if not isinstance(mapping, dict):
        return None
    brand = str(profile.get("brand", "")).lower()
    for key in (hw_id, _generation(profile), brand, "default"):
        if key and key in mapping:
            return mapping[key]
    return None


def _by_generation(mapping: Any, profile: dict[str, Any]) -> dict[str, Any] | None:
    """The generation block of a hardware_overrides mapping, else its brand-wide `nvidia` block."""
    if not isinstance(mapping, dict):
        return None
    return mapping.get(_generation(profile)) or (mapping.get("nvidia") if profile.get("brand") == "NVIDIA" else None)


def _tp(recipe: dict[str, Any], variant: dict[str, Any], profile: dict[str, Any], hw_id: str, strategy: str) -> int:
    """command-synthesis.js resolveSingleNodeTp: variant tp > strategy_overrides tp > fit by VRAM (1 or all)."""
    count = int(profile.get("gpu_count") or 1)
    if strategy != "single_node_tp":
        return count
    for raw in (variant.get("tp"), ((recipe.get("strategy_overrides") or {}).get(strategy) or {}).get("tp")):
        declared = raw if isinstance(raw, int) else _keyed(raw, profile, hw_id)
        if isinstance(declared, int) and declared > 0:
            return min(declared, count)
    per_gpu = float(profile.get("vram_gb") or 0) / count
    need = float(variant.get("vram_minimum_gb") or 0)
    return count if not need or not per_gpu or need > per_gpu else 1


def default_features(recipe: dict[str, Any], hw_id: str, variant_key: str) -> list[str]:
    """Features on by default: all but opt_in_features (and the hardware's), unless the variant wants them
    (CommandBuilder.jsx defaultFeaturesFor)."""
    opt_in = set(recipe.get("opt_in_features") or []) | set((recipe.get("hardware_opt_in_features") or {})
                                                             .get(hw_id) or [])
    forced = set((recipe["variants"][variant_key].get("default_modes") or {}))
    return [f for f in (recipe.get("features") or {}) if f in forced or f not in opt_in]


def _feature_args(recipe: dict[str, Any], name: str, variant_key: str, profile: dict[str, Any], hw_id: str,
                  strategy: str) -> tuple[list[str], str]:
    """The arguments a feature adds and the field they came from."""
    feature = recipe["features"][name]
    allowed = feature.get("strategies")
    if isinstance(allowed, list) and allowed and strategy not in allowed:
        return [], ""
    modes = feature.get("modes")
    if isinstance(modes, dict):
        variant = recipe["variants"][variant_key]
        usable = [k for k, m in modes.items()
                  if (not m.get("variants") or variant_key in m["variants"])
                  and (m.get("hardware") or {}).get(_generation(profile)) != "unsupported"
                  and (m.get("hardware") or {}).get(hw_id) != "unsupported"]
        if not usable:
            return [], ""
        wanted = [(variant.get("default_modes") or {}).get(name), feature.get("default_mode")]
        key = next((k for k in wanted if k in usable), usable[0])
        override = _keyed(modes[key].get("hardware_overrides"), profile, hw_id)
        args = (override or {}).get("args", modes[key].get("args"))
        return list(args or []), f"features.{name}.modes.{key}"
    override = _by_generation(feature.get("hardware_overrides"), profile)
    if override and "args" in override:
        return list(override["args"]), f"features.{name}.hardware_overrides"
    return list(feature.get("args") or []), f"features.{name}"


def _quoted(args: list[str]) -> str:
    return " ".join(args)


def resolve(sources: Sources, origin: Origin, recipe: dict[str, Any], variant_key: str, hw_id: str, count: int | None,
            strategy_name: str, features: list[str]) -> Candidate | Skipped:
    """One recipe variant on one taxonomy hardware profile (with `count` GPUs, default the profile's) and strategy."""
    where = origin.file
    variant = recipe["variants"][variant_key]
    entry = f"{where} variant {variant_key} on {hw_id}{f' x{count}' if count else ''} ({strategy_name})"
    if sources.taxonomy is None:
        raise RecipeError("recipe files need taxonomy.yaml beside them (hardware profiles)")
    tax_origin, taxonomy = sources.taxonomy
    profile = dict((taxonomy.get("hardware_profiles") or {}).get(hw_id) or {})
    if not profile:
        return Skipped(entry, f"hardware {hw_id!r} is not a taxonomy.yaml hardware profile")
    if count:
        per_gpu = float(profile.get("vram_gb") or 0) / int(profile.get("gpu_count") or 1)
        profile.update(gpu_count=count, vram_gb=per_gpu * count)
    if strategy_name not in sources.strategies:
        raise RecipeError(f"strategy {strategy_name!r}: give strategies/{strategy_name}.yaml to import it")
    strategy_origin, strategy = sources.strategies[strategy_name]
    gpu = catalogue_gpu(hw_id)
    precision = str(variant.get("precision", "bf16"))
    reason = _unfit(recipe, variant, variant_key, profile, hw_id, strategy_name, strategy, gpu)
    if reason:
        return Skipped(entry, reason)
    tp = _tp(recipe, variant, profile, hw_id, strategy_name)
    so = (recipe.get("strategy_overrides") or {}).get(strategy_name) or {}
    exact = (variant.get("hardware_overrides") or {}).get(hw_id) or {}
    cites = [origin.cite(f"model.base_args {_quoted(recipe['model'].get('base_args') or [])}")]
    args = list(recipe["model"].get("base_args") or []) + list(variant.get("extra_args") or [])
    args += list(exact.get("extra_args") or [])
    cites.append(origin.cite(f"variants.{variant_key}: precision {precision}, vram_minimum_gb "
                             f"{variant.get('vram_minimum_gb')}, extra_args {_quoted(variant.get('extra_args') or [])}"))
    if exact:
        cites.append(origin.cite(f"variants.{variant_key}.hardware_overrides.{hw_id}: "
                                 f"{json.dumps(exact, sort_keys=True)}"))
    args += list(strategy.get("vllm_args") or []) + [str(strategy.get("parallel_flag") or option("tp", "vllm")),
                                                     str(tp)]
    cites.append(strategy_origin.cite(f"{strategy_name}: vllm_args {_quoted(strategy.get('vllm_args') or [])}, "
                                      f"parallel_flag {strategy.get('parallel_flag')} = {tp} "
                                      f"(variant tp {variant.get('tp')}, vram fit on {profile.get('gpu_count')} GPUs)"))
    args += list(so.get("extra_args") or []) + list(so.get("vllm_args") or [])
    env: dict[str, str] = {**(recipe["model"].get("base_env") or {}), **(variant.get("extra_env") or {}),
                           **(exact.get("extra_env") or {}), **(strategy.get("env") or {}),
                           **(so.get("env") or {}), **(so.get("extra_env") or {})}
    strategy_ho = _by_generation(so.get("hardware_overrides"), profile)
    layers = [strategy_ho] if strategy_ho else [_by_generation(recipe.get("hardware_overrides"), profile),
                                                _by_generation(variant.get("hardware_overrides"), profile)]
    layers.append((so.get("hardware_overrides") or {}).get(hw_id))
    for layer in filter(None, layers):
        args += list(layer.get("extra_args") or [])
        env.update(layer.get("extra_env") or {})
    for name in features:
        added, field_name = _feature_args(recipe, name, variant_key, profile, hw_id, strategy_name)
        if added:
            args += added
            cites.append(origin.cite(f"{field_name}: {_quoted(added)}"))
    cites.append(tax_origin.cite(f"hardware_profiles.{hw_id}: {profile.get('description', '')}"))
    minimum = str(variant.get("min_vllm_version") or recipe["model"].get("min_vllm_version") or "0")
    model_id = str(variant.get("model_id") or recipe["model"]["model_id"])
    family = _family(model_id, recipe)
    suffix = "-mtp" if "spec_decoding" in features and "spec_decoding" in (recipe.get("opt_in_features") or []) else ""
    gpu_label = re.sub(r"[^a-z0-9]", "", str(gpu).lower())
    name = f"recipe-{family}-{precision.lower()}-{gpu_label}{f'x{tp}' if tp > 1 else ''}{suffix}"
    need = float(variant.get("vram_minimum_gb") or 0) * GIB_PER_GB / tp
    description = (f"{recipe['meta'].get('title', model_id)} {precision.upper()} ({model_id}) on {tp} x {gpu} "
                   f"({profile.get('display_name', hw_id)}), {strategy_name} TP {tp}, as the vllm-project/recipes "
                   f"command builder renders it with the features {', '.join(features) or 'none'}.")
    return Candidate(name=name, backend="vllm", model=model_id, min_version=minimum, gpu=str(gpu), gpu_count=tp,
                     min_gpu_memory_gib=round(need, 1), min_compute_capability=min_capability(precision),
                     args=tuple(dedupe_last_wins([str(a) for a in args])),
                     env=tuple(sorted((str(k), str(v)) for k, v in env.items())), description=description,
                     origin=origin, entry=f"variant {variant_key}, hardware {hw_id}{_verified(recipe, hw_id)}, "
                     f"strategy {strategy_name}, "
                     f"features {', '.join(features) or 'none'}", sources=tuple(cites))


def _verified(recipe: dict[str, Any], hw_id: str) -> str:
    """` (verified)` when the recipe's meta.hardware marks the hardware verified."""
    return " (verified)" if (recipe.get("meta", {}).get("hardware") or {}).get(hw_id) == "verified" else ""


def _family(model_id: str, recipe: dict[str, Any]) -> str:
    """`qwen3.6` from Qwen/Qwen3.6-35B-A3B: the short model name in profile names."""
    base = str(recipe["model"]["model_id"]).split("/")[-1].lower()
    return base.removesuffix("-35b-a3b")


def _unfit(recipe: dict[str, Any], variant: dict[str, Any], variant_key: str, profile: dict[str, Any], hw_id: str,
           strategy_name: str, strategy: dict[str, Any], gpu: str | None) -> str | None:
    """Why the recipes site would not offer this variant on this hardware, or why qwen-doctor cannot plan it."""
    if profile.get("brand") != "NVIDIA":
        return f"{profile.get('brand', 'unknown')} hardware: qwen-doctor serves NVIDIA GPUs"
    constraint = variant.get("precision_hardware") or ({"brand": "NVIDIA", "generation": "blackwell"}
                                                       if str(variant.get("precision")).lower() in ("nvfp4", "fp4")
                                                       else None)
    if constraint and constraint.get("generation") and _generation(profile) != constraint["generation"]:
        return (f"{variant.get('precision')} needs {constraint['generation']} GPUs; {hw_id} is "
                f"{_generation(profile)}")
    supported = variant.get("supported_hardware")
    if isinstance(supported, list) and supported and hw_id not in supported:
        return f"variants.{variant_key}.supported_hardware does not list {hw_id}"
    if (recipe.get("meta", {}).get("hardware") or {}).get(hw_id) == "unsupported":
        return f"meta.hardware.{hw_id} is unsupported"
    gate = _keyed((recipe.get("strategy_hardware") or {}).get(strategy_name), profile, hw_id)
    if gate == "unsupported" or (gate is None and strategy_name not in (recipe.get("compatible_strategies") or [])):
        return f"strategy {strategy_name} is not compatible with this recipe on {hw_id}"
    if strategy.get("deploy_type") != "single_node" or strategy_name not in SINGLE_NODE:
        return f"strategy {strategy_name} spans nodes; only single-node strategies are imported"
    match = strategy.get("hardware_match") or {}
    count = int(profile.get("gpu_count") or 1)
    if count < int(match.get("min_gpus", 1)) or count > int(match.get("max_gpus", count)):
        return f"strategy {strategy_name} needs {match.get('min_gpus', 1)}-{match.get('max_gpus', '')} GPUs; {count} given"
    need = float(variant.get("vram_minimum_gb") or 0)
    if need > float(profile.get("vram_gb") or 0):
        return (f"too little memory: the variant needs {need:g} GB, {count} x {hw_id} have "
                f"{float(profile.get('vram_gb') or 0):g} GB")
    if gpu is None or not gpu_known(gpu):
        return f"GPU {gpu or hw_id!r} is not in qwen-doctor's GPU catalogue (doctor/planner/gpus.yaml), so it cannot be planned"
    return None


def targets(recipe: dict[str, Any]) -> list[str]:
    """The hardware a recipe itself names: meta.hardware (verified) and the variants' hardware_overrides."""
    named = [hw for hw, status in (recipe.get("meta", {}).get("hardware") or {}).items() if status == "verified"]
    for variant in (recipe.get("variants") or {}).values():
        named += list((variant.get("hardware_overrides") or {}))
    return list(dict.fromkeys(named))
