"""Values a fix can state that the message does not print, computed only from the figures it does print.

Each derivation names the named groups it needs; the loader accepts a fix template field that is either a
named group of the entry's pattern or a derivation whose inputs all are. Nothing here guesses a figure:
a derivation whose inputs are missing or malformed yields nothing, and the step falls back to its generic
text.

Besides the message's own groups, a log figure (LOG_FIGURES) may feed a derivation: `model`, the model the
log's engine says it serves (`log_model`). Model-specific figures - Qwen3.5-35B-A3B's 67 GiB of BF16 weights,
its 16 attention heads - are written as template steps on `qwen35`, which exists only when the log names that
model, so a Llama or GLM log gets the generic wording.
"""

from __future__ import annotations

import math
import re
from functools import lru_cache
from typing import Callable, Iterable, Mapping

BLOCK = 16  # vLLM's default KV block size (tokens); a length that fits is rounded down to it.
MARGIN = 0.02  # utilisation left unclaimed under the free share, for the allocator and CUDA context


def _fit_len(v: Mapping[str, str]) -> str:
    """The longest request the KV budget holds: the logged length scaled by available / needed GiB."""
    length, needed, available = int(v["max_len"]), float(v["needed_gib"]), float(v["available_gib"])
    if needed <= 0 or available <= 0:
        raise ValueError("non-positive memory")
    return str(min(length, int(length * available / needed) // BLOCK * BLOCK))


def _fit_tokens(v: Mapping[str, str]) -> str:
    """The KV capacity in tokens rounded down to a block."""
    return str(int(v["kv_tokens"]) // BLOCK * BLOCK)


def _fit_util(v: Mapping[str, str]) -> str:
    """A --gpu-memory-utilization under the free share of the GPU (free / total, minus a margin)."""
    free, total = float(v["free_gib"]), float(v["total_gib"])
    share = math.floor((free / total - MARGIN) * 100) / 100
    if not 0 < share < 1:
        raise ValueError("no usable share")
    return f"{share:.2f}"


def _tp_choices(v: Mapping[str, str]) -> str:
    """Tensor-parallel sizes up to 16 that divide the logged head count."""
    heads = int(v["heads"])
    sizes = [n for n in range(1, 17) if heads % n == 0]
    return ", ".join(map(str, sizes))


def _lower_seqs(v: Mapping[str, str]) -> str:
    """Half the sequence count that ran out of memory (the sampler warm-up allocates per sequence)."""
    return str(max(1, int(v["seqs"]) // 2))


QWEN35 = re.compile(r"Qwen3\.[56]-35B-A3B(?:-FP8)?")
# Where the engines print the model they serve: vLLM's non-default args and engine config, SGLang's server args.
MODEL_LINES = re.compile(r"""(?:'model': |model=|model_path=)'(?P<model>[^'\s]{1,300})'""")
LOG_FIGURES = frozenset({"model"})


def _qwen35(v: Mapping[str, str]) -> str:
    """The log's model when it is Qwen3.5 / 3.6-35B-A3B (the model the model-specific figures are for)."""
    found = QWEN35.search(v["model"])
    if not found:
        raise ValueError("another model")
    return found.group(0)


def log_model(lines: Iterable[str]) -> str | None:
    """The model a log's engine says it serves (the first one named), or None; kept per log head, which every
    finding that states model figures reads."""
    return _model_in(lines if isinstance(lines, tuple) else tuple(lines))


@lru_cache(maxsize=8)
def _model_in(lines: tuple[str, ...]) -> str | None:
    for line in lines:
        hit = MODEL_LINES.search(line[:8192])
        if hit:
            return hit.group("model")
    return None


DERIVED: dict[str, tuple[tuple[str, ...], Callable[[Mapping[str, str]], str]]] = {
    "qwen35": (("model",), _qwen35),
    "fit_len": (("max_len", "needed_gib", "available_gib"), _fit_len),
    "fit_tokens": (("kv_tokens",), _fit_tokens),
    "fit_util": (("free_gib", "total_gib"), _fit_util),
    "tp_choices": (("heads",), _tp_choices),
    "lower_seqs": (("seqs",), _lower_seqs),
}


def derivable(groups: set[str]) -> set[str]:
    """The derived fields available to a pattern with these named groups (log figures are always offered)."""
    return {name for name, (needs, _) in DERIVED.items() if set(needs) <= groups | LOG_FIGURES}


def uses_log_figures(fields: Iterable[str]) -> bool:
    """Whether template fields need a log figure (so the log must be read to render them)."""
    return any(set(DERIVED[name][0]) & LOG_FIGURES for name in fields if name in DERIVED)


def derive(values: Mapping[str, str]) -> dict[str, str]:
    """The captured values plus every derivation whose inputs were captured (a captured field wins)."""
    known = {k: v for k, v in values.items() if v}
    for name, (needs, compute) in DERIVED.items():
        if name in known or not all(known.get(n) for n in needs):
            continue
        try:
            known[name] = compute(known)
        except (ValueError, ZeroDivisionError, OverflowError):
            continue
    return known
