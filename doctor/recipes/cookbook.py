"""sgl-cookbook model files (data/models/src/vX/*.yaml, the human-written form) resolved to SGLang commands,
merged as the cookbook's compiler does (data/scripts/compile_models.py: file defaults per hardware < family <
model; hardware extra_args before the configuration's, a key given by the hardware winning)."""

from __future__ import annotations

import re
from typing import Any

from doctor.deployment.table import option
from doctor.recipes.candidate import Candidate, Skipped
from doctor.recipes.catalogue import catalogue_gpu, gpu_known, min_capability
from doctor.recipes.sources import Origin, RecipeError, refuse_unknown

# vendors.yaml of the cookbook: vendor id -> Hugging Face organisation (model_path default `ORG/NAME`).
_ORGS = {"qwen": "Qwen", "nvidia": "nvidia"}
_TOP = {"vendor", "defaults", "families"}
_DEFAULTS = {"hardware", "configurations"}
_CONFIGURATION = {"name", "nodes", "optimization", "extra_args", "tp", "env_vars"}
_FAMILY = {"name", "description", "llm", "models", "hardware"}
_LLM = {"thinking_capability", "tool_parser", "reasoning_parser", "chat_template"}
_MODEL = {"name", "quantization", "model_path", "hardware", "description"}
_HARDWARE = {"tp", "extra_args", "env_vars"}
# Checkpoint precisions in the cookbook's words -> the recipes' words (hardware.yaml precisions).
_PRECISION = {"bf16": "bf16", "fp8": "fp8", "fp4": "nvfp4", "nvfp4": "nvfp4", "int4": "int4"}
GIB_PER_GB = 1e9 / (1 << 30)


def check_cookbook(where: str, data: dict[str, Any]) -> None:
    """Refuse, naming the field, what this importer does not resolve (variant generation, quant_overrides,
    DP / EP, multi-node configurations)."""
    refuse_unknown(where, data, _TOP)
    defaults = data.get("defaults") or {}
    refuse_unknown(where, defaults, _DEFAULTS, label="defaults")
    if not isinstance(defaults.get("hardware", {}), dict):
        raise RecipeError(f"{where}: field 'defaults.hardware': the list form names no TP; give per-hardware settings")
    for hw, config in (defaults.get("hardware") or {}).items():
        refuse_unknown(where, config, _HARDWARE, label=f"defaults.hardware.{hw}")
    for i, config in enumerate(defaults.get("configurations") or []):
        refuse_unknown(where, config, _CONFIGURATION, label=f"defaults.configurations[{i}]")
        if config.get("nodes", "single") != "single":
            raise RecipeError(f"{where}: field 'defaults.configurations[{i}].nodes': only single-node "
                              "configurations are imported")
    for f, family in enumerate(data.get("families") or []):
        refuse_unknown(where, family, _FAMILY, label=f"families[{f}]")
        refuse_unknown(where, family.get("llm") or {}, _LLM, label=f"families[{f}].llm")
        for m, model in enumerate(family.get("models") or []):
            refuse_unknown(where, model, _MODEL, label=f"families[{f}].models[{m}]")
            for hw, config in (model.get("hardware") or {}).items():
                refuse_unknown(where, config, _HARDWARE, label=f"families[{f}].models[{m}].hardware.{hw}")


def _merge_args(hardware: list[str], configuration: list[str]) -> list[str]:
    """compile_models.py merge_extra_args: the hardware's args, then the configuration's whose key it lacks."""
    keys = {a for a in hardware if a.startswith("--")}
    out, i = list(hardware), 0
    while i < len(configuration):
        arg = configuration[i]
        value = configuration[i + 1] if i + 1 < len(configuration) and not configuration[i + 1].startswith("--") else None
        if arg.startswith("--") and arg not in keys:
            out += [arg] + ([value] if value is not None else [])
        i += 2 if value is not None else 1
    return out


def release_of(origin: Origin) -> str:
    """The SGLang release a cookbook file is written for: its folder (`src/v0.5.10/qwen36.yaml`)."""
    found = re.search(r"/v(\d+\.\d+\.\d+[\w.]*)/", "/" + origin.file)
    if not found:
        raise RecipeError(f"{origin.file}: the cookbook file's folder names no SGLang release (src/vX.Y.Z/)")
    return found.group(1)


def resolve_all(origin: Origin, data: dict[str, Any]) -> list[Candidate | Skipped]:
    """Every model x hardware x configuration of a cookbook file."""
    defaults = data.get("defaults") or {}
    org = _ORGS.get(str(data.get("vendor")), str(data.get("vendor")))
    release = release_of(origin)
    out: list[Candidate | Skipped] = []
    for family in data.get("families") or []:
        llm = family.get("llm") or {}
        for model in family.get("models") or []:
            model_hw = model.get("hardware") or {}
            hardware_list = list(model_hw) or list(defaults.get("hardware") or {})
            for hw in hardware_list:
                merged = {**(defaults.get("hardware") or {}).get(hw, {}), **(family.get("hardware") or {}).get(hw, {}),
                          **model_hw.get(hw, {})}
                for configuration in defaults.get("configurations") or []:
                    out.append(_resolve(origin, release, org, llm, model, hw, merged, configuration))
    return out


def _resolve(origin: Origin, release: str, org: str, llm: dict[str, Any], model: dict[str, Any], hw: str,
             merged: dict[str, Any], configuration: dict[str, Any]) -> Candidate | Skipped:
    name = str(model["name"])
    entry = f"{origin.file} {name} on {hw} ({configuration['name']})"
    gpu = catalogue_gpu(hw)
    if gpu is None or not gpu_known(gpu):
        return Skipped(entry, f"GPU {hw!r} is not in qwen-doctor's GPU catalogue (doctor/planner/gpus.yaml)")
    precision = _PRECISION.get(str(model.get("quantization", "fp8")).lower(), str(model.get("quantization")))
    tp = int(configuration.get("tp", merged.get("tp", 8)))
    args = [option("tp", "sglang"), str(tp)]
    if llm.get("reasoning_parser"):
        args += [option("reasoning_parser", "sglang"), str(llm["reasoning_parser"])]
    if llm.get("tool_parser"):
        args += [option("tool_call_parser", "sglang"), str(llm["tool_parser"])]
    extra = _merge_args([str(a) for a in merged.get("extra_args") or []],
                        [str(a) for a in configuration.get("extra_args") or []])
    args += extra
    env = merged.get("env_vars", configuration.get("env_vars")) or {}
    model_path = str(model.get("model_path") or f"{org}/{name}")
    family = name.split("-")[0].lower()
    mtp = "-mtp" if "speculative" in str(configuration["name"]) else ""
    gpu_label = re.sub(r"[^a-z0-9]", "", gpu.lower())
    profile_name = f"cookbook-{family}-{precision}-{gpu_label}{f'x{tp}' if tp > 1 else ''}{mtp}"
    cites = (origin.cite(f"families {name}: quantization {model.get('quantization')}, llm tool_parser "
                         f"{llm.get('tool_parser')}, reasoning_parser {llm.get('reasoning_parser')}"),
             origin.cite(f"hardware {hw}: tp {tp}, extra_args {' '.join(map(str, merged.get('extra_args') or []))}"),
             origin.cite(f"configurations {configuration['name']} ({configuration.get('optimization', '')}): "
                         f"extra_args {' '.join(map(str, configuration.get('extra_args') or []))}"),
             f"{origin.repository} data/scripts/compile_models.py (merge order; model_path {org}/NAME)")
    description = (f"{name} ({model_path}) on {tp} x {gpu} with SGLang {release}+, the sgl-cookbook "
                   f"'{configuration['name']}' configuration ({configuration.get('optimization', 'balanced')}).")
    return Candidate(name=profile_name, backend="sglang", model=model_path, min_version=release, gpu=gpu,
                     gpu_count=tp, min_gpu_memory_gib=0.0, min_compute_capability=min_capability(precision),
                     args=tuple(args), env=tuple(sorted((str(k), str(v)) for k, v in env.items())),
                     description=description, origin=origin,
                     entry=f"{name}, hardware {hw}, configuration {configuration['name']}", sources=cites)
