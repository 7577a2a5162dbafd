"""How the engines read an option's typed value, where it is not Python's own int() / float()."""

from __future__ import annotations

import re


def human_readable_int(text: str) -> int:
    """vLLM's --max-model-len reader (vllm/utils/argparse_utils.py human_readable_int, read in 0.32.0): 25.6k is
    25,600 (k m g t decimal), 1K is 1,024 (K M G T binary, whole numbers only), else a plain integer."""
    t = text.strip()
    if match := re.fullmatch(r"(\d+(?:\.\d+)?)([kmgt])", t):
        return int(float(match[1]) * 10 ** (3 * "kmgt".index(match[2]) + 3))
    if match := re.fullmatch(r"(\d+)([KMGT])", t):
        return int(match[1]) << (10 * ("KMGT".index(match[2]) + 1))
    return int(t)


AUTO_LENGTH = -1   # vLLM's --max-model-len auto / -1: fit the length to the KV cache (max_model_len == -1)
# The earliest release read with human_readable_int_or_auto (below; added by vllm-project/vllm#29431, "Add
# `--max-model-len auto`"): the floor a profile's backend_version must have for `max-model-len: auto`.
AUTO_LENGTH_SINCE = "0.17.0"


def human_readable_int_or_auto(text: str) -> int:
    """vLLM's --max-model-len reader (vllm/utils/argparse_utils.py human_readable_int_or_auto, in 0.17.0 in
    engine/arg_utils.py; read in 0.17.0, 0.20.1, 0.22.0, 0.26.0, 0.29.0-0.31.0, the 0.32.0 CPU build and 0.34.0):
    "-1" or "auto" (any case, after strip()) is -1, the auto-fit length; anything else as human_readable_int."""
    return AUTO_LENGTH if is_auto_length(text) else human_readable_int(text.strip())


def is_auto_length(text: str) -> bool:
    """Whether human_readable_int_or_auto reads `text` as the auto-fit length."""
    t = text.strip()
    return t == "-1" or t.lower() == "auto"
