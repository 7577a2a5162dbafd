"""A context length above the model's derived one: whether each engine release refuses it, in its own words, and
the environment variable that lets it through.

vLLM (config/model.py _get_and_verify_max_len, read in 0.17.0 and 0.26.0): a --max-model-len above the derived
length (max_position_embeddings with its rope scaling) raises "User-specified max_model_len (L) is greater than
the derived max_model_len (...)" unless VLLM_ALLOW_LONG_MAX_MODEL_LEN is "1" or "true" (envs.py: strip().lower()),
which logs it as a warning instead.

SGLang (configs/model_config.py, read in every wheel 0.5.0rc2-0.5.23): a --context-length above the derived
context_length (get_context_length of the text config):
- 0.5.0rc2: `get_bool_env_var("SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN", default="True")`: allowed with a
  warning unless the variable says false.
- 0.5.1-0.5.2: get_bool_env_var with its default "false": refused unless "true" or "1".
- 0.5.3-0.5.23: envs.SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN (EnvBool(False): "true", "1", "yes", "y"); the
  legacy SGL_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN is copied to it at import (environ.py, `key.startswith("SGL_")`).
Refused, it raises ValueError("Warning: User-specified context_length (L) is greater than the derived
context_length (D). This may lead to incorrect model outputs or CUDA errors. ... To allow overriding this maximum,
set the env var SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1"). (is_in_ci() also lets it through; not read here.)
"""

from __future__ import annotations

from collections.abc import Mapping

from packaging.version import Version

VLLM_VAR = "VLLM_ALLOW_LONG_MAX_MODEL_LEN"
SGLANG_VAR = "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN"
SGLANG_OLD_VAR = "SGL_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN"
CONTEXT_ENV = (VLLM_VAR, SGLANG_VAR, SGLANG_OLD_VAR)


def _base(version: str) -> Version:
    return Version(Version(version).base_version)


def allows_longer(backend: str, version: str, env: Mapping[str, str]) -> bool:
    """Whether `backend` `version` starts with a context length above the derived one under `env`."""
    if backend == "vllm":
        return (env.get(VLLM_VAR) or "0").strip().lower() in ("1", "true")
    v = _base(version)
    if v < Version("0.5.1"):
        return (env.get(SGLANG_VAR) or "true").lower() in ("true", "1")
    if v < Version("0.5.3"):
        return (env.get(SGLANG_VAR) or "false").lower() in ("true", "1")
    value = env.get(SGLANG_OLD_VAR, env.get(SGLANG_VAR))   # the SGL_ name is copied over the SGLANG_ one
    return (value or "false").lower() in ("true", "1", "yes", "y")


def longer_finding(backend: str, version: str, asked: int, derived: int, env: Mapping[str, str]
                   ) -> tuple[str, bool]:
    """(the engine's words, refused) for a length `asked` above `derived`."""
    refused = not allows_longer(backend, version, env)
    if backend == "vllm":
        text = f"User-specified max_model_len ({asked}) is greater than the derived max_model_len ({derived})"
        var = VLLM_VAR
    else:
        text = (f"User-specified context_length ({asked}) is greater than the derived context_length ({derived}). "
                "This may lead to incorrect model outputs or CUDA errors")
        var = SGLANG_VAR
    if refused:
        return f"{text}: {backend} {version} refuses to start; {var}=1 lets it through", True
    return f"{text}: {backend} {version} starts, as its environment sets {var}, with a warning", False
