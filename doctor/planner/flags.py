"""A backend command line (profile, deploy argv, boot log's flags) -> the planner's ServeConfig (the engine's
own default of each field: doctor/planner/engine_defaults.py).

The flags are read once, through the settings table of doctor/deployment/table.py (both backends' spellings
map to one field); the settings of a ServeConfig field's name carry over, and the rules here turn the
speculative and multimodal ones into ServeConfig fields. A memory flag with an unreadable value is a
PlanInputError (exit 2).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from typing import Any, Callable

from doctor.deployment import Deployment, Settings, SettingError, read_engine_args
from doctor.deployment.table import byte_size, option
from doctor.planner.config import ServeConfig
from doctor.planner.errors import PlanInputError
from doctor.planner.methods import MTP_METHODS, NO_MODEL_METHODS
from doctor.planner.context_length import SGLANG_OLD_VAR, SGLANG_VAR, VLLM_VAR
from doctor.planner.sglang_balance import BALANCE_ENV
from doctor.safeio import parse_json


def _bytes(text: str) -> int:
    """vLLM's human-readable byte sizes: 62887755879, 58G, 58GiB, 1.5g."""
    return byte_size(text)


def _speculative_config(text: str) -> dict[str, Any]:
    """vLLM --speculative-config JSON -> mtp_tokens (num_speculative_tokens), speculative_method and, for
    EAGLE / EAGLE3 / DFlash, the drafter model as given (plan() resolves it: an unknown drafter is a
    PlanInputError there, exit 2)."""
    try:
        conf = parse_json(text, option("speculative_config"))
    except json.JSONDecodeError:
        raise PlanInputError(f"{option('speculative_config')} {text!r} is not JSON") from None
    if not isinstance(conf, dict):
        raise PlanInputError(f"{option('speculative_config')} must be a JSON object")
    method = str(conf.get("method") or "mtp").lower()
    tokens = conf.get("num_speculative_tokens", 0)
    if not isinstance(tokens, int) or isinstance(tokens, bool) or tokens < 0:
        raise PlanInputError(f"{option('speculative_config')} num_speculative_tokens {tokens!r} is not a count")
    model = conf.get("model")
    return {"mtp_tokens": tokens, "speculative_method": method, "drafter": _drafter_ref(method, model)}


def _mm_limits(text: str) -> dict[str, Any]:
    """vLLM --limit-mm-per-prompt (JSON, counts or {"count": N, ...} options, or the legacy image=N,video=M)
    -> mm_image_limit, and language_model_only where image and video are both 0: vllm/config/multimodal.py
    (0.20.2) defines --language-model-only as "setting all modality limits to 0" and acts only through
    get_limit_per_prompt (an unset modality: 999), and MultiModalBudget (multimodal/encoder_budget.py) profiles
    only modalities whose limit is above 0."""
    try:
        conf = parse_json(text, option("limit_mm_per_prompt"))
    except json.JSONDecodeError:
        conf = dict(part.partition("=")[::2] for part in text.split(",") if part.strip())
    if not isinstance(conf, dict):
        raise PlanInputError(f"{option('limit_mm_per_prompt')} {text!r} is not a modality -> count mapping")
    counts: dict[str, int] = {}
    for modality, value in conf.items():
        count = value.get("count", 999) if isinstance(value, dict) else value
        try:
            counts[str(modality).strip()] = int(str(count).strip())
        except ValueError:
            raise PlanInputError(f"{option('limit_mm_per_prompt')} {modality}: {count!r} is not a count") from None
        if counts[str(modality).strip()] < 0:
            raise PlanInputError(f"{option('limit_mm_per_prompt')} {modality}: {count!r} is not a count")
    out: dict[str, Any] = {}
    if "image" in counts:
        out["mm_image_limit"] = counts["image"]
    if counts.get("image", 999) == 0 and counts.get("video", 999) == 0:
        out["language_model_only"] = True
    return out


def _drafter_ref(method: str, model: object) -> str | None:
    """The drafter model a speculative method loads besides the target (None: MTP head, n-gram)."""
    if method in MTP_METHODS or method in NO_MODEL_METHODS:
        return None
    return str(model) if model else ""


# SGLang auto_choose_speculative_params (srt/server_args.py 0.5.9): (steps, topk, draft tokens) = (3, 1, 4) for
# Qwen3.5 (not a listed architecture) when --speculative-algorithm is set without them.
SGLANG_AUTO_STEPS = 3


def _sglang_speculative(settings: Settings) -> dict[str, Any]:
    """SGLang's speculative settings -> mtp_tokens (D - 1: the draft tokens verified per step, topk 1),
    speculative_method and the drafter model as given."""
    out: dict[str, Any] = {}
    algorithm, model = settings.speculative_algorithm, settings.speculative_draft_model
    if settings.speculative_num_steps is not None:
        out["mtp_tokens"] = _parse(option("speculative_num_steps"), settings.speculative_num_steps, int)
    if settings.speculative_num_draft_tokens is not None:
        out["mtp_tokens"] = max(_parse(option("speculative_num_draft_tokens"), settings.speculative_num_draft_tokens,
                                       int) - 1, 0)
    if algorithm is not None:
        method = algorithm.lower()
        if method in ("eagle", "eagle3", "nextn") and not model:
            method = "nextn"  # no draft model path: the checkpoint's own MTP layer (sgl-cookbook Qwen3.5 MTP)
        out.update(speculative_method=method, drafter=_drafter_ref(method, model))
        out.setdefault("mtp_tokens", SGLANG_AUTO_STEPS)
    return out


_SERVE_FIELDS = {f.name for f in dataclasses.fields(ServeConfig)}


def config_from_settings(settings: Settings) -> dict[str, Any]:
    """The ServeConfig fields a deployment's typed settings set: the settings of the same name, then the
    planner's rules for the speculative and multimodal ones."""
    out = {name: value for name, value in settings.items() if name in _SERVE_FIELDS}
    if settings.speculative_config is not None:
        out.update(_speculative_config(settings.speculative_config))
    if settings.limit_mm_per_prompt is not None:
        out.update(_mm_limits(settings.limit_mm_per_prompt))
    out.update(_sglang_speculative(settings))
    return out


# Variables kept as set, read under the plan's release: SGLang's balance check and context-length override, vLLM's
RELEASE_ENV = {"sglang": (*BALANCE_ENV, SGLANG_VAR, SGLANG_OLD_VAR), "vllm": (VLLM_VAR,)}

# vLLM environment variables that change memory -> (ServeConfig field, how vllm/envs.py reads the value)
ENGINE_ENV = {
    "VLLM_USE_V2_MODEL_RUNNER": ("v2_model_runner", lambda v: bool(int(v))),
    "VLLM_DEEPEP_BUFFER_SIZE_MB": ("deepep_buffer_mb", int),
    "VLLM_DEEPEP_HIGH_THROUGHPUT_FORCE_INTRA_NODE": ("deepep_force_intranode", lambda v: bool(int(v))),
}


def env_kwargs(env: Mapping[str, str], backend: str = "vllm") -> dict[str, Any]:
    """The ServeConfig fields a vLLM engine's environment sets (ENGINE_ENV; none for SGLang, which reads none of
    them), each read as vllm/envs.py reads it:
    VLLM_USE_V2_MODEL_RUNNER `maybe_convert_bool` (bool(int(value)), None when unset; read in 0.22.0, 0.26.0 and
    the 0.32.0 CPU build; 0.20.1 reads bool(int(value or "0"))), VLLM_DEEPEP_BUFFER_SIZE_MB int(value or "1024"),
    VLLM_DEEPEP_HIGH_THROUGHPUT_FORCE_INTRA_NODE bool(int(value or "0")) (both read in 0.20.1-0.34.0). A value int()
    refuses stops vLLM at start-up: PlanInputError. The variables whose effect each release reads differently
    (RELEASE_ENV: SGLang's TP memory balance check, either engine's context-length override) are kept as they are
    set, for the plan to read under its release (sglang_balance.refuses, context_length.allows_longer)."""
    out: dict[str, Any] = {}
    kept = tuple((name, env[name]) for name in RELEASE_ENV[backend] if name in env) if backend in RELEASE_ENV else ()
    if kept:
        out["engine_env"] = kept
    if backend != "vllm":
        return out
    for name, (field, parse) in ENGINE_ENV.items():
        value = env.get(name)
        if value is None:
            continue
        try:
            out[field] = parse(value)
        except ValueError:
            raise PlanInputError(f"{name}={value!r} is not an integer (vLLM reads it with int() and does not "
                                 "start)") from None
    return out


def config_kwargs(argv: list[str]) -> dict[str, Any]:
    """The ServeConfig fields a foreign command line sets (the last occurrence of a flag wins), read through
    the deployment's settings table."""
    try:
        return config_from_settings(read_engine_args(list(argv)))
    except SettingError as exc:
        raise PlanInputError(str(exc)) from None


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


def deployment_kwargs(deployment: Deployment) -> dict[str, Any]:
    """The ServeConfig fields a Deployment sets, from its flags and its environment (env_kwargs); PlanInputError on
    a setting that does not read as its kind."""
    try:
        return {**env_kwargs(deployment.env, deployment.backend), **config_from_settings(deployment.settings)}
    except SettingError as exc:
        raise PlanInputError(str(exc)) from None
