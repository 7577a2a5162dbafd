"""A CPU-only torch shipped in an image: the image's packaging bug, named beside QD-R-TORCH-CPU-ONLY-BUILD.

torch's CPU wheels have no libtorch_cuda.so / libc10_cuda.so and refuse CUDA with "Torch not compiled with CUDA
enabled" (pytorch torch/cuda/__init__.py _lazy_init). Whose fault that is depends on where the torch was loaded
from: a user's own environment (a virtualenv, a conda env, a home directory) is the user's install to redo; an
image's system interpreter (/usr/local/lib/python3.x/dist-packages, /usr/lib/python3/dist-packages, /opt/, /app/)
or a "+cpu" torch in a wrapper's runner was put there by whoever built the image.
"""

from __future__ import annotations

import re
from typing import Iterable

PACKAGED_ENTRIES = ("QD-R-TORCH-CPU-ONLY-BUILD",)
_TORCH_PATH = re.compile(r"(?P<path>(?:/[\w.+-]{1,100}){1,12})/torch/")
_USER_ENV = re.compile(r"(?i)/(?:home|Users|root)/|/venv|/\.venv|/env/|/envs/|conda|pyenv|/\.local/")
_IMAGE_ENV = re.compile(r"^/(?:usr/(?:local/)?lib/python3[\d.]{0,5}/(?:site|dist)-packages|usr/lib/python3/dist-packages"
                        r"|opt/|app/|workspace/)")
_CPU_BUILD = re.compile(r"\b(?:torch[= ]{1,3}|torch version:? ?)\d+\.\d+(?:\.\d+)?\+cpu\b")
MAX_LINES = 4000


def image_torch(lines: Iterable[str]) -> str | None:
    """Where the log shows the CPU-only torch came with an image (its path or its "+cpu" version), or None."""
    for count, line in enumerate(lines):
        if count >= MAX_LINES:
            break
        cpu = _CPU_BUILD.search(line[:4096])
        if cpu is not None:
            return f"the log shows a CPU build, {cpu.group(0)}"
        for found in _TORCH_PATH.finditer(line[:4096]):
            path = found.group("path")
            if _IMAGE_ENV.search(path) and not _USER_ENV.search(path):
                return f"torch was loaded from the image's interpreter, {path}/torch"
    return None


REASON = ("The CPU-only torch came with the image the engine runs in, not with an install of the user's: the "
          "image was built with torch's CPU wheel, its packaging bug.")
