"""A backend command line (profile, deploy argv, boot log's flags) -> the planner's ServeConfig, and the
engine's own default of each ServeConfig field for the version in question.

Flag names follow `vllm serve` (vllm/engine/arg_utils.py) and `sglang.launch_server`
(python/sglang/srt/server_args.py); both spellings map to one ServeConfig field. Flags that do not
change memory are ignored; a memory flag with an unreadable value is a PlanInputError (exit 2).
Defaults come from the flag schemas (doctor/flags/schemas, extracted from each wheel by
scripts/extract_flag_schema.py), of the nearest covered version <= the one planned.
"""

from __future__ import annotations

import json
from typing import Any, Callable

from doctor.flags.schema import FlagDefault, SchemaError, flag_default
from doctor.planner.config import ServeConfig
from doctor.planner.errors import PlanInputError
from doctor.safeio import parse_json

# flag -> (ServeConfig field, parser)
_VALUED: dict[str, tuple[str, Callable[[str], Any]]] = {}
for _names, _field, _parse in (
    (("--tensor-parallel-size", "--tp-size", "--tp", "-tp"), "tp", int),
    (("--pipeline-parallel-size", "--pp-size", "-pp"), "pp", int),
    (("--data-parallel-size", "--dp-size", "-dp"), "dp", int),
    (("--max-model-len", "--context-length"), "max_model_len", int),
    (("--max-num-seqs", "--max-running-requests"), "max_num_seqs", int),
    (("--max-num-batched-tokens", "--chunked-prefill-size"), "max_num_batched_tokens", int),
    (("--gpu-memory-utilization",), "gpu_memory_utilization", float),
    (("--mem-fraction-static",), "mem_fraction_static", float),
    (("--kv-cache-dtype",), "kv_cache_dtype", str),
    (("--block-size", "--page-size"), "block_size", int),
    (("--mm-encoder-tp-mode",), "mm_encoder_tp_mode", str),
    (("--mamba-full-memory-ratio",), "mamba_full_memory_ratio", float),
    (("--max-mamba-cache-size",), "max_mamba_cache_size", int),
    (("--mamba-ssm-dtype",), "mamba_ssm_dtype", str),
    (("--mamba-radix-cache-strategy", "--mamba-scheduler-strategy"), "mamba_radix_strategy", str),
    (("--cuda-graph-max-bs", "--cuda-graph-max-bs-decode"), "cuda_graph_max_bs", int),
    (("--cuda-graph-backend-prefill",), "prefill_cuda_graph", lambda v: v.strip().lower() != "disabled"),
    (("--kv-cache-memory", "--kv-cache-memory-bytes"), "kv_cache_memory_gib", lambda v: _bytes(v) / (1 << 30)),
):
    for _name in _names:
        _VALUED[_name] = (_field, _parse)

_SWITCHES: dict[str, tuple[str, Any]] = {
    "--language-model-only": ("language_model_only", True),
    "--language-only": ("language_model_only", True),
    "--enable-expert-parallel": ("expert_parallel", True),
    "--enable-ep-moe": ("expert_parallel", True),
    "--enable-prefix-caching": ("prefix_caching", True),
    "--no-enable-prefix-caching": ("prefix_caching", False),
    "--disable-radix-cache": ("prefix_caching", False),
    "--enforce-eager": ("enforce_eager", True),
    "--skip-mm-profiling": ("skip_mm_profiling", True),
    "--disable-cuda-graph": ("enforce_eager", True),
    "--disable-overlap-schedule": ("overlap_schedule", False),
    # SGLang prefill CUDA graphs: --disable-piecewise-cuda-graph (0.5.10-0.5.19) and --disable-prefill-cuda-graph
    # (0.5.14+) set the prefill backend to disabled; the enable / enforce switches lock it on
    # (server_args.py _parse_cuda_graph_config and its deprecated aliases, 0.5.16-0.5.19).
    "--disable-prefill-cuda-graph": ("prefill_cuda_graph", False),
    "--disable-piecewise-cuda-graph": ("prefill_cuda_graph", False),
    "--enable-piecewise-cuda-graph": ("prefill_cuda_graph", True),
    "--enforce-piecewise-cuda-graph": ("prefill_cuda_graph", True),
    "--enable-breakable-cuda-graph": ("prefill_cuda_graph", True),
}


def _bytes(text: str) -> int:
    """vLLM's human-readable byte sizes: 62887755879, 58G, 58GiB, 1.5g."""
    t = text.strip().lower().removesuffix("ib").removesuffix("b")
    scale = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}.get(t[-1:], 1)
    return int(float(t[:-1] if scale != 1 else t) * scale)


def _speculative_config(text: str) -> dict[str, Any]:
    """vLLM --speculative-config JSON -> mtp_tokens (num_speculative_tokens), speculative_method and, for
    EAGLE / EAGLE3 / DFlash, the drafter model as given (plan() resolves it: an unknown drafter is a
    PlanInputError there, exit 2)."""
    try:
        conf = parse_json(text, "--speculative-config")
    except json.JSONDecodeError:
        raise PlanInputError(f"--speculative-config {text!r} is not JSON") from None
    if not isinstance(conf, dict):
        raise PlanInputError("--speculative-config must be a JSON object")
    method = str(conf.get("method") or "mtp").lower()
    tokens = conf.get("num_speculative_tokens", 0)
    if not isinstance(tokens, int) or isinstance(tokens, bool) or tokens < 0:
        raise PlanInputError(f"--speculative-config num_speculative_tokens {tokens!r} is not a count")
    model = conf.get("model")
    return {"mtp_tokens": tokens, "speculative_method": method, "drafter": _drafter_ref(method, model)}


def _mm_limits(text: str) -> dict[str, Any]:
    """vLLM --limit-mm-per-prompt (JSON, counts or {"count": N, ...} options, or the legacy image=N,video=M)
    -> mm_image_limit, and language_model_only where image and video are both 0: vllm/config/multimodal.py
    (0.20.2) defines --language-model-only as "setting all modality limits to 0" and acts only through
    get_limit_per_prompt (an unset modality: 999), and MultiModalBudget (multimodal/encoder_budget.py) profiles
    only modalities whose limit is above 0."""
    try:
        conf = parse_json(text, "--limit-mm-per-prompt")
    except json.JSONDecodeError:
        conf = dict(part.partition("=")[::2] for part in text.split(",") if part.strip())
    if not isinstance(conf, dict):
        raise PlanInputError(f"--limit-mm-per-prompt {text!r} is not a modality -> count mapping")
    counts: dict[str, int] = {}
    for modality, value in conf.items():
        count = value.get("count", 999) if isinstance(value, dict) else value
        try:
            counts[str(modality).strip()] = int(str(count).strip())
        except ValueError:
            raise PlanInputError(f"--limit-mm-per-prompt {modality}: {count!r} is not a count") from None
        if counts[str(modality).strip()] < 0:
            raise PlanInputError(f"--limit-mm-per-prompt {modality}: {count!r} is not a count")
    out: dict[str, Any] = {}
    if "image" in counts:
        out["mm_image_limit"] = counts["image"]
    if counts.get("image", 999) == 0 and counts.get("video", 999) == 0:
        out["language_model_only"] = True
    return out


def _drafter_ref(method: str, model: object) -> str | None:
    """The drafter model a speculative method loads besides the target (None: MTP head, n-gram)."""
    from doctor.planner.drafters import MTP_METHODS, NO_MODEL_METHODS

    if method in MTP_METHODS or method in NO_MODEL_METHODS:
        return None
    return str(model) if model else ""


# SGLang auto_choose_speculative_params (srt/server_args.py 0.5.9): (steps, topk, draft tokens) = (3, 1, 4) for
# Qwen3.5 (not a listed architecture) when --speculative-algorithm is set without them.
SGLANG_AUTO_STEPS = 3
_SGLANG_SPEC = ("--speculative-algorithm", "--speculative-draft-model-path", "--speculative-draft-model",
                "--speculative-num-steps", "--speculative-num-draft-tokens")


def _sglang_speculative(found: dict[str, str]) -> dict[str, Any]:
    """SGLang --speculative-* flags -> mtp_tokens (D - 1: the draft tokens verified per step, topk 1),
    speculative_method and the drafter model as given."""
    out: dict[str, Any] = {}
    algorithm = found.get("--speculative-algorithm")
    model = found.get("--speculative-draft-model-path") or found.get("--speculative-draft-model")
    if "--speculative-num-steps" in found:
        out["mtp_tokens"] = _parse("--speculative-num-steps", found["--speculative-num-steps"], int)
    if "--speculative-num-draft-tokens" in found:
        out["mtp_tokens"] = max(_parse("--speculative-num-draft-tokens", found["--speculative-num-draft-tokens"],
                                       int) - 1, 0)
    if algorithm is not None:
        method = algorithm.lower()
        if method in ("eagle", "eagle3", "nextn") and not model:
            method = "nextn"  # no draft model path: the checkpoint's own MTP layer (sgl-cookbook Qwen3.5 MTP)
        out.update(speculative_method=method, drafter=_drafter_ref(method, model))
        out.setdefault("mtp_tokens", SGLANG_AUTO_STEPS)
    return out


def config_kwargs(argv: list[str]) -> dict[str, Any]:
    """The ServeConfig fields a command line sets (the last occurrence of a flag wins)."""
    out: dict[str, Any] = {}
    sglang_spec: dict[str, str] = {}
    i = 0
    while i < len(argv):
        token = argv[i]
        name, eq, inline = token.partition("=")
        name = name if name.startswith("-") else token
        normalized = name.replace("_", "-") if name.startswith("--") else name
        if normalized in _SWITCHES and not eq:
            field, value = _SWITCHES[normalized]
            out[field] = value
        elif (normalized in _VALUED or normalized in ("--speculative-config", "-sc", "--limit-mm-per-prompt")
              or normalized in _SGLANG_SPEC):
            value = inline if eq else (argv[i + 1] if i + 1 < len(argv) else None)
            if not eq:
                i += 1
            if value is None:
                raise PlanInputError(f"{name} needs a value")
            if normalized in ("--speculative-config", "-sc"):
                out.update(_speculative_config(value))
            elif normalized == "--limit-mm-per-prompt":
                out.update(_mm_limits(value))
            elif normalized in _SGLANG_SPEC:
                sglang_spec[normalized] = value
            else:
                field, parse = _VALUED[normalized]
                out[field] = _parse(normalized, value, parse)
        i += 1
    out.update(_sglang_speculative(sglang_spec))
    return out


def _parse(name: str, value: str, parse: Callable[[str], Any]) -> Any:
    try:
        return parse(value)
    except (ValueError, IndexError, OverflowError):
        raise PlanInputError(f"{name} {value!r} is not a valid value") from None


def serve_config_from_argv(backend: str, argv: list[str], **overrides: Any) -> ServeConfig:
    """ServeConfig for `backend` launched with `argv`; `overrides` (not None) win over the command line."""
    kwargs = config_kwargs(list(argv))
    kwargs.update({k: v for k, v in overrides.items() if v is not None})
    return ServeConfig(backend=backend, **kwargs)


# ServeConfig field -> the flag that sets it (vLLM, SGLang); None: the backend has no such flag
FIELD_FLAGS: dict[str, tuple[str | None, str | None]] = {
    "gpu_memory_utilization": ("--gpu-memory-utilization", None),
    "mem_fraction_static": (None, "--mem-fraction-static"),
    "max_num_batched_tokens": ("--max-num-batched-tokens", "--chunked-prefill-size"),
    "max_num_seqs": ("--max-num-seqs", "--max-running-requests"),
    "block_size": ("--block-size", "--page-size"),
    "max_model_len": ("--max-model-len", "--context-length"),
    "kv_cache_dtype": ("--kv-cache-dtype", "--kv-cache-dtype"),
    "mm_encoder_tp_mode": ("--mm-encoder-tp-mode", None),
    "mamba_full_memory_ratio": (None, "--mamba-full-memory-ratio"),
    "max_mamba_cache_size": (None, "--max-mamba-cache-size"),
}


def engine_default(backend: str, version: str | None, field: str) -> FlagDefault | None:
    """The default of the flag behind ServeConfig `field` in `backend` `version` (nearest covered version
    <= it), or None when the backend has no such flag or its schema does not record the default."""
    flags = FIELD_FLAGS.get(field)
    flag = flags[0 if backend == "vllm" else 1] if flags else None
    if flag is None:
        return None
    try:
        return flag_default(backend, version, flag)
    except SchemaError:
        return None


def literal_default(backend: str, version: str | None, field: str) -> Any:
    """The value the engine uses for `field` when the user does not set it, where that is a fixed literal
    of the version; None when it is resolved at startup (GPU memory, model) or unknown."""
    found = engine_default(backend, version, field)
    if found is None or found.resolved_at_runtime and found.value is None:
        return None
    return found.value


def _tier_matches(tier: dict[str, Any], total_bytes: int, gpu_name: str, capability: tuple[int, int]) -> bool:
    return (total_bytes >= tier.get("min_memory_gib", 0) * (1 << 30)
            and not any(name in gpu_name.lower() for name in tier.get("exclude_names", ()))
            and list(capability) not in [list(c) for c in tier.get("exclude_capabilities", ())])


def vllm_batch_defaults_of(version: str | None, total_bytes: int, gpu_name: str,
                           capability: tuple[int, int]) -> tuple[int, int] | None:
    """(max_num_batched_tokens, max_num_seqs) `vllm serve` of `version` picks on a CUDA GPU with torch total
    `total_bytes`, from the get_batch_defaults tiers of its flag schema; None when the schema has no exact
    tiers (the caller's own rule applies)."""
    out = []
    for field in ("max_num_batched_tokens", "max_num_seqs"):
        found = engine_default("vllm", version, field)
        tiers = found.tiers if found else ()
        if not tiers or not all(t.get("exact") for t in tiers):
            return None
        match = next((t for t in tiers if _tier_matches(t, total_bytes, gpu_name, capability)), None)
        if match is None or not isinstance(match.get("value"), int):
            return None
        out.append(match["value"])
    return out[0], out[1]
