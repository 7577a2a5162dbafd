"""The environment variables that steer CUDA, NCCL, Hugging Face, Ray, vLLM and SGLang (secrets redacted).

Redaction is linear in the values, so a huge value cannot hold the probe past its timeout; a value longer than
MAX_VALUE characters is kept as its redacted start plus a note of its length (a bundle stays small).
"""

from __future__ import annotations

import os
import re
from typing import Any

from doctor.redact import TRUNCATION_MARK, redact_env

MAX_VALUE = 16384
SELECTED = re.compile(
    r"^(CUDA_VISIBLE_DEVICES|CUDA_DEVICE_ORDER|CUDA_HOME|CUDA_LAUNCH_BLOCKING|NVIDIA_VISIBLE_DEVICES|"
    r"NVIDIA_DRIVER_CAPABILITIES|NCCL_.*|HF_.*|HUGGING_FACE_.*|TRANSFORMERS_.*|RAY_.*|VLLM_.*|SGLANG_.*|"
    r"PYTORCH_.*|TORCH_.*|OMP_NUM_THREADS|MASTER_ADDR|MASTER_PORT|GLOO_SOCKET_IFNAME|TP_SOCKET_IFNAME|"
    r"LD_LIBRARY_PATH|HTTPS?_PROXY|NO_PROXY|https?_proxy|no_proxy)$"
)


def probe(environ: dict[str, str] | None = None) -> dict[str, Any]:
    source = os.environ if environ is None else environ
    env = redact_env({k: v for k, v in sorted(source.items()) if SELECTED.match(k)})
    return {k: _bounded(v) for k, v in env.items()}


def _bounded(value: str) -> str:
    if len(value) <= MAX_VALUE:
        return value
    return f"{value[:MAX_VALUE]} {TRUNCATION_MARK} ({len(value)} characters)"
