"""SGLang's TP memory balance check per release: whether a server whose GPUs differ by more than 10% in free
memory refuses to start or only warns, and which environment variable turns the refusal into a warning.

Read in the wheels of every SGLang release from 0.5.0rc2 to 0.5.23 (`pip download sglang==X --no-deps`; 0.5.0 itself
was never published). Each rank of a TP > 1 server that is not a draft worker compares the smallest free memory
of the world group with 90% of its own, before the weights load, and builds "The memory capacity is unbalanced.
Some GPUs may be occupied by other processes." when it is below:
- 0.5.0rc2-0.5.9: `min_per_gpu_memory < local_gpu_memory * 0.9` (model_executor/model_runner.py
  init_torch_distributed); 0.5.10-0.5.15 the same on `pre_model_load_memory` (model_runner.py init_torch_distributed,
  e.g. 0.5.10 line 1012); 0.5.16-0.5.23 `_check_tp_memory_balance` (distributed/bootstrap.py, 0.5.16 line 288,
  0.5.23 line 445).
- 0.5.0rc2-0.5.6: `raise ValueError(...)` unless `get_bool_env_var("SGL_DISABLE_TP_MEMORY_INBALANCE_CHECK")`
  ("true" or "1"; utils/common.py), which logs the message as a warning instead.
- 0.5.7-0.5.23: `raise RuntimeError(msg)` while `envs.SGLANG_ENABLE_TP_MEMORY_INBALANCE_CHECK.get()` (EnvBool,
  default True; "false", "0", "no" or "n" turn it off), else `logger.warning(msg)`. The old variable, per release
  (environ.py):
  - 0.5.7-0.5.17: `_print_deprecated_env("SGLANG_ENABLE_TP_MEMORY_INBALANCE_CHECK",
    "SGL_DISABLE_TP_MEMORY_INBALANCE_CHECK")` copies the old value as it is, not inverted: SGL_DISABLE_...=1 still
    refuses, =0 warns.
  - 0.5.18-0.5.20: `_DEPRECATED_ENVS["SGLANG_DISABLE_TP_MEMORY_INBALANCE_CHECK"]` forwards the inverted value
    (`_invert_bool`); SGL_DISABLE_... is only renamed to SGLANG_DISABLE_... after that pass and has no effect.
  - 0.5.21-0.5.23: no deprecated name is read; only SGLANG_ENABLE_TP_MEMORY_INBALANCE_CHECK counts.
So every release 0.5.0rc2-0.5.23 refuses by default; none only warns unless told to.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from packaging.version import Version

ENABLE_VAR = "SGLANG_ENABLE_TP_MEMORY_INBALANCE_CHECK"
OLD_DISABLE_VAR = "SGL_DISABLE_TP_MEMORY_INBALANCE_CHECK"
DEPRECATED_DISABLE_VAR = "SGLANG_DISABLE_TP_MEMORY_INBALANCE_CHECK"
BALANCE_ENV = (ENABLE_VAR, OLD_DISABLE_VAR, DEPRECATED_DISABLE_VAR)
_TRUE = ("true", "1", "yes", "y")
_FALSE = ("false", "0", "no", "n")


@dataclass(frozen=True)
class BalanceRule:
    """How one SGLang release treats an unbalanced TP group."""

    exception: str     # what it raises by default
    relax: str         # the environment setting that makes it a warning
    site: str          # where the check is (file, function, line)


def _base(version: str) -> Version:
    return Version(Version(version).base_version)


def balance_rule(version: str) -> BalanceRule:
    """The balance check of SGLang `version` (module docstring); a release outside 0.5.0-0.5.23 follows the nearest."""
    v = _base(version)
    if v < Version("0.5.7"):
        return BalanceRule("ValueError", f"{OLD_DISABLE_VAR}=1",
                           "model_executor/model_runner.py init_torch_distributed")
    site = ("model_executor/model_runner.py init_torch_distributed" if v < Version("0.5.16")
            else "distributed/bootstrap.py _check_tp_memory_balance")
    return BalanceRule("RuntimeError", f"{ENABLE_VAR}=0", site)


def _truthy(value: str | None, default: bool) -> bool:
    if value is None:
        return default
    lowered = value.strip().lower()
    return True if lowered in _TRUE else False if lowered in _FALSE else default


def refuses(version: str, env: Mapping[str, str]) -> bool:
    """Whether SGLang `version` refuses to start on an unbalanced TP group under `env` (it warns otherwise)."""
    v = _base(version)
    if v < Version("0.5.7"):
        return (env.get(OLD_DISABLE_VAR) or "").strip().lower() not in ("true", "1")   # get_bool_env_var
    enabled = env.get(ENABLE_VAR)
    if v < Version("0.5.18") and env.get(OLD_DISABLE_VAR) is not None:
        enabled = env[OLD_DISABLE_VAR]              # copied over the new name as it is, not inverted
    if Version("0.5.18") <= v < Version("0.5.21") and env.get(DEPRECATED_DISABLE_VAR) is not None:
        return not _truthy(env[DEPRECATED_DISABLE_VAR], False)   # forwarded inverted, over the new name
    return _truthy(enabled, True)

