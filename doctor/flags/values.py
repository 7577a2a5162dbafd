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
