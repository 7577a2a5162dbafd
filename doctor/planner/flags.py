"""A backend command line (profile, deploy argv, boot log's flags) -> the planner's ServeConfig.

Flag names follow `vllm serve` (vllm/engine/arg_utils.py) and `sglang.launch_server`
(python/sglang/srt/server_args.py); both spellings map to one ServeConfig field. Flags that do not
change memory are ignored; a memory flag with an unreadable value is a PlanInputError (exit 2).
"""

from __future__ import annotations

import json
from typing import Any, Callable

from doctor.planner.config import ServeConfig
from doctor.planner.errors import PlanInputError

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
    (("--block-size",), "block_size", int),
    (("--mm-encoder-tp-mode",), "mm_encoder_tp_mode", str),
    (("--mamba-full-memory-ratio",), "mamba_full_memory_ratio", float),
    (("--max-mamba-cache-size",), "max_mamba_cache_size", int),
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
    "--disable-cuda-graph": ("enforce_eager", True),
}


def _bytes(text: str) -> int:
    """vLLM's human-readable byte sizes: 62887755879, 58G, 58GiB, 1.5g."""
    t = text.strip().lower().removesuffix("ib").removesuffix("b")
    scale = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}.get(t[-1:], 1)
    return int(float(t[:-1] if scale != 1 else t) * scale)


def _speculative_tokens(text: str) -> int:
    """vLLM --speculative-config JSON: num_speculative_tokens of an MTP drafter (the only drafter whose
    weights and KV layers the planner models)."""
    try:
        conf = json.loads(text)
    except json.JSONDecodeError:
        raise PlanInputError(f"--speculative-config {text!r} is not JSON") from None
    if not isinstance(conf, dict):
        raise PlanInputError("--speculative-config must be a JSON object")
    method = str(conf.get("method", "")).lower()
    tokens = conf.get("num_speculative_tokens", 0)
    if not isinstance(tokens, int) or tokens < 0:
        raise PlanInputError(f"--speculative-config num_speculative_tokens {tokens!r} is not a count")
    return tokens if method in ("mtp", "qwen3_next_mtp", "qwen3_5_mtp", "") else 0


def config_kwargs(argv: list[str]) -> dict[str, Any]:
    """The ServeConfig fields a command line sets (the last occurrence of a flag wins)."""
    out: dict[str, Any] = {}
    i = 0
    while i < len(argv):
        token = argv[i]
        name, eq, inline = token.partition("=")
        name = name if name.startswith("-") else token
        normalized = name.replace("_", "-") if name.startswith("--") else name
        if normalized in _SWITCHES and not eq:
            field, value = _SWITCHES[normalized]
            out[field] = value
        elif normalized in _VALUED or normalized in ("--speculative-config", "--speculative-num-steps"):
            value = inline if eq else (argv[i + 1] if i + 1 < len(argv) else None)
            if not eq:
                i += 1
            if value is None:
                raise PlanInputError(f"{name} needs a value")
            if normalized == "--speculative-config":
                out["mtp_tokens"] = _speculative_tokens(value)
            elif normalized == "--speculative-num-steps":
                out["mtp_tokens"] = _parse(normalized, value, int)
            else:
                field, parse = _VALUED[normalized]
                out[field] = _parse(normalized, value, parse)
        i += 1
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
